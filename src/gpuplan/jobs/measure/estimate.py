"""``gpuplan measure``: measure a real HF model's training step on the CPU (FakeTensorMode, no
weights, no GPU) and show it beside the analytic estimate, category by category."""

from __future__ import annotations

from typing import Any

from gpuplan.errors import InputError
from gpuplan.jobs.measure.dropout_note import math_path_note
from gpuplan.jobs.measure.schema import MeasureInputs
from gpuplan.jobs.validation.memory import (
    comparison_table,
    estimate_inputs,
    estimated_categories,
)
from gpuplan.report.model import Line, Report, Section, Table
from gpuplan.schema.model_fields import sequence_note

MAX_FULL_DEPTH = 256
"""Layers measured at full depth (--depths not given): twice the deepest catalog model (llama-3.1-405b, 126); a
config.json takes up to 10,000 (adapters.config_fields), ~0.2 s a layer here."""
SHOWN_ZERO_GIB = 0.0005
"""Below this a measured category prints as 0.000 GiB: a percentage against it says nothing."""


def model_config(model: str) -> tuple[dict[str, Any], str]:
    """The HF config dict and name of a catalog model, a Hub id or a config.json."""
    from gpuplan.adapters.resolve import model_config as resolve

    config, name, _ = resolve(model)
    return config, name


def _layers_of(config: dict[str, Any]) -> int:
    cfg = config.get("text_config", config)
    return int(cfg.get("num_hidden_layers") or cfg.get("n_layer") or 0)


def run_measurement(inputs: MeasureInputs) -> tuple[dict[str, Any], dict[str, Any], str]:
    """(config, measured {peak_bytes, peak_phase, at_peak, versions, ...}, how). A refusal of the attention path
    measure_training_memory builds (its argument ``attention``) names --attention-kernel, as the user gave it."""
    try:
        return _measured(inputs)
    except InputError as refusal:
        if refusal.field != "attention":
            raise
        raise refusal.retold("attention_kernel", inputs.attention_kernel, refusal.expected) from None


def _measured(inputs: MeasureInputs) -> tuple[dict[str, Any], dict[str, Any], str]:
    from gpuplan.profile import extrapolate_to_depth, measure_training_memory

    config, _ = model_config(inputs.model)
    kwargs = inputs.case()
    full = _layers_of(config)
    if inputs.depths is None:
        if full > MAX_FULL_DEPTH:  # one fake-tensor pass per layer: 10,000 layers ran past 30 min (wave 9)
            raise InputError("depths", None, f"measuring all {full:,} layers builds and runs each under fake tensors "
                             f"(256 took 56 s on 2 cores); at most {MAX_FULL_DEPTH} in full: give --depths, e.g. 2,4, "
                             "to extrapolate to the full depth")
        m = measure_training_memory(config, **kwargs)
        return config, {"peak_bytes": m.peak_bytes, "peak_phase": m.peak_phase, "at_peak": m.at_peak,
                        "versions": m.versions, "wall_seconds": m.wall_seconds}, f"full depth ({full} layers)"
    a, b = inputs.depths
    if not b < full:
        raise InputError("depths", f"{a},{b}", f"two increasing depths below the model's {full} layers, e.g. 2,4")
    ma = measure_training_memory(config, num_layers=a, **kwargs)
    mb = measure_training_memory(config, num_layers=b, **kwargs)
    ext = extrapolate_to_depth(ma, mb, full)
    how = f"extrapolated from {a} and {b} layers to {full}" + "".join(f"; {w}" for w in ext["warnings"])
    return config, {"peak_bytes": ext["peak_bytes"], "peak_phase": ext["peak_phase"], "at_peak": ext["at_peak"],
                    "versions": ma.versions, "wall_seconds": ma.wall_seconds + mb.wall_seconds}, how


def comparison(measured: dict[str, Any], estimated: dict[str, Any]) -> Table:
    """The category table, with "n/a" for the difference where the measurement prints as 0.000
    GiB (a nearly empty category: -100% or +37,000% would be noise, not an error)."""
    table = comparison_table(measured, estimated)
    rows = []
    for row in table.rows:
        category, shown, _, diff = row
        if category != "phase of the peak" and diff not in ("", "0") and float(shown) < SHOWN_ZERO_GIB:
            row = (*row[:3], "n/a")
        rows.append(row)
    return Table(table.title, table.columns, tuple(rows))


MAX_TENSOR_BYTES = 2**63 - 1
"""torch's limit on one tensor's storage (c10 TensorImpl: 'Storage size calculation overflowed')."""


def check_tensor_sizes(spec: Any, inputs: MeasureInputs) -> None:
    """The step's widest fp32 tensors within torch's storage limit: the logits (micro-batch x
    sequence x vocabulary), the MLP's activations (x its width) and eager attention's scores (x heads
    x sequence); past it torch raised 'Storage size calculation overflowed' (exit 70) on
    `--micro-batch 1e9 --seq-len 16M`."""
    mb, seq = inputs.micro_batch or 1, inputs.seq_len
    widest = max(spec.vocab_size, spec.hidden_size, spec.mlp.intermediate_size)
    scores = spec.attention.num_heads * seq if inputs.attention == "eager" else 0
    needed = 4 * mb * seq * max(widest, scores)
    if needed > MAX_TENSOR_BYTES:
        raise InputError("micro_batch/seq_len", f"{mb:,} x {seq:,} tokens", f"one fp32 tensor of the step would "
                         f"take {needed / 2**60:,.0f} EiB, past torch's 8 EiB limit; lower --micro-batch or --seq-len")


def measure_report(inputs: MeasureInputs) -> Report:
    spec = inputs.spec()  # first: a config gpuplan cannot read is refused before the measurement
    check_tensor_sizes(spec, inputs)
    config, measured, how = run_measurement(inputs)
    layout, settings = estimate_inputs(inputs.case())
    estimated = estimated_categories(spec, layout, settings)
    error = (estimated["peak"] - measured["peak_bytes"]) / measured["peak_bytes"] if measured["peak_bytes"] else None
    versions = ", ".join(f"{k} {v}" for k, v in measured["versions"].items())
    section = Section("Measurement", (
        Line("measured_peak", "measured allocated peak", measured["peak_bytes"], "bytes",
             f"{measured['peak_bytes'] / 2**30:.3f} GiB", how),
        Line("estimated_peak", "estimated allocated peak", estimated["peak"], "bytes",
             f"{estimated['peak'] / 2**30:.3f} GiB", f"recipe '{settings.recipe}', implementation 'hf'"),
        Line("error", "estimate error", error, "fraction", "n/a" if error is None else f"{error:+.2%}",
             "(estimated - measured) / measured"),
        Line("wall_seconds", "measurement time", measured["wall_seconds"], "s", f"{measured['wall_seconds']:.1f} s"),
        Line("versions", "versions", versions),
    ))
    table = comparison(measured, estimated)
    gap = measured["at_peak"].get("activation", 0) - estimated["activation"]
    dropout = math_path_note(config, spec, inputs.attention_kernel, inputs.micro_batch or 1, inputs.seq_len, gap)
    report_inputs = tuple(Line(k, k.replace("_", " "), v) for k, v in {"model": spec.name, **inputs.case()}.items())
    return Report("measure", f"Measured training memory: {spec.name} (CPU, FakeTensorMode)", report_inputs, (),
                  (section,), ("allocated bytes of PyTorch tensors; a GPU adds the CUDA context, NCCL buffers and "
                               "allocator caching (see `gpuplan memory`)", *filter(None, [sequence_note(inputs, spec), dropout])), (table,),
                  headline=("measured_peak", "estimated_peak", "error", "wall_seconds"), summary_table=table.title)
