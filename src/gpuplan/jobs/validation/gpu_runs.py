"""Single-GPU training steps measured on a real GPU (catalog/reference/gpu_memory_measurements.yaml,
scripts/gpu_memory_check.py) against what a user gets from ``gpuplan plan`` and ``gpuplan memory``
asked for the same run: the model at the measured depth (a config.json with num_hidden_layers set),
``--gpu <the part> --gpus 1 --tp 1 --pp 1 --cp 1 --zero 0 --framework hf``, the run's sequence
length, micro-batch (= global batch), recipe (bf16 / amp), recompute, LoRA rank, attention kernel
and optimizer implementation. Nothing here is fitted to these runs (docs/step.md): every
constant of the eager step model (core.time) comes from the framework's code or a cited kernel
measurement.

Families (the accuracy table's rows): bf16 dense, amp, LoRA, full recompute, selective recompute,
MoE, eager attention, torch.compile (not modelled: reported, not scored).
Units: seconds, bytes.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gpuplan.catalog import model_entry

GPU_IDS = {"NVIDIA H200": "h200-sxm", "NVIDIA H100 80GB HBM3": "h100-sxm", "NVIDIA A100-SXM4-80GB": "a100-sxm4-80gb"}


@dataclass(frozen=True)
class GpuRun:
    """One measured configuration and gpuplan's answers for it."""

    id: str
    family: str
    gpu: str
    measured_step_s: float
    predicted_step_s: float | None
    measured_allocated: float | None
    predicted_allocated: float | None
    note: str = ""


def family_of(cfg: dict, spec_moe: bool) -> str:
    """The accuracy row a configuration belongs to (the first that applies)."""
    if cfg.get("compile"):
        return "torch.compile"
    if cfg.get("lora"):
        return "LoRA"
    if spec_moe:
        return "MoE"
    if cfg.get("attention") == "eager":
        return "eager attention"
    if cfg.get("precision") == "amp":
        return "amp"
    if cfg.get("recompute") in ("full", "selective"):
        return f"{cfg['recompute']} recompute"
    return "bf16 dense"


def user_flags(cfg: dict, part: str) -> dict:
    """The inputs a user types for the measured run (PlanInputs / MemoryInputs fields)."""
    flags = {"gpu": part, "framework": "hf", "seq_len": cfg["seq_len"], "micro_batch": cfg["micro_batch"],
             "recipe": "amp" if cfg.get("precision") == "amp" else "bf16", "recompute": cfg.get("recompute", "none"),
             "optimizer_impl": "foreach" if "foreach" in str(cfg.get("optimizer", "foreach")) else "fused"}
    if cfg.get("lora"):
        flags.update(finetune="lora", lora_rank=int(cfg.get("lora_rank", 16)))
    if cfg.get("attention") == "eager":
        flags["attention_kernel"] = "eager"
    if cfg.get("expandable_segments"):
        flags["allocator"] = "expandable"
    return flags


def _model_config(row: dict) -> dict:
    cfg = row["config"]
    hf = dict(row.get("hf_config") or model_entry(cfg["model"])["config"])
    hf["num_hidden_layers"] = cfg["layers"]
    return hf


def predict(row: dict, folder: Path, calibration=None) -> GpuRun:
    """gpuplan's step time (plan) and allocated peak (memory) for one measured row (with
    ``calibration``: a Calibration applied as --calibration would)."""
    from gpuplan.jobs.memory.estimate import estimate_memory
    from gpuplan.jobs.memory.schema import MemoryInputs
    from gpuplan.jobs.plan.estimate import plan_report
    from gpuplan.jobs.plan.schema import PlanInputs

    cfg = row["config"]
    path = folder / row["id"] / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    hf_config = _model_config(row)
    path.write_text(json.dumps(hf_config), encoding="utf-8")
    part = GPU_IDS.get(row["gpu"], "h200-sxm")
    flags = user_flags(cfg, part)
    plan = plan_report(PlanInputs(model=str(path), gpus=1, tp=1, pp=1, cp=1, zero=0, global_batch=cfg["micro_batch"],
                                  tokens="1B", calibration=calibration, **flags))
    memory = estimate_memory(MemoryInputs(model=str(path), **flags))
    moe = bool(hf_config.get("num_experts") or hf_config.get("num_local_experts"))
    family = family_of(cfg, moe)
    return GpuRun(row["id"], family, part, row["timing"]["step_time_s"],
                  None if family == "torch.compile" else plan.value("best_step_seconds"),
                  row.get("memory", {}).get("peak_allocated_bytes"), memory.value("peak_allocated"),
                  "torch.compile is not in the eager model" if family == "torch.compile" else "")


def measured_rows() -> list[dict]:
    """The packaged GPU measurements (catalog/reference/gpu_memory_measurements.yaml)."""
    from gpuplan.catalog import reference_yaml

    return reference_yaml("gpu_memory_measurements.yaml")["measurements"]


def gpu_run_cases(rows: list[dict] | None = None, calibration=None) -> list[GpuRun]:
    """Every measured row with a step time, predicted through the user's door."""
    if rows is None:
        rows = measured_rows()
    done = [r for r in rows if r.get("status") == "ok" and (r.get("timing") or {}).get("step_time_s")]
    with tempfile.TemporaryDirectory(prefix="gpuplan-gpu-runs-") as tmp:
        return [predict(r, Path(tmp), calibration) for r in done]


KIND = "step time: one GPU, --framework hf ({family}; H200 runs, nothing fitted on them)"
MEMORY_KIND = "memory: one GPU, --framework hf, allocated peak (H200 runs)"


def gpu_step_rows() -> list[tuple[str, str, float, float, str]]:
    """The runs as (id, kind, measured, predicted, GPU) rows for gpuplan validate (docs/accuracy.md):
    step time per family, allocated memory in one kind. torch.compile runs are not scored (not in
    the eager model)."""
    out = []
    for run in gpu_run_cases():
        if run.predicted_step_s is not None:
            out.append((run.id, KIND.format(family=run.family), run.measured_step_s, run.predicted_step_s, run.gpu))
        if run.measured_allocated and run.family != "torch.compile":
            out.append((run.id, MEMORY_KIND, run.measured_allocated, run.predicted_allocated, run.gpu))
    return out
