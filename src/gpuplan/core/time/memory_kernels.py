"""Memory-bound kernels: the norms, RoPE, activations, residual adds, dtype casts, the loss over
the vocabulary and the optimizer's element-wise updates of an eager stack.

Each kernel takes a fixed time plus its bytes over the achieved HBM bandwidth:

    t = kernels x KERNEL_FIXED_SECONDS + bytes / (peak HBM bandwidth x HBM_STREAM_EFFICIENCY)

Both constants come from PyTorch's own element-wise kernels timed on an H200 (PyTorch 2.9.1,
CUDA 12.8, fp16, CUDA-event timing over 1,000 launches): ``torch.maximum`` on (1024, 4096),
(1024, 10240) and (1024, 20480) ran at 1.83, 2.79 and 3.37 TB/s (tile-ai/TileOPs issue #512,
"PyTorch BW" column). Their times, 24 MiB / 1.83 TB/s = 13.75 us, 60 MiB / 2.79 TB/s = 22.55 us
and 120 MiB / 3.37 TB/s = 37.34 us, lie on one line (least squares): 7.84 us + bytes / 4.27 TB/s,
i.e. 89% of the H200's 4.8 TB/s once a kernel is large, and a fixed ~8 us per kernel (launch,
ramp-up and the tail wave). The unary leaky_relu of the same thread (TileOPs PR #500: 2.57 TB/s
on (1024, 10240)) is 7% below the line. Other parts take the same efficiency and fixed time (no
comparable published measurement; docs/step.md).

Units: bytes, seconds, bytes per second.
"""

from __future__ import annotations

HBM_STREAM_EFFICIENCY = 0.89
"""Achieved / peak HBM bandwidth of a large PyTorch element-wise kernel (4.27 / 4.8 TB/s, above)."""
KERNEL_FIXED_SECONDS = 7.84e-6
"""Fixed GPU time of one memory-bound kernel (the intercept above)."""
TINY_KERNEL_SECONDS = 0.92e-6
"""GPU seconds of a one-block kernel (current scaling's scale from amax): 1,000 1-element adds
replayed from a CUDA graph on an H200, 0.919 us each (catalog/reference/gpu_step_probes.yaml,
probe 'kernel', scripts/gpu_step_probes.py)."""


def memory_bound_seconds(nbytes, kernels, hbm_bytes_per_second: float,
                         efficiency: float = HBM_STREAM_EFFICIENCY, fixed: float = KERNEL_FIXED_SECONDS):
    """Seconds for ``kernels`` memory-bound kernels moving ``nbytes`` bytes in all (scalars or arrays)."""
    return kernels * fixed + nbytes / (hbm_bytes_per_second * efficiency)
