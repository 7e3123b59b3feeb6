"""Per-GPU training memory: the Python API behind ``gpuplan memory`` (and train's memory section).

``estimate_memory(MemoryInputs(...))`` returns a Report: the recipe's bytes per parameter, the
worst GPU's peak by category and phase, overheads and the safety margin, a fits / does-not-fit
verdict per GPU type with the largest micro-batch that fits, and — when it does not fit — the
cheapest single changes that would (the article's rule: a shortfall is met first with ZeRO-3 or
recomputation; headroom goes to a bigger micro-batch).
"""

from __future__ import annotations

from dataclasses import replace

from gpuplan.adapters.resolve import resolve_gpu
from gpuplan.core import frameworks as F
from gpuplan.core.memory import training as M
from gpuplan.core.memory.llmc_memory import CUDAMALLOC_ONCE, peak_labels
from gpuplan.core.memory.micro_batch_fit import (largest_allowed_fitting, largest_fitting, largest_micro_batch,
                                              micro_batches_allowed)
from gpuplan.core.hardware import Accelerator
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.parallel import ParallelLayout, check_layout
from gpuplan.core.precision import check_recipe_runs_on
from gpuplan.core.units import format_bytes
from gpuplan.errors import InputError
from gpuplan.jobs.calibrated_plan import check_calibrated_memory
from gpuplan.schema.precision_rules import check_dtype_runs_on, dtype_text
from gpuplan.schema.shard_group import shard_group_assumption
from gpuplan.jobs.memory.assumptions import (
    compile_memory_assumption,
    memory_assumptions,
    recipe_fact_assumptions,
    recipe_of,
)
from gpuplan.jobs.memory.batch_note import batch_line, batch_note
from gpuplan.jobs.calibration_notice import with_calibration_warning
from gpuplan.jobs.memory.calibrated import calibrated
from gpuplan.jobs.memory.schema import MemoryInputs
from gpuplan.planner.framework_rules import optimizer_zero_stages, rules_for, sequence_split_runs
from gpuplan.report.model import Line, Report, Section, Table
from gpuplan.schema import tpu_rules as X
from gpuplan.schema.tpu_rules import in_device_words  # by name, as train / budget / plan import it (review w17 N6)
from gpuplan.schema.base import job_inputs

GiB = 2**30


def resolve_layout(spec: ModelSpec, inputs: MemoryInputs) -> ParallelLayout:
    """The inputs' layout (dp derived from ``gpus`` when given), every constraint checked."""
    layout = inputs.layout()
    check_layout(spec, layout, inputs.gpus, inputs.seq_len, framework=inputs.framework,
                 kv_subsharding=rules_for(inputs.framework).kv_subsharding)
    return layout


def _validate_settings(settings: M.MemorySettings) -> None:
    M.lookup(M.RECIPES, settings.recipe, "recipe")
    M.lookup(M.OPTIMIZERS, settings.optimizer, "optimizer")
    choices = {"implementation": ("hf", "megatron", "megatron-local", "torchtitan", "llmc"), "attention_kernel": ("flash", "eager"),
               "recompute": ("none", "selective", "full"), "finetune": ("full", "lora", "qlora")}
    for name, valid in choices.items():
        if getattr(settings, name) not in valid:
            raise InputError(name, getattr(settings, name), f"must be one of {', '.join(valid)}")
    if settings.seq_len < 1:
        raise InputError("seq_len", settings.seq_len, "must be a positive integer")
    if settings.dropout is not None and not 0 <= settings.dropout < 1:
        raise InputError("dropout", settings.dropout, "must be in [0, 1)")


def framework_gap(spec: ModelSpec, layout: ParallelLayout, settings: M.MemorySettings, overheads: M.Overheads) -> float:
    """Bytes the fit rule keeps free for the framework's published memory gap, as `plan` keeps them
    (planner.framework_rules published_reserve at the worst pipeline stage: core.memory.training.
    peak_and_framework_gap)."""
    rules = rules_for(settings.framework)
    return float(M.peak_and_framework_gap(spec, layout, settings, overheads, rules.published_reserve,
                                          rules.fsdp2_stream_pools)[1])


def _fits(spec, layout, settings, overheads, gpu, peaks: dict | None = None) -> tuple[bool, float, float]:
    """(fits, allocated peak, headroom bytes) under the fit rule: reserved + runtime + the
    framework's gap <= capacity x (1 - margin). ``peaks``: allocated peaks already computed, by
    (layout, settings) (the peak does not depend on the GPU: the verdict table asks it per GPU)."""
    if peaks is None:
        peak = M.peak_memory(spec, layout, settings).allocated
    else:
        peak = peaks.get((layout, settings))
        if peak is None:
            peak = peaks[(layout, settings)] = M.peak_memory(spec, layout, settings).allocated
    headroom = (overheads.budget_bytes(gpu.memory_bytes) - overheads.device_bytes(peak, layout)
                - framework_gap(spec, layout, settings, overheads))
    return headroom >= 0, peak, headroom


def verdict(spec: ModelSpec, layout: ParallelLayout, settings: M.MemorySettings, overheads: M.Overheads,
            gpu: Accelerator, peaks: dict | None = None) -> tuple[bool, float, int]:
    """(fits, headroom bytes, largest micro-batch) on ``gpu`` (``peaks``: as _fits)."""
    fits, _, headroom = _fits(spec, layout, settings, overheads, gpu, peaks)
    # bisected over the micro-batches the layout accepts (core.memory.micro_batch_fit: with a global batch the
    # divisors of global_batch / dp, where fitting is monotone but for the largest, largest_allowed_fitting; review
    # w14 R2 M2), one search each: one step down at a time took 4,663 fits, 2.3 s, for `memory --pp 8
    # --global-batch 8 --framework torchtitan` (w15). Without a global batch up to the peak-only guess
    # (largest_micro_batch: the integers have no end); with one, the divisors themselves, on the fit rule.
    allowed = micro_batches_allowed(layout)
    if allowed is None:
        candidates, search = range(1, largest_micro_batch(spec, layout, settings, M.usable_bytes(
            gpu.memory_bytes, overheads, layout)) + 1), largest_fitting
    else:
        candidates, search = allowed, largest_allowed_fitting
    # only micro-batches the framework runs on this layout: torchtitan's sequence split counts micro_batch x seq_len
    # (planner.framework_rules.sequence_split_runs; review w14 R3 M1: tp 8 at seq 4,100 printed 11, which it refuses)
    runs = [mb for mb in candidates if sequence_split_runs(settings.framework, layout.sequence_parallel, tp=layout.tp,
                                                           cp=layout.cp, seq_len=settings.seq_len, micro_batch=mb)]
    best = search(runs, lambda mb: _fits(spec, replace(layout, micro_batch=mb), settings, overheads, gpu, peaks)[0])
    return fits, headroom, best


def _candidate_changes(spec: ModelSpec, layout: ParallelLayout, settings: M.MemorySettings):
    """Single changes to try when it does not fit, cheapest first (the article's order); no TP / PP
    for a framework with data parallelism only (--framework hf: planner.framework_rules)."""
    data_ranks = layout.dp * layout.cp
    rules = rules_for(settings.framework)
    model_parallel = not rules.data_parallel_only
    recompute = fix_recompute(settings.framework)  # the framework's heaviest recompute mode (llm.c: -r 1)
    if layout.micro_batch > 1:
        yield "micro-batch 1", layout, replace(layout, micro_batch=1), settings, "more steps of accumulation"
    for stage, cost in ((1, "no extra communication"), (2, "no extra communication"),
                        (3, "parameter all-gathers: ~1.5x the DP communication volume")):
        if data_ranks > 1 and layout.zero < stage and (stage in rules.zero_stages or not rules.refuses_other_zero) \
                and stage in optimizer_zero_stages(settings.framework, settings.optimizer):  # Megatron's Muon: 0, 1
            yield f"ZeRO-{stage}", layout, replace(layout, zero=stage), settings, cost
    offloading = settings.offload_layers > 0  # no recompute, no PP with it (framework_rules.CPU_OFFLOAD_PP)
    if settings.recompute == "none" and not offloading:
        yield f"{recompute} recompute", layout, layout, replace(settings, recompute=recompute), \
            "~33% more compute" if recompute == "full" else "GELU recomputed in backward (llm.c -r 1)"
    if data_ranks == 1 and not rules.refuses_other_zero:
        yield "ZeRO-3 over 8 GPUs", layout, replace(layout, dp=8, zero=3), settings, \
            "8x the GPUs per replica; parameter all-gathers"
    heads, kv = spec.attention.num_heads, spec.attention.num_kv_heads
    for tp in (2, 4, 8) if model_parallel else ():
        if tp > layout.tp and heads % tp == 0 and (spec.attention.is_mla or kv % tp == 0):
            new = _take_from_dp(layout, tp=tp)
            yield f"TP {tp}", layout, new, settings, f"{new.world} GPUs; TP all-reduces every layer (keep inside a node)"
    for pp in (2, 4, 8) if model_parallel and not offloading else ():
        if pp > layout.pp and pp <= spec.num_layers:
            new = _take_from_dp(layout, pp=pp)
            yield f"PP {pp}", layout, new, settings, f"{new.world} GPUs; pipeline bubble (p-1)/m"
    if (layout.zero >= 1 or data_ranks == 1) and rules.optimizer_offload:
        yield "CPU optimizer offload", layout, layout, replace(settings, offload_optimizer=True), \
            "optimizer step on the CPU; PCIe traffic per step"


def fix_recompute(framework_name: str) -> str:
    """The recompute mode memory's advice tries: full, or the framework's only other (llm.c: selective, -r 1)."""
    modes = F.framework(framework_name).recompute_modes
    return "full" if "full" in modes else modes[-1]


def _no_single_fix(settings: M.MemorySettings) -> str:
    """What to combine when no single change fits; with --offload-layers neither recompute nor PP
    (Megatron-Core refuses both with CPU activation offloading)."""
    zero = f"ZeRO-{max(optimizer_zero_stages(settings.framework, settings.optimizer))}"  # Megatron's Muon: 1
    if settings.offload_layers:
        return f"combine {zero}, TP, more offloaded layers, or use more or larger GPUs"
    parallel = "" if rules_for(settings.framework).data_parallel_only else ", TP/PP"
    return f"combine {zero}, recompute{parallel}, or use more or larger GPUs"


def _take_from_dp(layout: ParallelLayout, **degree: int) -> ParallelLayout:
    """Raise a model-parallel degree, taking the GPUs from dp where it divides, else adding GPUs."""
    (name, value), = degree.items()
    factor = value // getattr(layout, name)
    dp = layout.dp // factor if layout.dp % factor == 0 else layout.dp
    return replace(layout, dp=dp, global_batch=None, **degree)


def suggestions(spec, layout, settings, overheads, gpu) -> list[tuple[str, float, str]]:
    """(change, new peak bytes, cost) for each single change that makes it fit on ``gpu``."""
    found = []
    for name, _, new_layout, new_settings, cost in _candidate_changes(spec, layout, settings):
        fits, peak, _ = _fits(spec, new_layout, new_settings, overheads, gpu)
        if fits:
            found.append((name, peak, cost))
    if not found and settings.recompute == "none" and layout.dp * layout.cp > 1 and not settings.offload_layers \
            and fix_recompute(settings.framework) == "full" and 3 in rules_for(settings.framework).zero_stages:
        fits, both, _ = _fits(spec, replace(layout, zero=3), replace(settings, recompute="full"), overheads, gpu)
        if fits:
            found.append(("ZeRO-3 + full recompute", both, "both costs above"))
    return found[:4]


def _gib(value: float) -> str:
    return format_bytes(value)


def _recipe_section(spec: ModelSpec, settings: M.MemorySettings) -> Section:
    recipe = recipe_of(settings)
    optimizer = M.OPTIMIZERS[settings.optimizer]
    states = optimizer.matrix_states if optimizer.name not in ("adafactor",) else 0.0
    state_bytes = (optimizer.fixed_state_bytes or recipe.state_bytes) * states + optimizer.overhead_bytes_per_param
    per_param = recipe.weight_bytes + recipe.grad_bytes + recipe.master_bytes + state_bytes
    n = M.stage_params(spec, ParallelLayout(), 0).total
    return Section(f"Model states: recipe '{recipe.name}', optimizer '{optimizer.name}' (unsharded)", (
        Line("bytes_weights", "weights", recipe.weight_bytes, "B/param", f"{recipe.weight_bytes:g} B/param"),
        Line("bytes_grads", "gradients", recipe.grad_bytes, "B/param", f"{recipe.grad_bytes:g} B/param"),
        Line("bytes_master", "fp32 master weights", recipe.master_bytes, "B/param", f"{recipe.master_bytes:g} B/param"),
        Line("bytes_optimizer", "optimizer states", state_bytes, "B/param", f"{state_bytes:g} B/param",
             optimizer.source),
        Line("bytes_per_param", "model states per parameter", per_param, "B/param", f"{per_param:g} B/param",
             recipe.source),
        Line("model_states_total", "model states, whole model", per_param * n, "bytes",
             f"{per_param * n / 1e9:,.1f} GB ({_gib(per_param * n)})", f"{per_param:g} x {n:,.0f} params"),
    ))


def _peak_section(peak: M.MemoryBreakdown, overheads: M.Overheads, layout: ParallelLayout,
                  gpu: Accelerator, gap: float = 0.0, cached: bool = True) -> Section:
    """The peak lines; ``cached`` False: no caching allocator (llm.c cudaMallocs once, core.memory.llmc_memory)."""
    fixed = overheads.fixed_bytes(layout)
    reserved = overheads.reserved_bytes(peak.allocated)
    total = reserved + fixed
    budget = overheads.budget_bytes(gpu.memory_bytes) - gap
    rows = [("weights", peak.weights), ("grads", peak.grads), ("master", peak.master),
            ("optimizer", peak.optimizer), ("activations", peak.activations),
            ("outside_layers", peak.outside_layers), ("temporaries", peak.temporaries),
            ("fsdp_working_set", peak.fsdp_working_set)]
    held = peak.peak_phase == "optimizer step"  # core.memory.training: 'optimizer step' or 'backward start'
    lines = [Line(f"peak_{k}", k.replace("_", " "), v, "bytes", _gib(v)) for k, v in rows]
    if held:  # the step's activations are freed by then: 'activations 0 B' beside the peak read as a miss
        i = [k for k, _ in rows].index("activations")
        lines[i] = replace(lines[i], label=f"activations held at the peak ({peak.peak_phase})",
                           formula="what the peak holds: at the optimizer step the step's activations are freed")
    allocated_label, reserved_label = (X.XLA_ALLOCATED, X.XLA_RESERVED) if overheads.xla else peak_labels(cached)
    runtime, runtime_why, total_label = X.runtime_words(fixed) if overheads.xla else (
        "CUDA context + NCCL buffers", "outside the allocator; see assumptions",
        "device memory needed (reserved + runtime)")
    lines += [
        Line("peak_allocated", allocated_label, peak.allocated, "bytes", _gib(peak.allocated),
             f"at {peak.peak_phase}, pipeline stage {peak.stage}"),
        Line("peak_reserved", reserved_label, reserved, "bytes", _gib(reserved), X.XLA_RESERVED_WHY if overheads.xla
             else f"allocated x {1 + overheads.fragmentation:.2f}: fragmentation of the allocator's cached blocks "
             "(core/memory/device_memory.py)" if cached else CUDAMALLOC_ONCE),
        Line("overheads", runtime, fixed, "bytes", _gib(fixed), runtime_why),
        Line("peak_total", total_label, total, "bytes", _gib(total)),
        Line("capacity", f"{gpu.name} memory", gpu.memory_bytes, "bytes", _gib(gpu.memory_bytes)),
        Line("margin", "safety margin", gpu.memory_bytes * overheads.margin, "bytes",
             f"{_gib(gpu.memory_bytes * overheads.margin)} ({overheads.margin:.0%})",
             "kept free beyond the modelled reserve and runtime"),
        *((Line("framework_gap", "kept free for FSDP2's stream pools and the published share", gap, "bytes", _gib(gap),
                "FSDP2's stream pools beyond the reserved peak (ZeRO-3 under torchtitan: core/memory/fsdp_streams.py)"
                " and a share of the reserved peak beyond the model states: what the framework's published runs "
                "held beyond this estimate (planner/framework_rules.py published_reserve; `plan` keeps the same)"),)
          if gap else ()),
        Line("headroom", "headroom after margin", budget - total, "bytes", _gib(budget - total)),
        Line("fits", "fits", total <= budget, "", "yes" if total <= budget else "NO",
             "reserved + runtime" + (" + the framework's gap" if gap else "") + " <= capacity x (1 - margin)"),
    ]
    return Section(f"Per-GPU peak on {gpu.name} (worst GPU: pipeline stage {peak.stage}, {peak.peak_phase})",
                   tuple(lines))


def _host_section(spec: ModelSpec, layout: ParallelLayout, gpu: Accelerator) -> Section:
    """Host memory the CPU optimizer offload needs (ZeRO-Offload)."""
    from gpuplan.core.memory.model_states import OFFLOAD_HOST_BYTES_PER_PARAM, offload_host_bytes

    per_gpu = offload_host_bytes(M.stage_params(spec, layout, 0).total, layout)
    per_node = per_gpu * (gpu.devices_per_node or 8)
    return Section("Host memory (CPU optimizer offload)", (
        Line("host_per_gpu", "pinned host memory per GPU", per_gpu, "bytes", _gib(per_gpu),
             f"{OFFLOAD_HOST_BYTES_PER_PARAM} B/param of the rank's ZeRO partition: fp16 grads + fp32 master + "
             "Adam moments (Ren et al. 2021, ZeRO-Offload Sec. 4.1)"),
        Line("host_per_node", "per node", per_node, "bytes", _gib(per_node),
             f"x {gpu.devices_per_node or 8} GPUs per node; keep headroom for the data loader and pinned buffers"),
    ))


def estimate_memory(inputs: MemoryInputs) -> Report:
    """Per-GPU training memory with verdicts; raises InputError on impossible layouts."""
    inputs = job_inputs(inputs, MemoryInputs)
    spec = inputs.spec()
    gpu = resolve_gpu(inputs.gpu)
    settings = inputs.settings(spec, gpu)
    _validate_settings(settings)
    check_recipe_runs_on(settings.recipe, gpu)
    check_dtype_runs_on(inputs, gpu)  # --dtype, --fp8-recipe mxfp8 on the part, as plan's search
    overheads = inputs.overheads_on(gpu, spec)
    layout = resolve_layout(spec, inputs)
    settings, overheads, calibration_sections = calibrated(inputs, settings, overheads)  # its factors, if given
    peak = M.peak_memory(spec, layout, settings)
    layout_text = (f"dp {layout.dp} x tp {layout.tp} x pp {layout.pp}" + (f" (vpp {layout.vpp})" if layout.vpp > 1 else "")
                   + f" x cp {layout.cp}, ep {layout.ep}, ZeRO-{layout.zero}, micro-batch {layout.micro_batch}"
                   + (f" (HSDP: shard {layout.shard_group})" if layout.shard_group and layout.shard_group
                      < layout.dp * layout.cp else ""))  # as planner.plan's layout text names it
    check_calibrated_memory(inputs.calibration, peak, layout_text, gpu)  # not below the model states it holds
    peaks = {(layout, settings): peak.allocated}  # the verdicts below ask it again, per GPU
    gap = framework_gap(spec, layout, settings, overheads)
    sections = [_recipe_section(spec, settings), _peak_section(peak, overheads, layout, gpu, gap,
                                                                             F.framework(settings.framework).caching_allocator)]
    if settings.offload_optimizer:
        sections.append(_host_section(spec, layout, gpu))
    fits, headroom, best_mb = verdict(spec, layout, settings, overheads, gpu, peaks)
    advice = []
    if fits:
        advice.append(Line("largest_micro_batch", "largest micro-batch that fits", best_mb, "sequences",
                           str(best_mb), "the article: spend headroom on a bigger micro-batch"))
    else:
        for name, new_peak, cost in suggestions(spec, layout, settings, overheads, gpu):
            advice.append(Line(f"fix_{name.lower().replace(' ', '_')}", f"fits with {name}", new_peak, "bytes",
                               f"peak {_gib(new_peak)}", cost))
        if not advice:
            advice.append(Line("fix_none", "no single change fits", None, text=_no_single_fix(settings)))
    sections.append(Section("Advice", tuple(advice)))
    sections.extend(calibration_sections)
    # the table's first row is --gpu's verdict, computed above (when its overheads are the same)
    known = {gpu.id: (fits, headroom, best_mb)} if overheads.on_device(gpu) == overheads else {}
    table, parts = _verdict_table(spec, layout, settings, overheads, (gpu.id, *_compared(inputs)), known, peaks)
    report_inputs = (
        Line("model", "model", spec.name),
        Line("gpu", "accelerator", gpu.id, text=f"{gpu.name} ({_gib(gpu.memory_bytes)})"),
        Line("layout", "layout", layout_text),
        Line("seq_len", "sequence length", settings.seq_len, "tokens"),
        batch_line(inputs, layout),
        Line("dtype", "compute dtype", inputs.dtype, text=dtype_text(inputs, inputs.fp8_recipe if
                                                                            inputs.dtype == "fp8" else None)),
        Line("finetune", "training", settings.finetune if settings.finetune == "full" else
             f"{settings.finetune} (rank {settings.lora_rank})"),
    )
    headline = MEMORY_HEADLINE + tuple(line.key for line in advice)
    return in_device_words(with_calibration_warning(Report("memory", f"Training memory: {spec.name} on {gpu.name}", report_inputs,
                  memory_assumptions(settings, overheads, spec.model_type, gpu, "framework" in inputs.given) + recipe_fact_assumptions(settings, inputs.given)
                  + compile_memory_assumption(inputs) + shard_group_assumption(inputs, layout), tuple(sections), _notes(spec, settings) + batch_note(inputs, spec, layout, settings, peak.allocated) + X.compared_note(
                      settings.framework, "framework" in inputs.given, gpu, parts[1:]), (table,),
                  headline=headline, key_assumptions=("recompute", "margin") if rules_for(settings.framework).fixed_options
                  else ("recipe", "implementation", "margin"),  # llm.c: no recipe / implementation to choose
                  summary_table=table.title), inputs, gpu.id, layout), gpu)  # a TPU's answer in chips (tpu_rules.device_noun)


# The answer-first view of `gpuplan memory`: the layout, the states per parameter, the peak by its
# big categories, the capacity and the verdict; then the advice lines.
MEMORY_HEADLINE = ("layout", "bytes_per_param", "model_states_total", "peak_activations", "peak_allocated",
                   "peak_reserved",
                   "peak_total", "capacity", "headroom", "fits")


def _compared(inputs: MemoryInputs) -> tuple[str, ...]:
    """The verdict table's other parts: --compare's as given (schema refuses a part that lacks the dtype), or the
    default list less the parts that cannot compute in --dtype (an fp4 table listed H200 'fits', review R2 S2)."""
    if "compare" in inputs.given:
        return inputs.compare

    def runs(gpu_id: str) -> bool:
        try:
            check_dtype_runs_on(inputs, resolve_gpu(gpu_id))
        except InputError:
            return False
        return True

    return tuple(g for g in inputs.compare if runs(g))


def _each_part_once(compared: tuple[str, ...]) -> None:
    """--compare naming one GPU twice in two spellings ('h100,h100-sxm'; schema.list_field refuses the same spelling)
    is refused, naming the second: the table has one row a GPU, and it kept one silently. Beside --gpu's own part a
    compared name stays one row, as the default list does."""
    parts: dict[str, str] = {}
    for name in compared:
        try:
            part = resolve_gpu(name).id
        except InputError:  # an unknown name: _verdict_table refuses it, naming --compare
            continue
        if part in parts:
            raise InputError("compare", name, f"names the same GPU as {parts[part]!r} ({part}); give each GPU once")
        parts[part] = name


def _verdict_table(spec, layout, settings, overheads, gpu_ids, known=None,
                   peaks=None) -> tuple[Table, tuple[Accelerator, ...]]:
    """One row per GPU type, and the parts of its rows (resolved once here: the first --gpu's, then --compare's;
    tpu_rules.compared_note reads the rest); ``known``: verdicts already computed, by GPU id (``peaks``: as
    _fits)."""
    rows, parts = [], []
    _each_part_once(gpu_ids[1:])
    for i, gpu_id in enumerate(dict.fromkeys(gpu_ids)):
        try:
            gpu = resolve_gpu(gpu_id)
        except InputError as exc:  # the first id is --gpu's; the others are --compare's
            raise InputError("compare" if i else "gpu", gpu_id, exc.expected) from None
        if gpu.id in {p.id for p in parts}:  # an alias of a part already in the table ('h100' beside --gpu h100-sxm): one row
            continue
        on_gpu = overheads.on_device(gpu)
        if on_gpu.hybrid_ep is not None:  # HybridEP's buffers follow each GPU's NVLink domain
            on_gpu = replace(on_gpu, hybrid_ep=replace(on_gpu.hybrid_ep, domain=gpu.scale_up_ranks))
        on_part = replace(settings, fp8_any_layout_gemm=gpu.fp8_any_layout_gemm)  # TE's weight copies per part
        fits, headroom, best = (known or {}).get(gpu.id) or verdict(spec, layout, on_part, on_gpu, gpu, peaks)
        rows.append((gpu.id, _gib(gpu.memory_bytes), "fits" if fits else "does not fit", _gib(headroom), best))
        parts.append(gpu)
    return Table("verdict per GPU type", ("gpu", "memory", "verdict", "headroom after margin",
                                          "largest micro-batch"), tuple(rows)), tuple(parts)


def _notes(spec: ModelSpec, settings: M.MemorySettings) -> tuple[str, ...]:
    notes = list(spec.notes)
    if spec.declared_params is not None:
        notes.append("bare parameter count: model states use N; activations use the generic Llama-style shape")
    if settings.implementation == "torchtitan":
        notes.append("torchtitan activations are an estimate (no measurement on this machine: needs CUDA + compile)")
    dropout = spec.dropout if settings.dropout is None else settings.dropout
    if dropout > 0 and settings.implementation == "hf" and settings.attention_kernel == "flash":
        notes.append(f"dropout {dropout:g}: HF's SDPA with dropout falls back to the math kernel on some backends, "
                     "which saves far more than flash (measured 3x on GPT-2, CPU); check with `gpuplan measure`")
    notes.append("steady state: optimizer states exist (after the first step); the peak is the larger of the start "
                 "of backward and the optimizer step")
    return tuple(notes)
