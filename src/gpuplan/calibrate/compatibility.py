"""Whether a calibration's factors mean something for the plan at hand, and what carries over.

A calibration is measured on one device, GPU, framework and software stack. Its factors are
ratios of measured to gpuplan-predicted seconds by op class, so they are exact where measured
and an extrapolation elsewhere:

* same GPU and framework: every factor applies;
* another GPU, same framework: the matmul, attention and memory-bound factors are efficiencies
  relative to each part's own roofline (MAMF, kernel tables, HBM bandwidth) and carry over as
  such; the host factor describes the measuring machine's CPU and does not;
* another fused framework (a Megatron log planned under torchtitan or generic): the factors apply to that
  framework's step model, with a warning (they were fitted to the calibrated framework's step);
* another framework (an eager Hugging Face step vs Megatron-Core / torchtitan's fused kernels) or
  a CPU measurement for a GPU plan: the op classes are not the same kernels, so no time factor is
  applied (the memory factors, ratios of activation bytes, still are).

Every case but the first returns a one-line warning that the answer shows first (and in JSON /
the API). Units: none.
"""

from __future__ import annotations

from dataclasses import dataclass

EAGER = "hf"


@dataclass(frozen=True)
class Compatibility:
    """How a calibration meets a plan: which time factors apply, and the warning to show."""

    time: bool
    """The matmul / attention / memory-bound (and compute) factors apply."""
    host: bool
    """The host factor applies (same machine class as measured)."""
    warning: str = ""


def calibration_framework(cal) -> str:
    """'hf' for trials; a log's --framework (whose step calibrate timed it with: calibrate.train_step); '' (a file
    before session 25, whose logs were timed with gpuplan's generic fused model) is 'generic'."""
    return getattr(cal.reference, "framework", "") or "generic"


def calibration_device(cal) -> str:
    env = getattr(cal.reference, "environment", None) or {}
    if env.get("device_type"):
        return str(env["device_type"])
    return "cpu" if tuple(cal.reference.gpus) == ("cpu",) else "cuda"


def compatibility(cal, gpu_id: str | None, framework: str | None) -> Compatibility:
    """What of ``cal`` applies to a plan on ``gpu_id`` under ``framework`` (None: unknown, taken as
    the calibration's own); on a part that runs XLA (a TPU) the warning also says where the fixed memory
    overhead was measured (_overhead_origin)."""
    fits = _compatibility(cal, gpu_id, framework)
    origin = _overhead_origin(cal, gpu_id)
    if not origin:
        return fits
    return Compatibility(fits.time, fits.host, f"{fits.warning}; {origin}" if fits.warning else origin)


def _overhead_origin(cal, gpu_id: str | None) -> str:
    """Where ``cal``'s memory_overhead was measured, said where the planned part ``gpu_id`` runs XLA: the bytes are a
    PyTorch peak (calibrate.measurement: allocated on CUDA, tracked on the CPU; torchtitan logs: reserved) above the
    modelled tensors, carried to the TPU as is (Overheads.measured); '' on any other part or with no overhead."""
    from gpuplan.schema.device_rules import accelerator  # the catalog part (schema imports calibrate: no cycle at load)

    part = accelerator(gpu_id) if gpu_id is not None else None
    overhead = getattr(getattr(cal, "memory_overhead", None), "value", 0.0) or 0.0
    if part is None or not part.runs_xla or overhead == 0.0:
        return ""
    kinds = sorted({m.memory_kind for m in getattr(cal, "measurements", ()) if m.memory_kind
                    and "memory" in (m.used_for or ())})
    kind = f" (torch {' / '.join(kinds)} peak)" if kinds else ""
    return (f"the fixed memory overhead was measured under PyTorch on {', '.join(cal.reference.gpus) or '?'}{kind}, "
            "carried to the TPU as is")


def _compatibility(cal, gpu_id: str | None, framework: str | None) -> Compatibility:
    measured_on = ", ".join(cal.reference.gpus) or "?"
    fw = calibration_framework(cal)
    versions = _versions(cal)
    if calibration_device(cal) == "cpu" and gpu_id not in (None, "cpu"):
        return Compatibility(False, False, f"calibration measured on the CPU, planned on {gpu_id}: its time factors "
                             "describe that CPU and are not applied (memory factors are); profile on the GPU")
    if framework is not None and (framework == EAGER) != (fw == EAGER):
        return Compatibility(False, False, f"calibration measured under --framework {fw}, planned under {framework}: "
                             "different kernels, time factors not applied (memory factors are)")
    other = (f"; fitted to the --framework {fw} step, planned under {framework}: its factors carried over to "
             f"{framework}'s step model" if framework not in (None, fw) else "")  # both fused: an extrapolation
    if gpu_id is not None and gpu_id not in cal.reference.gpus:
        return Compatibility(True, False, f"calibration measured on {measured_on}{versions}, planned on {gpu_id}: "
                             "matmul, attention and memory-bound factors carried over as efficiencies relative to "
                             f"{gpu_id}'s roofline, the host factor not{other}")
    return Compatibility(True, True, f"calibration{other[1:]}" if other else "")


def _versions(cal) -> str:
    env = getattr(cal.reference, "environment", None) or {}
    parts = [f"{k} {env[k]}" for k in ("torch", "transformers") if env.get(k)]
    return f" ({', '.join(parts)})" if parts else ""
