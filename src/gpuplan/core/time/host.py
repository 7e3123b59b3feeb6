"""Host time of an eager step and how it meets the GPU's.

An eager PyTorch step is issued op by op from the host: the forward from Python (module calls,
each ATen op through the dispatcher, one CUDA launch per kernel), the backward from the autograd
engine, the optimizer from Python again. The host runs ahead of the GPU while kernels are long;
where they are short (small models, short sequences, LoRA's many small kernels, the Python
dispatch mode of selective checkpointing) the GPU waits for it. Each phase therefore takes

    t_phase = max(GPU seconds, host seconds)

(the host cannot run ahead across the step's end: the measured loop synchronises once per step).

Host seconds come from the exact count of ATen ops each phase dispatches (the op profile's 'ops',
read from the framework's code) times a cost per dispatched op, measured once on a CPU with real
tensors (Llama's step at a tiny width, transformers 5.25, torch 2.13: HOST_SECONDS_PER_OP), and
carried to the GPU machine's host by two probes timed on both: a 1-element ``add_`` and a 16x64
``nn.Linear`` under autograd (REFERENCE_PROBES here; on the lent H200's host, scripts/
gpu_step_probes.py, catalog/reference/gpu_step_probes.yaml: 6.21 us and 16.44 us). Counting ops
rather than timing each family keeps the host term reproducible (timings of a busy machine are
not). With ``k`` the CUDA launch per kernel and ``r`` how much slower that host runs Python and the
dispatcher than the measuring CPU (whose tiny CPU kernel costs CPU_TINY_KERNEL_SECONDS):

    add_gpu = r x (add_cpu - c) + k,   linear_gpu = r x (linear_cpu - c) + k,   c = CPU_TINY_KERNEL_SECONDS

two equations for r and k (with REFERENCE_PROBES: r = 1.506, k = 3.25 us; reference_scale()), and a phase that
took ``t`` seconds with ``n`` kernels on the generating CPU takes r x (t - n x c) + n x k on the
GPU machine's host. torch.compile and CUDA graphs remove this term (gpuplan.core.time.eager_step).

Units: seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core.bulk import maximum

GPU_HOST_ADD_SECONDS = 6.21e-6
"""A 1-element ``add_`` on the lent H200's host (gpu_step_probes.yaml 'launch add (1 element)')."""
GPU_HOST_LINEAR_SECONDS = 16.44e-6
"""A 16x64 ``nn.Linear`` forward under autograd on the same host ('launch linear 16x64 under autograd')."""
REFERENCE_PROBES = {"add_1_element_s": 2.465e-6, "linear_16x64_autograd_s": 9.257e-6}
"""The two probes on the CPU that measured HOST_SECONDS_PER_OP (2026-12-04)."""
HOST_SECONDS_PER_OP = {"forward": 704e-6 / 210, "backward": 756e-6 / 467,
                       "forward_sac": 2117e-6 / 213, "backward_sac": 2919e-6 / 718}
"""CPU seconds per dispatched ATen op (views included), measured on one Llama decoder layer at a
tiny width (hidden 64, 8 tokens, bf16, real tensors; per layer = (6 layers - 2 layers) / 4):
the forward took 704 us for 210 ops (Python modules, the dispatcher, each kernel), the backward
756 us for 467 (the autograd engine's C++), and under op-level SAC (Python's dispatch mode on
every op, gpuplan.profile.recompute) 2,117 us for 213 and 2,919 us for 718 (its recompute)."""
HOST_SECONDS_PER_TRAINED_TENSOR = 5e-6
"""torch.optim.AdamW's Python per parameter tensor on the measuring CPU: adam._init_group's loop
(grad check, state lookup, list appends) and _multi_tensor_adam's per-step list comprehensions
(each step's bias corrections, step size): about a dozen Python statements, ~5 us. The CPU's own
step measured 15-27 us per tensor (9 to 576 tiny bf16 tensors, foreach), which includes the
foreach arithmetic a CPU runs tensor by tensor and a GPU launches in chunks (core.time.optimizer)."""
CPU_TINY_KERNEL_SECONDS = 0.5e-6
"""What the CPU itself spends inside a 1-element op, beside Python and the dispatcher (a few
hundred instructions; the bound that keeps r positive, docs/step.md)."""


@dataclass(frozen=True)
class HostScale:
    """How host seconds measured on the profiling CPU carry over to a GPU machine's host."""

    python: float
    """r: the GPU host's Python + dispatcher time / the profiling CPU's."""
    launch: float
    """k: seconds the GPU host spends launching one CUDA kernel."""

    def seconds(self, cpu_seconds, kernels):
        """Host seconds on the GPU machine for a phase that took ``cpu_seconds`` with ``kernels`` kernels."""
        return self.python * (cpu_seconds - kernels * CPU_TINY_KERNEL_SECONDS) + kernels * self.launch


def host_scale(cpu_add: float, cpu_linear: float, gpu_add: float = GPU_HOST_ADD_SECONDS,
               gpu_linear: float = GPU_HOST_LINEAR_SECONDS) -> HostScale:
    """Solve the two probe equations (module docstring) for r and k."""
    a, b = cpu_add - CPU_TINY_KERNEL_SECONDS, cpu_linear - CPU_TINY_KERNEL_SECONDS
    if b <= a:
        raise ValueError("the linear probe must take longer than the add probe")
    launch = (gpu_linear * a - gpu_add * b) / (a - b)
    python = (gpu_add - launch) / a
    return HostScale(python=max(python, 0.0), launch=max(launch, 0.0))


def cpu_seconds_per_op(phase: str, sac: bool) -> float:
    """HOST_SECONDS_PER_OP of a forward / backward phase (with SAC's dispatch mode or without)."""
    return HOST_SECONDS_PER_OP[f"{phase}_sac" if sac else phase]


def reference_scale() -> HostScale:
    """The carry-over from the measuring CPU to the GPU host (r = 1.506, k = 3.25 us)."""
    return host_scale(REFERENCE_PROBES["add_1_element_s"], REFERENCE_PROBES["linear_16x64_autograd_s"])


def phase_seconds(gpu, host):
    """A phase's wall time: the slower of its GPU work and its host issue time."""
    return maximum(gpu, host)
