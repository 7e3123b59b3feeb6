"""Values a real run can log: refuse the rest, naming the log's own field (one line, exit 2).

A step time, rate or memory peak that is negative, zero, not finite or beyond physics (a step
faster than 0.1 ms or slower than 11 days, an MFU above 100 %, TFLOP/s above the GPU's peak,
memory above its capacity) is an error in the log or in the flags, never a measurement to fit.
"""

from __future__ import annotations

import math
from typing import Any

from gpuplan.adapters.training_logs import GiB, MiB, TrainingLog
from gpuplan.errors import InputError, whole_or

# record field -> (lowest, highest, lowest allowed itself?) in SI units
BOUNDS = {"step_time_s": (1e-4, 1e6, True), "tokens_per_s": (0.0, 1e14, False),
          "tokens_per_s_per_device": (0.0, 1e8, False), "tflops_per_device": (0.0, 1e5, True),
          "mfu": (0.0, 1.0, True), "memory_bytes": (0.0, 1e14, False)}
# per format: record field -> (the log's name for it, factor from SI to the log's unit)
LABELS: dict[str, dict[str, tuple[str, float]]] = {
    "torchtitan": {"tokens_per_s_per_device": ("tps", 1.0), "tflops_per_device": ("tflops", 1.0),
                   "mfu": ("mfu (%)", 100.0), "memory_bytes": ("memory (GiB)", 1 / GiB)},
    "megatron": {"step_time_s": ("elapsed time per iteration (ms)", 1000.0),
                 "memory_bytes": ("max allocated (MB)", 1 / MiB),
                 "tflops_per_device": ("throughput per GPU (TFLOP/s/GPU)", 1.0)},
    "hf-trainer": {"step_time_s": ("train_runtime / steps (s)", 1.0)},
    "table": {"tflops_per_device": ("tflops", 1.0), "memory_bytes": ("memory_gib", 1 / GiB),
              **{k: (k, 1.0) for k in ("step_time_s", "tokens_per_s", "tokens_per_s_per_device", "mfu")}},
}


def label(fmt: str, name: str, kind: str | None = None) -> tuple[str, float]:
    """The log's name for record field ``name`` and the factor from SI units to the log's unit."""
    if fmt == "table" and name == "memory_bytes" and kind == "reserved":
        return "memory_reserved_gib", 1 / GiB
    return LABELS.get(fmt, {}).get(name, (name, 1.0))


def check_value(value: float | None, name: str, fmt: str, source: str, where: str = "",
                kind: str | None = None) -> None:
    """InputError naming the log's field when ``value`` (record field ``name``, SI units) is not
    one a real run logs: not finite, negative, zero where that is impossible, or absurd."""
    if value is None:
        return
    low, high, closed = BOUNDS[name]
    if math.isfinite(value) and (low <= value if closed else low < value) and value <= high:
        return
    field, scale = label(fmt, name, kind)
    lowest = f"from {low * scale:g}" if closed else f"above {low * scale:g}"
    raise InputError(field, _round(value * scale), f"in {source}{where}: a real run logs a finite number {lowest} "
                     f"to {high * scale:.4g}")


def check_log(log: TrainingLog) -> TrainingLog:
    """Every logged value a real run can log; each step once."""
    seen: set[int] = set()
    for r in log.records:
        if r.step in seen:
            raise InputError("step", r.step, f"in {log.source}: logged twice; give one run's log, each step once")
        seen.add(r.step)
        for name in BOUNDS:
            check_value(getattr(r, name), name, log.format, log.source, f", step {r.step}", r.memory_kind)
    check_value(log.meta.get("memory_bytes"), "memory_bytes", log.format, log.source)
    return log


def check_against_gpu(log: TrainingLog, gpu: Any, source: str) -> None:
    """Per-device TFLOP/s within the GPU's peak (any dtype) and memory within its capacity."""
    peak = float_peak_flops(gpu) / 1e12
    for r in log.records:
        if r.tflops_per_device is not None and r.tflops_per_device > peak:
            field, _ = label(log.format, "tflops_per_device")
            raise InputError(field, r.tflops_per_device, f"in {source}, step {r.step}: above the {gpu.name}'s peak, "
                             f"{peak:g} TFLOP/s; check --gpu")
    memories = [(r.memory_bytes, r.memory_kind, f", step {r.step}") for r in log.records if r.memory_bytes]
    if log.meta.get("memory_bytes"):
        memories.append((log.meta["memory_bytes"], log.meta.get("memory_kind"), ""))
    for memory, kind, where in memories:
        if memory > gpu.memory_bytes:
            field, scale = label(log.format, "memory_bytes", kind)
            raise InputError(field, _round(memory * scale), f"in {source}{where}: above the capacity of the "
                             f"{gpu.name}, {gpu.memory_bytes * scale:.4g}; check --gpu and the unit")


def check_layout_given(measurement: Any, context: Any, gpu: Any) -> Any:
    """A training log does not record its run's tensor, pipeline and expert degrees or ZeRO stage;
    without --tp, --pp, --ep or --zero the format's defaults stand in (tp, pp, ep 1: plain data
    parallelism, or torchtitan's FSDP). When that default cannot be the run — gpuplan's memory
    model puts it above the capacity of the GPU the run used — the fit would read nonsense (a
    Mixtral log on 16 H100 read as tp 1 ep 1: 800 GiB modelled per 80 GB GPU, a fixed memory
    overhead of -747 GiB written, exit 0). Refused, naming the flags. Returns ``measurement``."""
    unset = context.tp == 1 and context.pp == 1 and context.ep == 1 and context.zero is None
    if measurement.world_size <= 1 or not unset:
        return measurement
    from gpuplan.calibrate.predict import case_of, memory_parts

    m = measurement
    peak = memory_parts(case_of(m)).peak()
    if peak <= gpu.memory_bytes:
        return m
    logged = f"; the log shows {m.peak_memory_bytes / GiB:.2f} GiB" if m.peak_memory_bytes else ""
    raise InputError("tp/pp/ep/zero", "not given", f"{m.source} ({m.kind} log, {m.world_size} GPUs) does not record "
                     f"its layout, and read as tp 1, pp 1, ep 1, ZeRO {m.zero} {m.model} needs {peak / GiB:.2f} GiB "
                     f"per GPU, more than the {gpu.memory_bytes / GiB:.2f} GiB of the {gpu.name} it ran on{logged}: "
                     "give the run's --tp, --pp, --ep and --zero (e.g. --tp 4 --ep 4 --zero 1)")


def check_step_time(step: float, source: str, field: str, rate: float) -> None:
    """A step time derived from a throughput (tokens / rate) within 0.1 ms .. 1e6 s."""
    low, high, _ = BOUNDS["step_time_s"]
    if not low <= step <= high:
        raise InputError(field, rate, f"in {source} (median): implies {step:.3g} s per step (batch x sequence / "
                         f"rate); a real step takes {low:g} to {high:g} s; check the log and --global-batch/--seq-len")


RATE_AGREEMENT = 0.05
"""How far a log's own rates may disagree (a table's medians of rounded columns: a step time printed to 3 digits and a
rate to 5 agree within 0.5 %; 5 % leaves room for steps of uneven length, and is far below a wrong batch or GPU
count, which is off by a whole factor)."""


def check_rates_agree(summary: Any, gpus: int, batch: int, seq_len: int, source: str, fmt: str,
                      batch_given: bool) -> None:
    """A log's rates against each other and the flags (hostile w25: each was read alone, the rest ignored): the whole
    job's tokens_per_s is its devices' sum, tokens_per_s_per_device x --gpus; and a logged step time x tokens per
    second is the tokens a step, --global-batch x --seq-len. The step time is fitted with the batch's FLOPs, so a
    batch the log contradicts fits a factor off by that ratio."""
    total, per, step = summary.tokens_per_s, summary.tokens_per_s_per_device, summary.step_time_s
    if total and per and abs(per * gpus - total) > RATE_AGREEMENT * total:
        raise InputError(label(fmt, "tokens_per_s_per_device")[0], whole_or(per), f"in {source} (median): x {gpus:,} GPUs "
                         f"(--gpus) = {per * gpus:,.0f} tokens/s, but tokens_per_s (the whole job) is {total:,.0f}; "
                         "the job's rate is the sum over its devices: check the columns and --gpus")
    rate = total or (per * gpus if per else None)
    if not (step and rate):
        return
    logged, read = step * rate, batch * seq_len
    if abs(logged - read) <= RATE_AGREEMENT * logged:
        return
    whole = round(logged / seq_len)
    hint = (f" = {whole:,} sequences of {seq_len:,}: give --global-batch {whole}" if whole >= 1 and
            abs(whole * seq_len - logged) <= RATE_AGREEMENT * logged else f"; no whole batch of --seq-len {seq_len:,}")
    raise InputError("global_batch", batch if batch_given else "not given", f"{batch:,} sequence{'s' * (batch != 1)} x --seq-len "
                     f"{seq_len:,} = {read:,} tokens a step{'' if batch_given else ' (--micro-batch x dp)'}, but "
                     f"{source} logs {step:.4g} s a step at {rate:,.0f} tokens/s = {logged:,.0f} tokens a step"
                     f"{hint} (or check --seq-len and --gpus)")


def check_step_flops(step: float, tokens: float, gpus: int, model: str, gpu: Any, source: str) -> None:
    """A step of ``tokens`` tokens on ``gpus`` GPUs in ``step`` seconds within the GPU's largest
    peak (any dtype): training does at least 6 FLOPs per active non-embedding parameter per token
    (Kaplan et al. 2020 Sec. 2.1, C ~ 6N: forward 2N, backward 4N; recompute and attention only
    add). Past it the flags misdescribe the run (`--global-batch 10000000` on a 64-sequence log fit
    a compute factor of 0.000x and an attention efficiency of 2,319,191%, exit 0)."""
    from gpuplan.adapters.resolve import resolve_model

    flops = training_flops_floor(resolve_model(model), tokens)
    peak = float_peak_flops(gpu)
    if flops / (step * gpus) > peak:
        raise InputError("global_batch/seq_len/gpus", f"{tokens:,.0f} tokens per {step:.3g} s step on {gpus:,} GPUs",
                         f"in {source}: needs at least {flops / (step * gpus) / 1e12:,.0f} TFLOP/s per GPU (6 x "
                         f"{model}'s active parameters per token), above the {gpu.name}'s peak {peak / 1e12:,.0f}; "
                         "check --global-batch, --seq-len and --gpus against the run")


def float_peak_flops(gpu: Any) -> float:
    """The GPU's largest peak over its float dtypes, FLOP/s (the int8 / int4 peaks left out): the
    fastest any training step could run (check_against_gpu, check_step_flops)."""
    return max(f for dtype, f in gpu.peak_flops if not dtype.startswith("int"))


def training_flops_floor(spec: Any, tokens: float) -> float:
    """Least FLOPs a training step of ``tokens`` tokens does: 6 per active non-embedding parameter per
    token (Kaplan et al. 2020 Sec. 2.1, C ~ 6N: forward 2N, backward 4N; recompute and attention only add)."""
    from gpuplan.core.model.spec import count_parameters

    counts = count_parameters(spec)
    return 6 * (counts.active - counts.embedding - counts.position_embedding) * tokens


def _round(value: float) -> float:
    return float(f"{value:.12g}") if math.isfinite(value) else value
