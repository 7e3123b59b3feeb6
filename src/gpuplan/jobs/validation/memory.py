"""Estimate vs measurement for training memory: the shared mapping from a measurement's
settings to the analytic model's inputs, the side-by-side table of ``gpuplan measure``, and
the memory kind of ``gpuplan validate`` (over the packaged measurement set)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuplan.core.memory import training as M
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.parallel import ParallelLayout
from gpuplan.report.model import Table

GiB = 2**30
# measured category -> the estimate's categories it corresponds to
CATEGORY_MAP = {
    "param": ("weights", "unsharded_params"),
    "grad": ("grads",),
    "optimizer_state": ("optimizer", "master"),
    "activation": ("activations", "outside_layers"),
    "temp": ("temporaries", "all_gather"),
}


def estimate_inputs(case: dict[str, Any]) -> tuple[ParallelLayout, M.MemorySettings]:
    """The layout and settings that describe what ``gpuplan measure`` ran."""
    world = int(case.get("world_size", 1))
    fp32_params = case.get("precision") == "fp32-autocast"
    recipe = ("fsdp2" if world > 1 else "amp") if fp32_params else "bf16"
    layout = ParallelLayout(dp=world, zero=3 if world > 1 else 0, micro_batch=int(case.get("micro_batch", 1)))
    settings = M.MemorySettings(seq_len=int(case["seq_len"]), recipe=recipe, recompute=case.get("recompute", "none"),
                                attention_kernel="eager" if case.get("attention") == "eager" else "flash",
                                optimizer_impl="foreach" if case.get("foreach", True) else "forloop",
                                device="cpu")  # the oracle runs on the CPU (dropout keeps noise tensors)
    return layout, settings


def estimated_categories(spec: ModelSpec, layout: ParallelLayout, settings: M.MemorySettings) -> dict[str, float]:
    """The estimate's peak in the measurement's categories (plus 'peak')."""
    peak = M.peak_memory(spec, layout, settings)
    working = peak.fsdp_working_set
    recipe = M.RECIPES[settings.recipe]
    params = M.stage_params(spec, layout, peak.stage)
    gather = recipe.compute_bytes * params.largest_layer if working else 0.0
    parts = {"weights": peak.weights, "unsharded_params": working - gather, "grads": peak.grads,
             "optimizer": peak.optimizer, "master": peak.master, "activations": peak.activations,
             "outside_layers": peak.outside_layers, "temporaries": peak.temporaries, "all_gather": gather}
    out = {category: sum(parts[k] for k in keys) for category, keys in CATEGORY_MAP.items()}
    out["peak"] = peak.allocated
    out["phase"] = peak.peak_phase
    return out


def comparison_table(measured: dict[str, Any], estimated: dict[str, Any]) -> Table:
    rows = []
    for category in (*CATEGORY_MAP, "peak"):
        m = measured["peak_bytes"] if category == "peak" else measured["at_peak"].get(category, 0)
        e = estimated[category]
        diff = f"{(e - m) / m:+.1%}" if m else ("0" if not e else "n/a")
        rows.append((category, f"{m / GiB:.3f}", f"{e / GiB:.3f}", diff))
    rows.append(("phase of the peak", measured["peak_phase"], estimated["phase"], ""))
    return Table("measured vs estimated (GiB, allocated)", ("category", "measured", "estimated", "difference"),
                 tuple(rows))


@dataclass(frozen=True)
class MemoryCase:
    id: str
    quantity: str
    """'peak' (allocated peak of the step) or 'activations' (held at the end of forward)."""
    measured: float
    estimated: float
    method: str

    @property
    def error(self) -> float:
        return (self.estimated - self.measured) / self.measured


def memory_reference() -> dict[str, Any]:
    from gpuplan.catalog import reference_yaml

    return reference_yaml("memory_measurements.yaml")


def memory_cases() -> list[MemoryCase]:
    """Estimate each packaged measurement case (kind: memory vs gpuplan measure)."""
    from gpuplan.adapters.hf_config import model_spec_from_hf_config
    from gpuplan.catalog import model_entries

    cases = []
    for case in memory_reference()["cases"]:
        config = {**model_entries()[case["model"]]["config"], **case.get("config_overrides", {})}
        spec = model_spec_from_hf_config(config, name=case["model"])
        layout, settings = estimate_inputs(case)
        peak = M.peak_memory(spec, layout, settings)
        cases.append(MemoryCase(case["id"], "peak", float(case["measured_peak_bytes"]), peak.allocated,
                                case["method"]))
        measured_act = case.get("measured_activation_bytes")
        if measured_act:
            estimate = _activations_end_of_forward(spec, layout, settings)
            cases.append(MemoryCase(case["id"], "activations", float(measured_act), estimate, case["method"]))
    return cases


def _activations_end_of_forward(spec: ModelSpec, layout: ParallelLayout, settings: M.MemorySettings) -> float:
    """Activations held after forward + loss (layers, logits/loss tensors and, under autocast, the
    bf16 weight copies saved for backward), one micro-batch on one GPU."""
    from gpuplan.core.memory import activations as A

    recipe = M.RECIPES[settings.recipe]
    autocast = recipe.autocast_weight_copies
    tokens = layout.micro_batch * settings.seq_len
    kw = dict(kernel=settings.attention_kernel, compute_bytes=recipe.compute_bytes, dropout=spec.dropout,
              autocast=autocast, mask_bytes=1 if settings.device == "cuda" else recipe.compute_bytes)
    per_token = A.saved_bytes_per_token(spec, settings.seq_len, spec.num_layers, spec.num_moe_layers,
                                        recompute=settings.recompute, **kw)
    outside = A.outside_layer_bytes(spec, compute_bytes=recipe.compute_bytes, autocast=autocast).saved
    params = M.stage_params(spec, layout, 0)
    copies = 2.0 * (params.matrices + spec.vocab_size * spec.hidden_size) if autocast else 0.0
    return (per_token + outside) * tokens + copies
