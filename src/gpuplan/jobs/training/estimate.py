"""Training compute and time estimate: the Python API behind ``gpuplan train``.

``estimate_training(TrainingInputs(...))`` returns the Report the CLI renders.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.adapters.resolve import resolve_gpu, resolve_model
from gpuplan.core import flops as F
from gpuplan.core.gpu_time import (
    comm_share_of_time,
    solve_compute_budget,
    with_allowance,
)
from gpuplan.core.model import count_parameters, params_for_6nd
from gpuplan.core.units import SECONDS_PER_DAY, format_count, format_duration
from gpuplan.jobs.training.schema import (DEFAULT_COMM_ALLOWANCE, DEFAULT_CONTINGENCY, DEFAULT_DAYS, DEFAULT_MFU,
                                          TrainingInputs)
from gpuplan.report.model import Assumption, Line, Report, Section

def _planned_mfu(inputs: TrainingInputs) -> float:
    """The MFU of the best layout the planner finds (with the calibrated step model when a
    calibration is given), on the given GPUs (or one node when the GPU count is to be solved). gpuplan's MFU definition (exact FLOPs,
    attention without causal halving), communication included."""
    from gpuplan.adapters.resolve import resolve_gpu
    from gpuplan.jobs.plan.search import PlanInputs, best_layout, search

    gpus = int(inputs.gpus or resolve_gpu(inputs.gpu).devices_per_node or 8)
    model, params = inputs.model_params
    plan = PlanInputs(tokens=inputs.tokens, model=model, params=params, model_type=inputs.model_type, gpu=inputs.gpu,
                      gpus=(gpus,), seq_len=inputs.seq_len, recipe=inputs.recipe_name, dtype=inputs.dtype,
                      calibration=inputs.calibration)
    table = search(plan)[2]  # the layout search alone: no report, no budget sections
    return float(table["mfu"][best_layout(table, plan.rank_by)])


def _solve_inputs(inputs: TrainingInputs) -> tuple[float | None, float | None, float | None]:
    gpus, days, mfu = inputs.gpus, inputs.days, inputs.mfu_value
    if gpus is None and days is None:
        days = DEFAULT_DAYS  # the article: "to finish in 7 days"
    if mfu is None and (gpus is None or days is None):
        mfu = DEFAULT_MFU
    return gpus, days, mfu


@dataclass(frozen=True)
class _Flops:
    """The FLOP counts of one run (FLOPs), and which one sets the time."""

    n_6nd: float
    six_nd: float
    exact: float
    used: float
    hardware_ratio: float


def _count_flops(spec, inputs: TrainingInputs) -> _Flops:
    n_6nd = params_for_6nd(spec)
    per_token = F.training_flops_per_token(spec, inputs.seq_len, inputs.attention_flops,  # type: ignore[arg-type]
                                           inputs.recompute_mode)
    six_nd, exact = F.flops_6nd(n_6nd, inputs.tokens), per_token.model * inputs.tokens
    used = six_nd if inputs.flops_method == "6nd" else exact
    return _Flops(n_6nd, six_nd, exact, used, per_token.hardware / per_token.model)


def estimate_training(inputs: TrainingInputs) -> Report:
    """Compute, GPU-time, allowance and memory lines for one training run."""
    spec = inputs.spec()
    gpu = resolve_gpu(inputs.gpu)
    peak = gpu.peak(inputs.dtype)
    gpus, days, mfu = _solve_inputs(inputs)
    calibrated = inputs.calibration is not None and inputs.mfu is None and not (gpus and days)
    predicted = calibrated or (inputs.predict_mfu and not (gpus and days))
    if predicted:  # the planner's MFU pays for communication and counts FLOPs exactly
        mfu = _planned_mfu(inputs)
        inputs = inputs.replace(comm_allowance=0.0, flops_method="exact", attention_flops="full")
    flops = _count_flops(spec, inputs)
    budget = solve_compute_budget(flops.used, peak, gpus=gpus, mfu=mfu,
                                  wall_seconds=None if days is None else days * SECONDS_PER_DAY)
    counts = count_parameters(spec)
    sections = [_compute_section(counts, flops, inputs), _time_section(gpu, peak, budget, flops, inputs),
                _allowance_section(budget, inputs)]
    memory = _memory_section(spec, gpu, budget.gpus_whole, inputs)
    if memory is not None:
        sections.append(memory)
    model_label = spec.name + (f" ({spec.source})" if spec.source and spec.declared_params is None else "")
    report_inputs = (
        Line("model", "model", spec.name, text=model_label),
        Line("tokens", "training tokens", inputs.tokens, "tokens", format_count(inputs.tokens)),
        Line("gpu", "accelerator", gpu.id, text=f"{gpu.name} ({gpu.id})"),
        Line("dtype", "compute dtype", inputs.dtype),
    )
    return Report("train", f"Training estimate: {spec.name} on {format_count(inputs.tokens)} tokens, {gpu.name}",
                  report_inputs, _assumptions(inputs, gpu, peak, budget, calibrated, predicted), tuple(sections),
                  _notes(spec, counts, flops, inputs.builtin_defaults_used()))


def _compute_section(counts, flops: _Flops, inputs: TrainingInputs) -> Section:
    ratio = flops.hardware_ratio
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
             f"3 x forward/token x D; attention '{inputs.attention_flops}', s={inputs.seq_len}, LM head incl."),
        Line("exact_over_6nd", "exact / 6ND", flops.exact / flops.six_nd, "x", f"{flops.exact / flops.six_nd:.3f}"),
        Line("flops_hardware", "hardware FLOPs (with recompute)", flops.used * ratio, "FLOPs",
             f"{flops.used * ratio:.3e}", f"recompute '{inputs.recompute_mode}': x{ratio:.3f} of model FLOPs"),
        Line("flops_used", "FLOPs used for time", flops.used, "FLOPs", f"{flops.used:.3e}",
             f"method '{inputs.flops_method}'"),
    ))


def _time_section(gpu, peak: float, budget, flops: _Flops, inputs: TrainingInputs) -> Section:
    solved = budget.solved_for
    hfu = budget.mfu * flops.hardware_ratio
    return Section("GPU time", (
        Line("peak_flops", f"dense {inputs.dtype} peak per GPU", peak, "FLOP/s", f"{peak / 1e12:.4g} TFLOP/s",
             gpu.name),
        Line("mfu", "MFU" + (" (solved)" if solved == "mfu" else ""), budget.mfu, "fraction",
             f"{budget.mfu:.1%}", "model FLOPs / (GPUs x peak x time)"),
        Line("hfu", "HFU (hardware FLOPs utilisation)", hfu, "fraction", f"{hfu:.1%}", "MFU x hardware/model FLOPs"),
        Line("flops_per_gpu_day", "useful FLOPs per GPU-day", budget.flops_per_gpu_day, "FLOPs",
             f"{budget.flops_per_gpu_day:.3e}", "peak x MFU x 86400 s"),
        Line("gpu_days", "GPU-days", budget.gpu_days, "GPU-days", f"{budget.gpu_days:,.0f}",
             "FLOPs / FLOPs per GPU-day"),
        Line("gpu_hours", "GPU-hours", budget.gpu_hours, "GPU-hours", f"{budget.gpu_hours:,.0f}", "GPU-days x 24"),
        Line("gpus", "GPUs" + (" (solved)" if solved == "gpus" else ""), budget.gpus, "GPUs",
             f"{budget.gpus:,.1f} -> {budget.gpus_whole:,} GPUs" if solved == "gpus" else f"{budget.gpus:,.0f}",
             "GPU-days / days" if solved == "gpus" else "given"),
        Line("wall_days", "wall-clock" + (" (solved)" if solved == "days" else ""),
             budget.wall_seconds / SECONDS_PER_DAY, "days", format_duration(budget.wall_seconds),
             "GPU-days / GPUs" if solved == "days" else "given"),
    ))


def _comm_range(inputs: TrainingInputs) -> tuple[float, float, float]:
    if inputs.comm_allowance is not None:
        return (inputs.comm_allowance,) * 3
    return DEFAULT_COMM_ALLOWANCE


def _allowance_section(budget, inputs: TrainingInputs) -> Section:
    low, mid, high = _comm_range(inputs)
    wall = budget.wall_seconds / SECONDS_PER_DAY
    hours = budget.gpu_hours
    with_comm = with_allowance(hours, mid)
    c = inputs.contingency

    def grown(value, fraction, extra=0.0):
        return with_allowance(with_allowance(value, fraction), extra)

    return Section("Allowances (article defaults until comm is modelled)", (
        Line("comm_allowance", "communication allowance", mid, "fraction of compute time", f"+{mid:.0%}",
             "comm/compute; the article's 10-30% at scale", low, high),
        Line("comm_share", "comm / (compute + comm)", comm_share_of_time(mid), "fraction",
             f"{comm_share_of_time(mid):.1%}", "the article's communication-overhead ratio"),
        Line("wall_days_with_comm", "wall-clock with comm allowance", grown(wall, mid), "days",
             f"{grown(wall, mid):.2f} days", "wall-clock x (1 + allowance)", grown(wall, low), grown(wall, high)),
        Line("gpus_with_comm", "GPUs for the same deadline with comm", grown(budget.gpus, mid), "GPUs",
             f"{grown(budget.gpus, mid):,.0f}", "GPUs x (1 + allowance)", grown(budget.gpus, low),
             grown(budget.gpus, high)),
        Line("gpu_hours_with_comm", "GPU-hours with comm allowance", with_comm, "GPU-hours", f"{with_comm:,.0f}",
             "GPU-hours x (1 + allowance)", grown(hours, low), grown(hours, high)),
        Line("gpu_hours_budget", "GPU-hours budget incl. contingency", grown(hours, mid, c), "GPU-hours",
             f"{grown(hours, mid, c):,.0f}", f"with comm x (1 + {c:.0%} contingency: restarts, tuning, failures)",
             grown(hours, low, c), grown(hours, high, c)),
    ))


def _assumptions(inputs: TrainingInputs, gpu, peak: float, budget, calibrated: bool,
                 predicted: bool) -> tuple[Assumption, ...]:
    low, mid, high = _comm_range(inputs)
    if calibrated:
        mfu_source = "calibrated step model (gpuplan calibrate), best layout, communication included"
    elif predicted:
        mfu_source = "predicted: the best layout of `gpuplan plan` on these GPUs, communication included"
    else:
        mfu_source = "article: industry 30-50%, 40% in its A100 example"
    return (
        Assumption("mfu", "MFU", f"{budget.mfu:.2f}" if budget.solved_for != "mfu" else "solved", mfu_source,
                   "--mfu (0.4 or predicted), --calibration", inputs.mfu is not None or predicted),
        Assumption("flops_method", "FLOPs method", inputs.flops_method,
                   "6ND: Kaplan et al. 2020 / the article; exact: PaLM App. B with LM head", "--flops-method",
                   inputs.flops_method != "6nd"),
        Assumption("attention_flops", "attention FLOPs convention", inputs.attention_flops,
                   "full = PaLM/Megatron MFU convention (no causal halving)", "--attention-flops",
                   inputs.attention_flops != "full"),
        Assumption("seq_len", "sequence length (exact FLOPs)", inputs.seq_len, "gpuplan default 4096", "--seq-len",
                   "seq_len" in inputs.given),
        Assumption("recompute", "activation recompute", inputs.recompute_mode,
                   "full ~ +33% compute (article; Korthikanti et al. 2022)", "--recompute",
                   inputs.recompute_mode != "none"),
        Assumption("comm_allowance", "communication allowance", f"{mid:.0%} ({low:.0%}-{high:.0%})",
                   "article: add 10-30% for communication at scale", "--comm-allowance",
                   inputs.comm_allowance is not None),
        Assumption("contingency", "contingency budget", f"{inputs.contingency:.0%}",
                   "article: 20% for restarts, tuning, hardware failures", "--contingency",
                   inputs.contingency != DEFAULT_CONTINGENCY),
        Assumption("peak", f"dense {inputs.dtype} peak", f"{peak / 1e12:.4g} TFLOP/s",
                   "; ".join(gpu.sources[:1]) or "hardware catalog", "--gpu / --dtype"),
    )


def _notes(spec, counts, flops: _Flops, defaults_used: list[str]) -> tuple[str, ...]:
    notes = list(spec.notes)
    if spec.declared_params is not None:
        notes.append(f"bare parameter count: 6ND uses N={format_count(flops.n_6nd)}; the exact count uses a generic "
                     f"Llama-style shape ({spec.num_layers} layers, hidden {spec.hidden_size}, "
                     f"{format_count(counts.total)} params)")
    notes.append("MFU here is compute-only efficiency (the article's convention); communication is the "
                 "separate allowance. If your MFU was measured end-to-end, set --comm-allowance 0.")
    if defaults_used:
        notes.append(f"built-in defaults used: {', '.join(defaults_used)}")
    return tuple(notes)


def _memory_section(spec, gpu, gpus: int, inputs: TrainingInputs):
    """Memory per GPU for the solved GPU count, data-parallel over what tp x pp leaves."""
    from gpuplan.core.memory import MemorySettings
    from gpuplan.core.parallel import ParallelLayout
    from gpuplan.schema.vocabulary import DEFAULT_IMPLEMENTATION
    from gpuplan.jobs.memory.estimate import memory_summary_section

    tp, pp = inputs.tp or 1, inputs.pp or 1
    dp = max(1, gpus // (tp * pp))
    zero = (1 if inputs.zero is None else inputs.zero) if dp > 1 else 0
    layout = ParallelLayout(dp=dp, tp=tp, pp=pp, zero=zero, micro_batch=inputs.micro_batch or 1)
    settings = MemorySettings(seq_len=inputs.seq_len, recipe=inputs.recipe_name, recompute=inputs.recompute_mode,
                              implementation=DEFAULT_IMPLEMENTATION)
    overheads = None
    if inputs.calibration is not None:
        from dataclasses import replace

        from gpuplan.calibrate.apply import apply_to_overheads
        from gpuplan.core.memory import Overheads

        settings = replace(settings, activation_scale=inputs.calibration.activation_memory.value)
        overheads = apply_to_overheads(inputs.calibration, Overheads())
    return memory_summary_section(spec, gpu, layout, settings, overheads)
