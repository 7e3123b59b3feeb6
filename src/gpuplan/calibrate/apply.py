"""Use a Calibration in gpuplan's estimates: the helpers train / plan / memory call.

Time. The step model's compute per micro-batch is GEMMs at MAMF x d / (d + d_half) of peak,
attention at ``attention_efficiency`` of peak, elementwise ops and the optimizer step at
``hbm_efficiency`` of the memory bandwidth (core/time/step.py). A compute factor f (measured /
predicted) is applied by

    gemm_d_half'     = f x (d_ref + d_half) - d_ref    (GEMM time x f at the calibrated dimension d_ref)
    hbm_efficiency'  = hbm_efficiency / f              (elementwise + optimizer time x f)

and the attention factor g by ``attention_efficiency' = attention_efficiency / g``. At the
measured GEMM dimension this scales the predicted compute exactly by f; at other dimensions
(another tp, micro-batch or model) the saturating shape d / (d + d_half) carries it, which is
an extrapolation. d_half' is floored at 0 (a measurement faster than MAMF allows cannot be
represented; the report says so). The communication factor k divides the scale-up and
scale-out efficiencies of the Cluster (exposed communication ~ x k; exact when nothing overlaps).

Memory. ``apply_to_memory`` scales the activation-like bytes at the start of backward by the
activation factor and adds the fixed overhead to the allocated peak. For the vectorised planner
(the planner's core/memory.peak_allocated has no per-part output) ``apply_to_overheads`` adds the fixed
overhead to the per-GPU fixed bytes, and ``apply_to_memory_settings`` sets
``MemorySettings.activation_scale`` when core/memory/training.py has that field.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from gpuplan.calibrate import predict as P
from gpuplan.calibrate.model import Calibration
from gpuplan.core.memory import training as M
from gpuplan.core.time import step as S
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.comm.topology import Cluster


def _accelerator(gpu_id: str):
    """The catalog part for ``gpu_id`` (its kernel efficiencies follow ``kernels_like``), else the bare id."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.errors import InputError

    try:
        return load_accelerator(gpu_id) if gpu_id else gpu_id
    except InputError:
        return gpu_id


def apply_to_step_settings(cal: Calibration, settings: S.StepSettings, gpu_id: str | None = None,
                           framework: str | None = None) -> S.StepSettings:
    """StepSettings whose predicted compute time is the calibrated one (see the module docstring).
    ``gpu_id``: the accelerator planned for (its default attention efficiency is scaled);
    ``framework``: the plan's (None: 'hf' when the settings time an eager stack). What carries over
    to another GPU or stack follows calibrate.compatibility (a CPU calibration or another
    framework's: no time factor)."""
    from gpuplan.calibrate.compatibility import compatibility

    if framework is None and settings.eager_ops is not None:
        framework = "hf"
    fits = compatibility(cal, gpu_id, framework)
    if not fits.time:
        return settings
    if settings.eager_ops is not None:
        host = cal.host_time.value if fits.host else 1.0
        return replace(settings, eager_factors=(cal.compute_time.value, cal.attention_time.value,
                                                cal.memory_time.value, host))
    f, g = cal.compute_time.value, cal.attention_time.value
    d = cal.reference.gemm_dim
    gpu = gpu_id or (cal.reference.gpus[0] if cal.reference.gpus else "")
    e_attn = settings.attention_efficiency or S.attention_efficiency(_accelerator(gpu))
    return replace(settings, gemm_d_half=max(0.0, f * (d + settings.gemm_d_half) - d),
                   hbm_efficiency=settings.hbm_efficiency / f, attention_efficiency=e_attn / g)


def gemm_floor_reached(cal: Calibration, settings: S.StepSettings | None = None) -> bool:
    """True when the compute factor asks for GEMMs faster than MAMF (d_half' would be < 0)."""
    d = cal.reference.gemm_dim
    d_half = (settings or S.StepSettings()).gemm_d_half
    return cal.compute_time.value * (d + d_half) - d < 0


def apply_to_cluster(cal: Calibration, cluster: Cluster) -> Cluster:
    """A Cluster whose communication takes ``comm_time`` times as long."""
    k = cal.comm_time.value
    return replace(cluster, scale_up_efficiency=cluster.scale_up_efficiency / k,
                   scale_out_efficiency=cluster.scale_out_efficiency / k)


def calibration_warning(cal: Calibration, gpu_id: str | None, framework: str | None) -> str:
    """The one line a plan shows first when ``cal`` was measured elsewhere ('' when it matches)."""
    from gpuplan.calibrate.compatibility import compatibility

    return compatibility(cal, gpu_id, framework).warning


def calibrated_step_seconds(cal: Calibration, case: P.Case, world_size: int) -> float:
    """Calibrated seconds per step for a measured case (the same path plan would take)."""
    cluster = apply_to_cluster(cal, P.cluster_of(case, world_size))
    settings = apply_to_step_settings(cal, case.step, case.gpu.id if case.gpu else None)
    return P.step_parts(case, settings, cluster).total


@dataclass(frozen=True)
class CalibratedMemory:
    """Allocated peak per GPU before and after calibration (bytes)."""

    default_bytes: float
    calibrated_bytes: float
    low_bytes: float | None
    high_bytes: float | None
    phase: str


def apply_to_memory(cal: Calibration, spec: ModelSpec, layout: ParallelLayout,
                    settings: M.MemorySettings) -> CalibratedMemory:
    """The calibrated allocated peak (activation factor and fixed overhead applied); low/high
    from the factors' ranges where known."""
    case = P.Case(spec, layout, settings, S.StepSettings(seq_len=settings.seq_len), None)
    parts = P.memory_parts(case)
    a, c = cal.activation_memory, cal.memory_overhead
    value = parts.peak(a.value, c.value)
    low = high = None
    if a.low is not None or c.low is not None:
        low = parts.peak(a.low if a.low is not None else a.value, c.low if c.low is not None else c.value)
        high = parts.peak(a.high if a.high is not None else a.value, c.high if c.high is not None else c.value)
    phase = "backward start" if parts.at_backward(a.value) else "optimizer step"
    return CalibratedMemory(parts.peak(), value, low, high, phase)


def apply_to_overheads(cal: Calibration, overheads: M.Overheads) -> M.Overheads:
    """Overheads with the fitted fixed memory overhead added to the per-device fixed bytes (Overheads.measured). The
    overhead is what a trial measured above the predicted allocated peak that does not scale with activations
    (calibrate.fit._fit_memory: allocator rounding, workspaces, what the model leaves out), measured under PyTorch
    (torch's allocated or reserved peak), not a CUDA context. It is kept in one device-neutral field, whatever part
    --gpu is, so each memory --compare row re-targeted to its own part (Overheads.on_device) keeps it: beside the
    CUDA context and NCCL buffers on a GPU, alone on a TPU, where it is carried as is (schema.tpu_rules)."""
    return replace(overheads, measured=overheads.measured + cal.memory_overhead.value)


def apply_to_memory_settings(cal: Calibration, settings: M.MemorySettings) -> M.MemorySettings:
    """MemorySettings with ``activation_scale`` set, when core/memory/training.py has that field (for the
    vectorised planner); unchanged otherwise."""
    if "activation_scale" in {f.name for f in fields(settings)}:
        return replace(settings, activation_scale=cal.activation_memory.value)
    return settings


def calibrated_mfu(cal: Calibration, spec: ModelSpec, gpu, layout: ParallelLayout,
                   settings: S.StepSettings) -> tuple[float, float]:
    """(default, calibrated) MFU the step model predicts for ``layout`` on ``gpu`` (for `train`,
    whose MFU is an input: the calibrated value can replace the 0.40 default). gpuplan's MFU
    definition (core/step.model_flops_per_token); communication included."""
    from gpuplan.core.comm.topology import cluster_for

    case = P.Case(spec, layout, M.MemorySettings(seq_len=settings.seq_len), settings, gpu)
    cluster = cluster_for(gpu)
    flops = S.model_flops_per_token(spec, settings.seq_len) * layout.batch * settings.seq_len
    peak = gpu.peak(settings.dtype) * layout.world
    default = P.step_parts(case, settings, cluster).total
    calibrated = P.step_parts(case, apply_to_step_settings(cal, settings, gpu.id), apply_to_cluster(cal, cluster)).total
    return flops / (default * peak), flops / (calibrated * peak)
