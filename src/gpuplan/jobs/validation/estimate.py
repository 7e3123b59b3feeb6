"""``gpuplan validate``: run the estimators over the packaged reference set and report errors.

Kinds of quantity (each a row of the summary table):
  * gpu_hours (given reported throughput): the run's own reported throughput / TFLOP/s / MFU
    is turned into an MFU and fed to the training estimate; tests the FLOPs and time formulas.
  * gpu_hours (default MFU prior): nothing run-specific but model, tokens and GPU type; uses
    gpuplan's default MFU (0.40). Measures how far the un-calibrated prior is from reality.
Error = (predicted - measured) / measured; the summary shows mean and max |error|.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean
from typing import Any

from gpuplan.adapters.resolve import resolve_gpu, resolve_model
from gpuplan.catalog import reference_runs
from gpuplan.core.model import flops as F
from gpuplan.core.economics.gpu_time import solve_compute_budget
from gpuplan.core.model.spec import params_for_6nd
from gpuplan.jobs.training.schema import DEFAULT_MFU, TrainingInputs
from gpuplan.jobs.training.timing import count_flops
from gpuplan.jobs.validation.gpu_hours import (FITTED_RUNS, KIND_BUDGET, end_to_end_and_budget,
                                                end_to_end_split_table, predicted_sets_table)
from gpuplan.report.model import Report, Table

KIND_GIVEN = "gpu_hours (given reported throughput)"
KIND_PRIOR = "gpu_hours (default MFU 0.40)"
KIND_PREDICTED = "gpu_hours (--mfu predicted: the planner's layout on the run's GPUs)"
KIND_END_TO_END = ("gpu_hours (train --mfu predicted, end to end: the run's batch and ramp, checkpoints, failures; "
                   "{role})")
KIND_MEMORY_PEAK = "memory: allocated peak vs gpuplan measure"
KIND_MEMORY_ACT = "memory: activations (end of forward) vs gpuplan measure"


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    measured: float
    predicted: float
    basis: str
    note: str = ""

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured


def implied_mfu(run: dict[str, Any]) -> tuple[float, str] | None:
    """MFU (6ND model FLOPs, as gpuplan's default time estimate counts them) implied by what
    the run reported; None when it reported no efficiency figure."""
    spec = resolve_model(run.get("model"), run.get("params"))
    peak = resolve_gpu(run["gpu"]).peak(run.get("dtype", "bf16"))
    n = params_for_6nd(spec) if "params" not in run else float(run["params"])
    if "tokens_per_gpu_s" in run:
        return 6 * n * run["tokens_per_gpu_s"] / peak, f"{run['tokens_per_gpu_s']} tokens/s/GPU"
    if "tflops_per_gpu" in run:
        achieved = run["tflops_per_gpu"] * 1e12
        if run.get("tflops_count") == "hardware":  # strip recompute FLOPs: model/hardware ratio
            per_token = F.training_flops_per_token(spec, 2048, recompute=run.get("recompute", "none"))
            achieved *= per_token.model / per_token.hardware
        return achieved / peak, f"{run['tflops_per_gpu']} TFLOP/s/GPU ({run.get('tflops_count', 'model')})"
    if "mfu" in run:
        return float(run["mfu"]), f"MFU {run['mfu']} ({run.get('mfu_flops', '6nd')})"
    return None


def _predict_gpu_hours(run: dict[str, Any], mfu: float) -> float:
    """GPU-hours of the training estimate's time formula (6ND at ``mfu``; the layout is not needed)."""
    inputs = TrainingInputs(tokens=float(run["tokens"]), gpu=run["gpu"], model=run.get("model"),
                            params=run.get("params"), gpus=int(run.get("gpus", 1024)), mfu=mfu,
                            dtype=run.get("dtype", "bf16"))
    flops = count_flops(inputs.spec(), inputs, "none").used
    peak = resolve_gpu(inputs.gpu).peak(inputs.dtype)
    return solve_compute_budget(flops, peak, gpus=inputs.gpus, mfu=mfu).gpu_hours


def validation_cases() -> list[Case]:
    cases = []
    for run in reference_runs()["runs"]:
        measured = float(run["measured_gpu_hours"])
        note = run.get("notes", "")
        given = implied_mfu(run)
        if given is not None:
            mfu, basis = given
            cases.append(Case(run["id"], KIND_GIVEN, measured, _predict_gpu_hours(run, mfu),
                              f"{basis} -> MFU {mfu:.3f}", note))
        cases.append(Case(run["id"], KIND_PRIOR, measured, _predict_gpu_hours(run, DEFAULT_MFU),
                          "MFU 0.40", note))
        predicted = _planned_gpu_hours(run)
        if predicted is not None:
            cases.append(Case(run["id"], KIND_PREDICTED, measured, predicted[0], predicted[1], note))
        if (both := end_to_end_and_budget(run)) is not None:
            role = "fitted: its census set the failure rate" if run["id"] in FITTED_RUNS else "held out"
            cases += [Case(run["id"], kind.format(role=role), measured, *hours, note)
                      for kind, hours in zip((KIND_END_TO_END, KIND_BUDGET), both) if hours is not None]
    return cases


def _planned_gpu_hours(run: dict[str, Any]) -> tuple[float, str] | None:
    """GPU-hours of ``train --mfu predicted`` on the run's GPU count (runs that state one): the
    planner's best layout and the step model, as a user would get them, given what the run's
    source states about its shape (sequence length, global batch) and, where it states them, its
    recompute, attention kernel, network, framework and MoE all-to-all (training_runs.yaml); None
    without a count."""
    if "gpus" not in run:
        return None
    from gpuplan.jobs.training.estimate import estimate_training

    batch = {"global_batch": int(run["global_batch"])} if "global_batch" in run else {}
    stated = {k: run[k] for k in ("recompute", "attention_kernel", "nic_gbit_per_gpu", "framework", "implementation",
                                  "ep_a2a_overlap", "ep_dispatcher") if k in run}
    inputs = TrainingInputs(tokens=float(run["tokens"]), gpu=run["gpu"], model=run.get("model"),
                            params=run.get("params"), gpus=int(run["gpus"]), mfu="predicted",
                            dtype=run.get("dtype", "bf16"), seq_len=int(run.get("seq_len", 2048)), **batch, **stated)
    report = estimate_training(inputs)
    return report.value("gpu_hours"), f"predicted MFU {report.value('mfu'):.3f}"


def memory_validation_cases() -> list[Case]:
    """Estimate vs the packaged `gpuplan measure` matrix (implementation 'hf')."""
    from gpuplan.jobs.validation.memory import memory_cases

    kinds = {"peak": KIND_MEMORY_PEAK, "activations": KIND_MEMORY_ACT}
    return [Case(c.id, kinds[c.quantity], c.measured, c.estimated, c.method) for c in memory_cases()]


def throughput_validation_cases() -> list[Case]:
    """Predicted MFU / hardware TFLOP/s of published runs, per source family (core/time/step.py)."""
    from gpuplan.jobs.validation.throughput import throughput_cases

    out = []
    for c in throughput_cases():
        group = c.family + (" FP8" if "fp8" in c.id else "")
        if "zero3" in c.id:  # DeepSpeed's ZeRO-3 overlap was fitted on the 174B rows (core/frameworks.py)
            group = c.family + " ZeRO-3 (DeepSpeed 2021) " + ("174B" if "174b" in c.id else "529B")
        fitted = (c.family == "llm-foundry" and "fp8" not in c.id) or "zero3-174b" in c.id
        held = "fitted" if fitted else "held out"
        out.append(Case(c.id, f"throughput: {group} ({held})", c.measured, c.predicted, c.quantity))
    return out


PRECISION_LABEL = {"fp8": "FP8", "fp4": "NVFP4"}
"""How a published family names its step-model dtype (band.py groups FP8 and NVFP4 as low precision)."""


def throughput_family(family: str, moe: bool, precision: str) -> str:
    """docs/accuracy.md's family of a published tokens/s row (its validation kind without 'throughput: ' and
    ' (held out)'): source, hardware, dense / MoE and ``precision``, the step model's dtype ('fp8', 'fp4', 'bf16')."""
    source = "torchtitan" if family.startswith("torchtitan") else "NeMo/Megatron-Bridge"
    hardware = ("Blackwell Ultra GB300" if "gb300" in family else
                "Blackwell" if any(g in family for g in ("b200", "b300", "gb200")) else "Hopper")
    return f"{source} {hardware} {'MoE' if moe else 'dense'} {PRECISION_LABEL.get(precision, 'BF16')}"


def published_throughput_validation() -> tuple[list[Case], list[tuple[str, str]]]:
    """Tokens/s/GPU of recent published runs (NeMo / Megatron-Bridge, torchtitan), all held out."""
    from gpuplan.jobs.validation.published_throughput import newest_releases, published_throughput_cases

    cases, excluded = published_throughput_cases()
    newest = newest_releases(cases)
    out = []
    for c in cases:
        kind = f"throughput: {throughput_family(c.family, c.moe, c.precision)} (held out)"
        note = c.family + (f"; {c.note}" if c.note else "")
        out.append(Case(c.id, kind, c.measured, c.predicted, "tokens/s/GPU", note))
        if c.id in newest:  # the same row again, in the newest-release view of its family
            out.append(Case(c.id, kind.replace("(held out)", "newest release (held out)"), c.measured, c.predicted,
                            "tokens/s/GPU", note))
    return out, excluded


def fp8_recipe_cases(published: list[Case]) -> list[Case]:
    """FP8-CS / MXFP8 tokens/s of configurations published with both recipes: the fit of
    core.time.step.BLOCK_SCALED_GEMM_TIME_FACTOR (25.09 dense, same layout) and the held-out pairs;
    the predictions are those of the ``published`` throughput cases."""
    from gpuplan.jobs.validation.fp8_recipes import recipe_pairs

    predicted = {c.id: c.predicted for c in published}
    out = []
    for p in recipe_pairs():
        held = "fitted" if p.in_fit_subset else "held out"
        layout = "same layout" if p.same_layout else "layouts differ: the layout model's error too"
        ratio = predicted[p.tensorwise["id"]] / predicted[p.id]
        out.append(Case(p.id, f"throughput: FP8-CS / MXFP8 tokens/s ratio, one configuration ({held}, {layout})",
                        p.measured_ratio, ratio, "ratio", "MoE" if p.moe else "dense"))
    return out


def inference_validation() -> tuple[list[Case], list[tuple[str, str]]]:
    """Inference cases (KV capacity, weights, decode speed) and their exclusions."""
    from gpuplan.jobs.validation.inference import (
        inference_excluded,
        inference_validation_cases,
    )

    return [Case(*c) for c in inference_validation_cases()], list(inference_excluded())


def framework_validation_cases() -> list[Case]:
    """Each framework profile against fake-tensor runs of that framework's own code (modelled runs)."""
    from gpuplan.jobs.validation.frameworks import framework_cases

    return [Case(c.id, f"memory: --framework {c.profile} vs its own code (allocated peak)", c.measured,
                 c.estimated, "fake-tensor run of the framework's code", c.note)
            for c in framework_cases() if c.modelled]


def published_memory_cases() -> list[Case]:
    """Published real-GPU memory figures (scored only), compared in the unit each source reports."""
    from gpuplan.jobs.validation.published_memory import published_cases

    return [Case(c.id, f"memory: published {c.framework} runs ({'allocated' if c.kind == 'allocated' else 'reserved or unstated'})",
                 c.measured, c.estimated, f"source reports {c.kind}", c.note)
            for c in published_cases() if c.estimated is not None]


def communication_cases() -> list[Case]:
    """Measured collective busbw by payload against core/comm/collectives.py (jobs/validation/collectives.py)."""
    from gpuplan.jobs.validation.collectives import collective_cases

    return [Case(c.id, c.kind, c.measured, c.predicted, f"busbw, {c.algorithm}", c.source) for c in collective_cases()]


def planner_cases() -> list[Case]:
    """The planner's own choice against the best published run of its group (jobs/validation/planner_choice.py):
    the whole error, and its two factors — the model at the published layout, the planner's predicted advantage.
    Groups whose batch is not published (layout_stated False) have a line of their own and no other. torchtitan's
    groups also against other runs carried by the step model's ratio (planner_carried.KIND_CARRIED)."""
    from gpuplan.jobs.validation.planner_carried import carried_cases
    from gpuplan.jobs.validation.planner_choice import DEGREES_ONLY_LINE, DEGREES_ONLY_NOTE, planner_choice_cases

    out = []
    for c in planner_choice_cases():
        kind, basis = f"planner: its own choice vs the best published run ({c.framework})", f"tokens/s/GPU, {c.layout}"
        if not c.layout_stated:  # planner_choice.degrees_only_groups: no run batch, no timed published layout
            out.append(Case(c.id, f"{kind[:-1]}, {DEGREES_ONLY_LINE})", c.measured, c.planned, basis,
                            DEGREES_ONLY_NOTE))
            continue
        out.append(Case(c.id, kind, c.measured, c.planned, basis))
        if c.framework == "torchtitan":  # by what the published layout was for (demonstrates_a_layout_feature)
            part = ("groups whose published layout demonstrates async TP or a pipeline schedule" if c.demonstration
                    else "the other groups")
            out.append(Case(c.id, f"{kind[:-1]}, {part})", c.measured, c.planned, basis))
        out.append(Case(c.id, "planner: the planner's predicted advantage over the best published layout "
                        f"({c.framework})", c.at_published, c.planned, "tokens/s/GPU, predicted vs predicted"))
        out.append(Case(c.id, "planner: its own choice vs the best published run of the same model, GPU type and "
                        f"precision at any GPU count ({c.framework})", c.best_any_count, c.planned, basis))
    return out + [Case(*case) for case in carried_cases()]  # torchtitan's groups against carried runs too


def allocator_cases() -> list[Case]:
    from gpuplan.core.memory.device_memory import FRAGMENTATION_DEFAULT_SEGMENTS
    from gpuplan.jobs.validation.allocator import allocator_rows

    return [Case(r.id, "memory: allocator reserved peak (held-out Megatron logs)", r.max_reserved_mib * 2**20,
                 r.max_allocated_mib * 2**20 * (1 + FRAGMENTATION_DEFAULT_SEGMENTS), "logged max allocated x "
                 f"{1 + FRAGMENTATION_DEFAULT_SEGMENTS:.2f}", r.source) for r in allocator_rows() if r.role == "held-out"]


def _framework_tables() -> tuple[Table, ...]:
    from gpuplan.jobs.validation.allocator import allocator_table
    from gpuplan.jobs.validation.frameworks import framework_cases
    from gpuplan.jobs.validation.published_memory import published_cases

    gib = 2**30
    runs = tuple((c.id, c.profile, f"{c.measured / gib:.2f}", f"{c.estimated / gib:.2f}", f"{c.error:+.1%}",
                  "scored" if c.modelled else "not scored", c.note) for c in framework_cases())
    published = tuple((c.id, c.framework, c.kind, f"{c.measured / gib:.2f}",
                       "" if c.estimated is None else f"{c.estimated / gib:.2f}",
                       "" if c.error is None else f"{c.error:+.1%}", c.note) for c in published_cases())
    return (Table("framework profiles vs fake-tensor runs of the frameworks' own code (GiB, allocated)",
                  ("run", "profile", "measured", "gpuplan", "error", "status", "note"), runs),
            Table("published real-GPU memory (GiB; scored only, no constant chosen from them)",
                  ("run", "framework", "reported", "figure", "gpuplan (same kind)", "error", "note"), published),
            allocator_table())


def _gpu_step_cases() -> list[Case]:
    from gpuplan.jobs.validation.gpu_runs import gpu_step_rows

    return [Case(i, kind, measured, predicted, "s" if kind.startswith("step") else "bytes", gpu)
            for i, kind, measured, predicted, gpu in gpu_step_rows()]


def validation_report() -> Report:
    inference_cases, inference_excluded = inference_validation()
    published, published_excluded = published_throughput_validation()
    cases = (validation_cases() + memory_validation_cases() + framework_validation_cases() + published_memory_cases()
             + allocator_cases() + throughput_validation_cases() + published + fp8_recipe_cases(published) + inference_cases
             + communication_cases() + planner_cases() + _gpu_step_cases())
    kinds = sorted({c.kind for c in cases})
    summary = []
    for kind in kinds:
        errors = [c.error for c in cases if c.kind == kind]
        summary.append((kind, len(errors), f"{mean(map(abs, errors)):.1%}", f"{max(map(abs, errors)):.1%}",
                        f"{mean(errors):+.1%}"))
    rows = tuple((c.id, c.kind, _amount(c), _amount(c, predicted=True), f"{c.error:+.1%}", c.basis, c.note)
                 for c in cases)
    excluded = tuple((e["id"], e["reason"]) for e in reference_runs().get("excluded", [])) + tuple(
        tuple(x) for x in inference_excluded) + tuple(published_excluded) + tuple(_collective_excluded())
    return Report(
        "validate", "Accuracy against published runs", (), (), (),
        notes=("error = (predicted - measured) / measured; mean and max are of |error|, bias the mean signed error",),
        tables=(Table("summary", ("kind", "cases", "mean abs error", "max abs error", "bias"), tuple(summary)),
                end_to_end_split_table(*([c for c in cases if c.kind == k.format(role="held out")] for k in (KIND_END_TO_END, KIND_BUDGET))),
                predicted_sets_table([c for c in cases if c.kind == KIND_PREDICTED]),
                Table("cases", ("run", "kind", "measured", "predicted", "error", "basis", "note"), rows),
                *_framework_tables(), _fit_rule_table(),
                Table("excluded", ("run", "reason"), excluded)))


def _collective_excluded() -> list[tuple[str, str]]:
    from gpuplan.jobs.validation.collectives import collective_excluded

    return collective_excluded()


def _fit_rule_table() -> Table:
    """How many published layouts (runs that trained) gpuplan's fit rule refuses (published_fits.py)."""
    from gpuplan.jobs.validation.published_fits import fit_checks, fit_table_rows

    return Table("fit rule on the published layouts: runs that trained, refused by gpuplan's memory (NeMo / "
                 "Megatron-Bridge by GPU, torchtitan)", ("GPU / source", "layouts", "refused",
                                                         "median excess of the refused"), fit_table_rows(fit_checks()))


def _amount(case: Case, predicted: bool = False) -> str:
    value = case.predicted if predicted else case.measured
    if case.basis == "ratio":
        return f"{value:.3f}"
    if case.kind.startswith(("memory", "inference: weights", "inference: non-KV")):
        return f"{value / 2**30:.2f} GiB"
    if case.kind.startswith("inference: batch latency"):
        return f"{value:.2f} s"
    if case.kind.startswith(("inference: time to first token", "inference: time per output token")):
        return f"{value * 1e3:.1f} ms"
    if case.kind.startswith("inference: batch-1 decode"):
        return f"{value:.1f}"
    if case.kind.startswith("inference: speculative"):
        return f"{value:.2f}x"
    if case.kind.startswith("communication"):
        return f"{value / 1e9:,.2f} GB/s"
    if case.kind.startswith(("throughput", "planner")):
        return f"{value:.3f}" if value < 1 else f"{value:,.0f}" if value >= 100 else f"{value:.1f}"
    return f"{value:,.0f}"


def accuracy_markdown(report: Report) -> str:
    """docs/accuracy.md, generated by ``gpuplan validate --out docs/accuracy.md``."""
    from gpuplan.report.render import table_markdown

    out = ["# Accuracy", "",
           "Generated by `gpuplan validate --out docs/accuracy.md`; do not edit by hand.",
           "Reference set: `src/gpuplan/catalog/reference/training_runs.yaml` (each run cites its source).",
           "Error = (predicted - measured) / measured. GPU-hours kinds:",
           "",
           "- *given reported throughput*: the run's own reported tokens/s, TFLOP/s or MFU becomes the MFU",
           "  of the estimate; checks the FLOPs and time formulas (remaining error = downtime, restarts,",
           "  averaging, and FLOPs-convention differences).",
           "- *default MFU 0.40*: nothing but model, tokens and GPU type; shows how far the un-calibrated",
           "  prior is from real runs (small models run at lower MFU; calibrate from a trial run).",
           "",
           "Memory kinds: the analytic estimate (implementation `hf`) against `gpuplan measure` (FakeTensorMode +",
           "MemTracker running the real transformers model: forward, backward, AdamW step, two steps) over the",
           "matrix in `src/gpuplan/catalog/reference/memory_measurements.yaml` (regenerate with",
           "`python scripts/measure_memory_matrix.py`): *allocated peak* of the step and *activations* held at",
           "the end of forward. Goal: mean <= 3%, max <= 8% on the peak.",
           "",
           "Framework kinds (issue 14): each `--framework` profile (torchtitan, megatron, hf) against",
           "`scripts/measure_frameworks.py` — the framework's own model, parallelisation, optimizer and loss",
           "code run on a CPU under fake tensors and a fake process group",
           "(`src/gpuplan/catalog/reference/framework_measurements.yaml`; configurations in its table below).",
           "Goal: allocated peak mean <= 2%, max <= 5% per profile (met by all three; runs whose setting",
           "gpuplan has no input for are listed as *not scored*; docs/memory.md).",
           "*Published* kinds: real-GPU figures quoted from framework docs, CI and issue threads",
           "(`published_memory.yaml`), compared in the unit each reports (reserved vs gpuplan's reserved, which",
           "adds FSDP2's side-stream pools on torchtitan's rows (docs/memory.md); allocated vs allocated);",
           "scored only. The allocator kind: Megatron logs printing both peaks (`allocator_ratios.yaml`); its",
           "`fit` rows set the reserve constant, the held-out rows are scored.",
           "",
           "Published throughput kinds (issue 15): tokens/s/GPU of recent runs at their exact layouts",
           "(`published_throughput.yaml`: NeMo / Megatron-Bridge performance summaries on H100, B200, B300, GB200",
           "and GB300 NVL72, torchtitan benchmarks on H100/H200; dense and MoE, BF16, FP8 and NVFP4). All held out but",
           "one ratio: MXFP8's GEMM-time factor (core/time/step.py) was fitted on the FP8-CS / MXFP8 tokens/s ratio of",
           "the three 25.09 dense configurations published with both recipes at one layout (the *FP8-CS / MXFP8",
           "ratio* kind; every other pair is held out). MoE rows are force-balanced upper bounds whose published figures move",
           "by up to 2x between releases of the same layout; each Megatron-Bridge MoE row carries the dispatcher",
           "and 1F1B all-to-all overlap its release's recipe ran with (`moe_comm`, read at the release tag;",
           "core/comm/moe_overlap.py). FP8 rowwise and incomplete rows are excluded.",
           "",
           "Throughput kinds: the step-time model (core/time/step.py) predicts each published run's MFU (llm-foundry,",
           "IBM: their own formula 6N + 12·L·h·s per token) or hardware TFLOP/s (Megatron 2021: eq. 3 with",
           "recompute) from its layout. Its three fitted constants were fitted on the llm-foundry BF16 rows",
           "(marked *fitted*); the other families are *held out*. DeepSpeed ZeRO-3 (2021): the deepspeed",
           "profile's parameter re-gathers under recompute come from its code, its overlap (0.30) was fitted on",
           "the 174B rows (*fitted*), the 529B rows are held out (docs/step.md). Goal: mean <= 10%, max <= 25%.",
           "",
           "Inference kinds: KV-cache capacity and weights per GPU against serving-engine logs, decode speed",
           "against published measurements (`src/gpuplan/catalog/reference/inference_measurements.yaml`; every",
           "case quotes its GitHub issue or PR; see docs/inference.md).",
           "",
           "Communication kinds: all-reduce, all-gather and reduce-scatter bus bandwidth by payload on H100, H200,",
           "B200 and GB200 NVL72, 1 to 20 nodes / racks (`src/gpuplan/catalog/reference/collective_measurements.yaml`:",
           "nccl-tests logs of CoreWeave, GCP A3 Mega, NVIDIA/nccl#1801, stas00/ml-engineering; stas00's torch",
           "all_reduce_bench sweeps as their own kind), against core/comm/collectives.py (NCCL's algorithms and",
           "protocols by size, its own latency constants, NVLS's pipeline fill) on core/comm/topology.py's cluster;",
           "held out but the one-node torch sweep, which sets that benchmark's per-call launch time (*fitted*); the",
           "per-generation NVLink efficiency and NVLS gain come from two other sources (docs/step.md). A sweep run",
           "under a net / tuner plugin takes the plugin's published latency and choice (AWS's aws-ofi-nccl on P6-B200);",
           "points a sweep's own data rule out are listed under *excluded* with the reason. An all-to-all (one NVLink",
           "domain) is one link latency a p2p batch + a call cost, NCCL's ring base latency 6.6 / 8.4 us, a pairing",
           "chosen with the < 16 MiB points' floor known, as that kind's label says (p2p_schedule.py, docs/step.md).",
           ""]
    for table in report.tables:
        out += table_markdown(table)
    return "\n".join(out)
