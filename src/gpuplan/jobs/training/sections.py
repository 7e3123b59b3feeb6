"""The sections of the training estimate: compute, GPU time (with low / high when an MFU band is
known), the article's allowances, the layout with its memory verdict, assumptions and notes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuplan.core.economics.gpu_time import ComputeBudget, comm_share_of_time, with_allowance
from gpuplan.core.memory.llmc_memory import CUDAMALLOC_ONCE, peak_labels
from gpuplan.core.units import (SECONDS_PER_DAY, format_bytes, format_count, format_duration, format_gpu_time, plural,
                                signed_percent)
from gpuplan.jobs.assumptions import compile_assumption, mtp_assumption
from gpuplan.jobs.training.batch_ramp import ramp_line, ramp_notes
from gpuplan.jobs.training.schema import DEFAULT_COMM_ALLOWANCE, DEFAULT_CONTINGENCY, TrainingInputs
from gpuplan.jobs.training.timing import Flops, TimeEstimate
from gpuplan.report.model import Assumption, Line, Section
from gpuplan.schema import tpu_rules as X
from gpuplan.schema.partition_activations import partition_activations_assumption
from gpuplan.schema.precision_rules import followed_recipe
from gpuplan.schema.shard_group import shard_group_assumption
from gpuplan.schema.tp_comm_dtype import tp_comm_dtype_assumption

if TYPE_CHECKING:  # the planner (numpy) is imported where a layout is searched
    from gpuplan.planner.plan import Plan


def compute_section(counts, flops: Flops, inputs: TrainingInputs) -> Section:
    ratio = flops.hardware_ratio
    frozen = inputs.finetune != "full"
    return Section("Compute", (
        Line("params_total", "parameters (counted)", counts.total, "params", format_count(counts.total),
             "sum of every weight, bias and norm"),
        Line("params_active", "parameters active per token", counts.active, "params",
             format_count(counts.active), "MoE: top-k + shared experts"),
        Line("params_non_embedding", "non-embedding parameters", counts.non_embedding, "params",
             format_count(counts.non_embedding), "total - embeddings - untied LM head"),
        Line("flops_6nd", "training FLOPs, 6·N·D", flops.six_nd, "FLOPs", f"{flops.six_nd:.3e}",
             f"6 x {format_count(flops.n_6nd)} x {format_count(inputs.tokens)}"),
        Line("flops_exact", "training FLOPs, exact count", flops.exact, "FLOPs", f"{flops.exact:.3e}",
             ("frozen base: 2 x forward for its matmuls (no weight gradients), 3 x for attention and adapters; "
              if frozen else "3 x forward/token x D; ") +
             f"attention '{inputs.attention_flops}', s={inputs.seq_len}, LM head incl."),
        Line("exact_over_6nd", "exact / 6ND", flops.exact / flops.six_nd, "x", f"{flops.exact / flops.six_nd:.3f}"),
        Line("flops_hardware", "hardware FLOPs (with recompute)", flops.used * ratio, "FLOPs",
             f"{flops.used * ratio:.3e}", f"x{ratio:.3f} of model FLOPs"),
        Line("flops_used", "FLOPs used for time", flops.used, "FLOPs", f"{flops.used:.3e}",
             "exact (a frozen base does not do 6ND)" if frozen and inputs.flops_method == "6nd"
             else f"method '{inputs.flops_method}'"),
    ))


def _band(time: TimeEstimate, attribute: str) -> tuple[float | None, float | None]:
    """(low, high) of a budget attribute over the MFU band (None when no band)."""
    if time.fast is None or time.slow is None:
        return None, None
    a, b = getattr(time.fast, attribute), getattr(time.slow, attribute)
    return min(a, b), max(a, b)


def time_section(gpu, peak: float, time: TimeEstimate, flops: Flops, inputs: TrainingInputs, plan: Plan) -> Section:
    budget = time.expected
    solved = budget.solved_for
    hfu = budget.mfu * flops.hardware_ratio
    basis = f"model FLOPs / (GPUs x dense {inputs.dtype} peak x time)"
    source = {"article": "given" if inputs.mfu is not None else "the article's 40%",
              "predicted": f"predicted: {plan.text()} on {plural(plan.gpus, 'GPU')} (step model, communication included)",
              "solved": "solved from GPUs and days"}[time.mode]
    days = budget.wall_seconds / SECONDS_PER_DAY
    days_band = [v / SECONDS_PER_DAY if v is not None else None for v in _band(time, "wall_seconds")]
    return Section("GPU time", (
        Line("peak_flops", f"dense {inputs.dtype} peak per GPU", peak, "FLOP/s", f"{peak / 1e12:.4g} TFLOP/s",
             gpu.name),
        Line("mfu", f"MFU ({inputs.dtype} basis{', with the ramp' if time.ramp is not None else ''})"
             + (" (solved)" if solved == "mfu" else ""), budget.mfu, "fraction",
             f"{budget.mfu:.1%}", f"{basis}; {source}", *_mfu_band(time)),
        *((ramp_line(time.ramp, inputs, plan),) if time.ramp is not None else ()),  # --batch-ramp: MFU / factor
        Line("hfu", "HFU (hardware FLOPs utilisation)", hfu, "fraction", f"{hfu:.1%}", "MFU x hardware/model FLOPs"),
        Line("flops_per_gpu_day", "useful FLOPs per GPU-day", budget.flops_per_gpu_day, "FLOPs",
             f"{budget.flops_per_gpu_day:.3e}", "peak x MFU x 86400 s"),
        Line("gpu_days", "GPU-days", budget.gpu_days, "GPU-days", format_gpu_time(budget.gpu_days),
             "FLOPs / FLOPs per GPU-day", *_band(time, "gpu_days")),
        Line("gpu_hours", "GPU-hours", budget.gpu_hours, "GPU-hours", format_gpu_time(budget.gpu_hours), "GPU-days x 24",
             *_band(time, "gpu_hours")),
        *_gpus_lines(time, inputs, solved),
        Line("wall_days", "wall-clock" + (" (compute only)" if time.deadline_days else " (solved)" if solved == "days"
                                          else ""), days, "days",
             format_duration(budget.wall_seconds), "GPU-days / GPUs" if solved == "days" or time.deadline_days
             else "given",
             *(days_band if solved == "days" else (None, None))),
    ))


def _days(days: float) -> str:
    """'1 day', '7 days', '0.5 days'."""
    return plural(days, "day", "g")


def _gpus_lines(time: TimeEstimate, inputs: TrainingInputs, solved: str) -> tuple[Line, ...]:
    """The GPU count: given, the layout's, or solved for a deadline — then the fewest GPUs whose
    wall-clock after every allowance the answer adds is within it, and the article's compute-only
    figure (GPU-days / days) beside it, which meets the deadline only if nothing is added."""
    budget = time.expected
    # GPUs given: the time is on those the layout computes on (`--gpus 1113` runs the 7B on 1,112)
    given = "given" if inputs.gpus is None or budget.gpus == inputs.gpus else (
        f"the layout's: {inputs.gpus:,} given, {inputs.gpus - budget.gpus:,.0f} left idle (not counted)")
    # in the value too: budget's answer-first view prints no note nor layout line (s25 R2 S2-4: 'GPUs 64', nothing
    # saying 192 of the 256 given sit idle)
    count = f"{budget.gpus:,.0f}" + ("" if given == "given" else f" ({inputs.gpus - budget.gpus:,.0f} of the "
                                                                   f"{inputs.gpus:,} given left idle)")
    if time.mode == "solved" and time.deadline_wall_seconds is not None:  # GPUs and days given: MFU solved
        met = time.deadline_wall_seconds / SECONDS_PER_DAY
        return (Line("gpus", "GPUs", budget.gpus, "GPUs", count, given),
                Line("deadline_met", f"wall-clock with {time.deadline_allowances}", met, "days", format_duration(met * SECONDS_PER_DAY),
                     f"the MFU is solved for this: the {_days(time.deadline_days)} given"))
    if time.deadline_days is None:
        return (Line("gpus", "GPUs" + (" (solved)" if solved == "gpus" else ""), budget.gpus, "GPUs",
                     f"{budget.gpus:,.1f} -> {budget.gpus_whole:,} GPUs" if solved == "gpus" else count,
                     "GPU-days / days" if solved == "gpus" else (
                         "the layout's" if time.mode == "predicted" and given == "given" else given),
                     *(_band(time, "gpus") if solved == "gpus" else (None, None))),)
    days, article = time.deadline_days, time.compute_only_gpus
    met = time.deadline_wall_seconds / SECONDS_PER_DAY
    return (
        Line("gpus", f"GPUs to finish in {_days(days)} (solved)", budget.gpus, "GPUs", f"{budget.gpus:,.0f}",
             f"the fewest whose wall-clock with the {time.deadline_allowances} is within {_days(days)}"),
        Line("gpus_compute_only", "GPUs for compute alone (the article)", article, "GPUs", f"{article:,.1f}",
             f"GPU-days / {_days(days)}: meets the deadline only if nothing is added to compute time"),
        Line("deadline_met", f"wall-clock with {time.deadline_allowances}", met, "days", format_duration(met * SECONDS_PER_DAY),
             f"on {budget.gpus:,.0f} GPUs; the deadline is {_days(days)}"),
    )


def _mfu_band(time: TimeEstimate) -> tuple[float | None, float | None]:
    if time.fast is None or time.slow is None:
        return None, None
    return time.slow.mfu, time.fast.mfu


def comm_range(inputs: TrainingInputs) -> tuple[float, float, float]:
    if inputs.comm_allowance is not None:
        return (inputs.comm_allowance,) * 3
    return DEFAULT_COMM_ALLOWANCE


def _gpus_with_comm(time: TimeEstimate, comm: str, allowances: tuple[float, float, float]) -> Line:
    """A deadline answer's GPUs already meet it after the allowance (issue 39 item 3), so growing them by it
    again answered '424 GPUs to finish in 7 days' beside '509 GPUs for the same deadline with comm allowance'
    (wave 7 invariant sweep). The article's figure is its compute-only count x (1 + allowance); with the MFU
    solved (GPUs and days given) the GPUs given are the count."""
    label = f"GPUs for the deadline ({_days(time.deadline_days)}) {comm}"
    given = time.expected.gpus
    if time.compute_only_gpus is None:
        return Line("gpus_with_comm", label, given, "GPUs", f"{given:,.0f}",
                    "the GPUs given: the MFU is solved to meet the deadline after the allowance")
    low, mid, high = (with_allowance(time.compute_only_gpus, a) for a in allowances)
    return Line("gpus_with_comm", label, mid, "GPUs", f"{mid:,.1f}",
                f"the article's: GPUs for compute alone x (1 + allowance); the answer's {given:,.0f} meet the "
                f"deadline after the allowance{'' if time.deadline_allowances == 'communication allowance' else ', failures and checkpoints'}",
                low, high)


def allowance_section(time: TimeEstimate, inputs: TrainingInputs) -> Section:
    """The article's allowances: communication on top of compute time, then contingency. The
    range combines the allowance range with the MFU band."""
    low, mid, high = comm_range(inputs)
    budget = time.expected
    c = inputs.contingency
    fast, slow = time.fast or budget, time.slow or budget

    def grown(get, fraction, extra=0.0):
        return with_allowance(with_allowance(get(budget), fraction), extra)

    def ranged(get, extra=0.0) -> tuple[float, float]:
        return (with_allowance(with_allowance(get(fast), low), extra),
                with_allowance(with_allowance(get(slow), high), extra))

    def wall(b: ComputeBudget) -> float:
        return b.wall_seconds / SECONDS_PER_DAY

    def gpus(b: ComputeBudget) -> float:
        return b.gpus

    def hours(b: ComputeBudget) -> float:
        return b.gpu_hours

    with_comm = grown(hours, mid)
    predicted = time.mode == "predicted"
    title = "Allowances (none: communication is in the modelled step time)" if predicted else "Allowances (the article's)"
    comm = "(communication modelled)" if predicted else "with comm allowance"
    return Section(title, (
        Line("comm_allowance", "communication allowance", mid, "fraction of compute time", f"+{mid:.0%}",
             "comm/compute; the article's 10-30% at scale", low, high),
        Line("comm_share", "comm / (compute + comm)", comm_share_of_time(mid), "fraction",
             f"{comm_share_of_time(mid):.1%}", "the article's communication-overhead ratio"),
        Line("wall_days_with_comm", f"wall-clock {comm}", grown(wall, mid), "days",
             format_duration(grown(wall, mid) * SECONDS_PER_DAY), "wall-clock x (1 + allowance)", *ranged(wall)),
        _gpus_with_comm(time, comm, (low, mid, high)) if time.deadline_days is not None and not predicted else
        Line("gpus_with_comm", f"GPUs for the same deadline {comm}", grown(gpus, mid), "GPUs",
             f"{grown(gpus, mid):,.0f}", "GPUs x (1 + allowance)", *ranged(gpus)),
        Line("gpu_hours_with_comm", f"GPU-hours {comm}", with_comm, "GPU-hours", format_gpu_time(with_comm),
             "GPU-hours x (1 + allowance)", *ranged(hours)),
        Line("gpu_hours_budget", "GPU-hours budget incl. contingency", grown(hours, mid, c), "GPU-hours",
             format_gpu_time(grown(hours, mid, c)), f"with comm x (1 + {c:.0%} contingency: restarts, tuning, failures)",
             *ranged(hours, c)),
    ))


def layout_section(plan: Plan, inputs: TrainingInputs, told: tuple[Line, ...] = ()) -> Section:
    """The layout the estimate stands on and its memory verdict (= `gpuplan memory` of it); ``told``: the
    --shard-group auto line after the layout's (jobs.plan.shard_group_told.training_shard_group_line)."""
    from gpuplan.jobs.plan.search import idle_told  # the planner's (numpy), loaded with the plan

    left = idle_told(plan, inputs.gpus)  # of a count given, not a deadline's search count
    idle = f", {left:,} of {plan.gpus_asked:,} GPUs idle" if left else ""
    source = "your degrees" if inputs.layout_given else "the planner's best"
    m = plan.memory
    return Section(f"Layout and memory per GPU ({source}{idle})", (
        Line("mem_layout", "layout", plan.degrees(), text=f"{plan.text()} on {plural(plan.gpus, 'GPU')}"
             + (f" ({left:,} more of the {plan.gpus_asked:,} asked left idle)" if left else ""),
             formula=f"{source}; step {plan.step_seconds:.3f} s, modelled MFU {plan.mfu:.1%}"),
        *told,
        Line("mem_global_batch", "global batch", plan.global_batch, "sequences",
             f"{plan.global_batch:,} x {inputs.seq_len:,} tokens ({signed_percent(plan.batch_difference)} vs "
             f"{plan.target_batch:,.0f} " + ("asked)" if inputs.global_batch is not None or
                                               inputs.global_batch_tokens is not None else "by default)")),
        Line("mem_peak_allocated", "allocated peak", m.allocated, "bytes", format_bytes(m.allocated),
             f"at {m.peak_phase}, pipeline stage {m.stage}; `gpuplan memory` of this layout with --global-batch "
             f"{plan.global_batch} gives the same"),  # memory's own default is one micro-batch a rank (s25)
        *_peak_lines(plan, inputs),
        Line("mem_capacity", "usable memory (after the margin)", plan.budget_bytes, "bytes",
             format_bytes(plan.budget_bytes), f"{inputs.margin:.0%} kept free beyond the modelled reserve and runtime"),
        Line("mem_fits", "fits", plan.fits, "", "yes" if plan.fits else "NO",
             f"headroom {format_bytes(plan.headroom_bytes)}" + (f", after {format_bytes(plan.fit_excess_bytes)} kept free "
                                                                 "for the framework's published memory gap"
                                                                 if plan.fit_excess_bytes else "")),
    ))


def _peak_lines(plan: Plan, inputs: TrainingInputs) -> tuple[Line, Line]:
    """The reserved and total peak lines, in a TPU's words where the part is one (schema.tpu_rules)."""
    if X.is_tpu(X.accelerator(inputs.gpu)):
        _, why, total = X.runtime_words(plan.fixed_bytes)  # a calibration's memory_overhead, where counted
        return (Line("mem_peak_reserved", X.XLA_RESERVED, plan.reserved_bytes, "bytes",
                     format_bytes(plan.reserved_bytes), X.XLA_RESERVED_WHY),
                Line("mem_peak_total", total, plan.total_bytes, "bytes", format_bytes(plan.total_bytes), why))
    return (Line("mem_peak_reserved", peak_labels(inputs.profile.caching_allocator)[1], plan.reserved_bytes, "bytes",
                 format_bytes(plan.reserved_bytes), f"allocated x {1 + plan.fragmentation:.2f} (fragmentation)"
                 if inputs.profile.caching_allocator else CUDAMALLOC_ONCE),
            Line("mem_peak_total", "reserved + CUDA context + NCCL", plan.total_bytes, "bytes",
                 format_bytes(plan.total_bytes)))


def assumptions(inputs: TrainingInputs, gpu, peak: float, time: TimeEstimate,
                mtp_layers: int = 0, asked: TrainingInputs | None = None, layout=None) -> tuple[Assumption, ...]:
    """Every assumption with its source; '(set)' (user_set) only on what the user gave (``asked``:
    the inputs before predicted mode replaced the allowance and the FLOPs method; ``layout``: the plan's, whose
    dp x cp the shard group's line names)."""
    asked = asked or inputs
    low, mid, high = comm_range(inputs)
    budget = time.expected
    predicted = time.mode == "predicted"
    mfu_source = {"predicted": ("predicted by the step model" + (" calibrated on your log" if inputs.calibration
                                                                 else "") + " on the layout (communication "
                               "included); band = the held-out error of that model on published runs "
                               "(docs/accuracy.md)"),
                  "solved": "solved from the GPUs and days given",
                  "article": "article: industry 30-50%, 40% in its A100 example"}[time.mode]
    mfu_value = "solved" if budget.solved_for == "mfu" else ("predicted " if predicted else "") + f"{budget.mfu:.2f}"
    if time.fast is not None and time.slow is not None:
        mfu_value += f" ({time.slow.mfu:.2f}-{time.fast.mfu:.2f})"
    comm_value = ("none: communication is in the modelled step time" if predicted
                  else f"{mid:.0%}" if low == high else f"{mid:.0%} ({low:.0%}-{high:.0%})")
    default_seq = type(inputs).model_fields["seq_len"].default  # schema.vocabulary.SeqLen's 4096
    return (
        Assumption("mfu", "MFU", mfu_value, mfu_source, "--mfu (0.4, 30-50% or predicted), --calibration",
                   asked.mfu is not None or asked.calibration is not None),
        Assumption("flops_method", "FLOPs method", inputs.flops_method + (
            " (--mfu predicted times the exact count)" if inputs.flops_method != asked.flops_method else ""),
                   "6ND: Kaplan et al. 2020 / the article; exact: PaLM App. B with LM head", "--flops-method",
                   "flops_method" in asked.given),
        Assumption("attention_flops", "attention FLOPs convention", inputs.attention_flops,
                   "full = PaLM/Megatron MFU convention (no causal halving)", "--attention-flops",
                   "attention_flops" in asked.given),
        Assumption("seq_len", "sequence length", inputs.seq_len, f"gpuplan default {default_seq}"
                   if inputs.seq_len == default_seq or "seq_len" in inputs.given else f"the model's position limit (learned "
                   f"table or max_position_embeddings): the {default_seq} default is past it (schema.model_fields."
                   f"follow_position_limit)", "--seq-len",
                   "seq_len" in inputs.given),
        Assumption("comm_allowance", "communication allowance", comm_value,
                   "article: add 10-30% for communication at scale", "--comm-allowance",
                   "comm_allowance" in asked.given),
        Assumption("contingency", "contingency budget", f"{inputs.contingency:.0%}",
                   "article: 20% for restarts, tuning, hardware failures", "--contingency",
                   inputs.contingency != DEFAULT_CONTINGENCY),
        Assumption("peak", f"dense {inputs.dtype} peak", f"{peak / 1e12:.4g} TFLOP/s",
                   "; ".join(gpu.sources[:1]) or "hardware catalog", "--gpu / --dtype", "dtype" in inputs.given
                   or followed_recipe(inputs)),  # --recipe fp8 set the dtype (schema.precision_rules.follow_recipe)
        Assumption("layout", "layout", "your degrees" if inputs.layout_given else "the planner's best",
                   "gpuplan plan on these GPUs (docs/step.md)", "--tp / --pp / --vpp / --cp / --ep / --zero / "
                   "--micro-batch / --recompute / --recompute-modules / --recompute-layers", inputs.layout_given),
        Assumption("recipe", "precision recipe", inputs.recipe_name, "core/precision.py", "--recipe",
                   "recipe" in inputs.given),
        Assumption("framework", "framework profile", X.framework_shown(inputs.framework, "framework" in inputs.given,
                                                                     gpu), "; ".join(inputs.profile.sources[:2]),
                   "--framework", "framework" in inputs.given),
    ) + mtp_assumption(mtp_layers, "mtp_layers" in inputs.given) + compile_assumption(inputs) + tp_comm_dtype_assumption(
        inputs) + partition_activations_assumption(inputs) + shard_group_assumption(inputs, layout)  # HSDP


def notes(spec, counts, flops: Flops, inputs: TrainingInputs, plan: Plan,
          asked: TrainingInputs | None = None, time: TimeEstimate | None = None) -> tuple[str, ...]:
    asked = asked or inputs
    out = list(spec.notes)
    if spec.declared_params is not None:
        out.append(f"bare parameter count: 6ND uses N={format_count(flops.n_6nd)}; the exact count uses a generic "
                   f"Llama-style shape ({spec.num_layers} layers, hidden {spec.hidden_size}, "
                   f"{format_count(counts.total)} params)")
    if not plan.fits:
        out.append(f"the layout does not fit: {format_bytes(plan.total_bytes)} per GPU of "
                   f"{format_bytes(plan.budget_bytes)} usable; see `gpuplan memory` for what would make it fit")
    if inputs.comm_allowance != 0.0:
        out.append("MFU here is compute-only efficiency (the article's convention); communication is the "
                   "separate allowance. If your MFU was measured end-to-end, set --comm-allowance 0.")
    if asked.flops_method != inputs.flops_method:
        out.append(f"FLOPs method: --mfu predicted times the exact count (attention and LM head), not "
                   f"{asked.flops_method}: the step model executes them")
    if inputs.predict_mfu:  # as `plan` does: a predicted MFU past every published run says so
        from gpuplan.adapters.resolve import resolve_gpu
        from gpuplan.catalog import prediction_band
        from gpuplan.core.time.step import precision_class
        from gpuplan.jobs.validation.mfu_ceiling import predicted_mfu_notes

        dtype = precision_class(inputs.dtype)
        band = prediction_band(dtype, moe=spec.moe is not None)[0]
        out.extend(predicted_mfu_notes(resolve_gpu(inputs.gpu).id, spec, dtype, plan.mfu, band))
        out.append("--mfu predicted is the steady state of the planner's layout on the kernels given (flash attention, FlashAttention-2 "
                   "class, unless --attention-kernel flash1 / eager); whole "
                   "campaigns also spend GPU-hours on restarts, evaluation and slower early configurations "
                   "(the packaged 2022-23 runs used 0.88-2.11x their predicted GPU-hours with the recompute, attention "
                   "kernel and network their sources state; Llama 3.1 "
                   "405B, DeepSeek-V3, llm.c's GPT-2 350M / 774M / 1558M and OLMo 3 7B / 32B, 2024-25, 0.83-1.51x: "
                   "docs/accuracy.md); the budget's failure, checkpoint and evaluation lines hold part of that (with "
                   "them and the stated batch ramps and layouts, 16.3% mean over thirty held-out runs, predicted "
                   "low on average; the worst SEA-LION 3B, -51.8%, whose card's 14 days on 240 A100 40GB hold 3.03 s "
                   "a step where the model times 1.46 s, BloombergGPT 50B, -48.4%, whose paper states a 32.5 s step "
                   "where the model times 17.2 s (SageMaker's ZeRO-3 over 50 Gb/s of EFA a GPU), GLM-130B, -34.0%, "
                   "whose training notes measure an 88.5 s step where the model times 70.1 s and whose total holds "
                   "22% beyond those steps, and OLMo 3 32B, -33.8% against its developers' total, which holds 31% "
                   "beyond their steady rate: docs/training.md); the GPU-hours budget line adds restarts, tuning "
                   "and evaluation at 5% each: 12.3% mean against the twenty-two of them whose totals are wall-clock, "
                   "bias -4.5%, because those fixed lines stand in for downtime the failure model does not cover (the "
                   "totals hold no tuning, and in-loop evaluation is charged already where stated; docs/budget.md 5a)")
    from gpuplan.adapters.resolve import resolve_gpu
    from gpuplan.core.comm.host_tier import assumed_host_note  # the server of NVLink pairs on PCIe it assumed

    out.extend(assumed_host_note(resolve_gpu(inputs.gpu), inputs.gpus_per_node))
    from gpuplan.jobs.training.layout import no_layout_note, one_rank_zero_note  # loaded with the plan (numpy)

    out.extend(no_layout_note(inputs, plan) + one_rank_zero_note(plan))
    from gpuplan.jobs.plan.fallbacks_told import group_count_note  # plan's note where the group is all of dp x cp

    out.extend(group_count_note(inputs, plan, asked.gpus))
    out.extend(ramp_notes(getattr(time, "ramp", None), plan, inputs) if time is not None else ())
    used = inputs.builtin_defaults_used()
    if used:
        out.append(f"built-in defaults used: {', '.join(used)}")
    return tuple(out)
