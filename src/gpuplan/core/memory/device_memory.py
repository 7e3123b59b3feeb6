"""Device memory beyond PyTorch's allocated tensors: the caching allocator's reserve and the
runtime outside the allocator (CUDA context, NCCL buffers), and the fit rule built on them.

What a GPU must hold = reserved + runtime, where reserved = allocated x (1 + fragmentation); on a TPU the
tensors alone (Overheads.on_device: no reserve or runtime counted under XLA).
The fit verdict is ``reserved + runtime <= capacity x (1 - margin)``: the margin is only a safety
band now that fragmentation and runtime are modelled (the article's 15-20% "for fragmentation
and framework overhead" is split into those two terms plus this band; docs/memory.md).

Units: bytes. Degrees of a layout may be numbers or numpy arrays (the planner).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gpuplan.core.memory.deep_ep import deep_ep_bytes
from gpuplan.core.parallel import ParallelLayout

GiB = 2**30

# PyTorch CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp): requests above 1 MiB are
# served from segments of 20 MiB (1-10 MiB requests) or cudaMalloc'ed rounded to 2 MiB; freed
# blocks stay cached and are split for later requests, so the reserved peak exceeds the
# allocated peak by the blocks that a step's changing sizes cannot reuse. With
# expandable_segments:True (pytorch/pytorch#96995) a segment grows in 2 MiB pages instead, which
# removes most of that. The default-segments fraction is fitted: the median reserved/allocated of
# the 'fit' rows of catalog/reference/allocator_ratios.yaml (Megatron memory logs; held-out rows
# scored in docs/accuracy.md). No published run reports both peaks with expandable segments: 0.03
# is an assumption (2 MiB page granularity leaves little unusable), to be replaced by
# scripts/gpu_memory_check.py's `_expseg` pair when it runs on a GPU.
FRAGMENTATION_DEFAULT_SEGMENTS = 0.12
FRAGMENTATION_EXPANDABLE_SEGMENTS = 0.03


def fragmentation(expandable_segments: bool) -> float:
    """Reserved / allocated - 1 of a training step's peak."""
    return FRAGMENTATION_EXPANDABLE_SEGMENTS if expandable_segments else FRAGMENTATION_DEFAULT_SEGMENTS


# NCCL buffers, per communicator, on the GPU (NCCL allocates them at the first collective and keeps
# them for the communicator's life). Anchor: 4x A100 with NVLink, one all-reduce each
# (NVIDIA/nccl#964): 688 MB for a group of more than 2 ranks, 544 MB for 2. NCCL's maintainers
# (NVIDIA/nccl#986): memory is linear in the number of channels, which NCCL raises to reach faster
# NVLink (H100's 350 GB/s needs more than A100's), stops growing beyond 2 nodes, and Ring keeps 2
# connections at any scale. So the anchor scales with scale-up bandwidth over A100's 600 GB/s,
# capped at H100's 900 GB/s (NCCL's 32-channel limit: H100 already opens 32 per peer for
# all-to-all, NVIDIA/nccl#1685). All-to-all connects every pair: +3.28 GB on 8x H100 (#1685),
# 0.47 GB per peer.
NCCL_GROUP_BYTES_A100 = 688e6
NCCL_PAIR_BYTES_A100 = 544e6
NCCL_ALL_TO_ALL_PEER_BYTES_H100 = 3.28e9 / 7
A100_SCALE_UP = 600e9
H100_SCALE_UP = 900e9


def nccl_channel_scale(scale_up_bandwidth: float | None) -> float:
    """NCCL buffer memory relative to A100's (1.0; H100 and later 1.5; no NVLink data: 1.0)."""
    if not scale_up_bandwidth:
        return 1.0
    return max(1.0, min(scale_up_bandwidth, H100_SCALE_UP) / A100_SCALE_UP)


def nccl_group_bytes(ranks, scale_up_bandwidth: float | None):
    """NCCL buffers of one communicator of ``ranks`` ranks on a GPU with this scale-up bandwidth
    (bytes/s, both directions): the A100 anchor (2 ranks: 544 MB, more: 688 MB) x
    nccl_channel_scale; 0 for a single rank. Training and serving use the same figure."""
    return _plain(_a100_group_bytes(ranks) * nccl_channel_scale(scale_up_bandwidth))


def _a100_group_bytes(ranks):
    """The A100 anchor for a communicator of ``ranks`` ranks (0 for one rank)."""
    ranks = np.asarray(ranks)
    return (ranks > 1) * np.where(ranks == 2, NCCL_PAIR_BYTES_A100, NCCL_GROUP_BYTES_A100)


@dataclass(frozen=True)
class HybridEPShape:
    """What sizes HybridEP's buffers (Megatron-Core's flex dispatcher, moe_flex_dispatcher_backend
    'hybridep'): the step's sequence length, the model's hidden size and routed experts, and the ranks
    of one NVLink domain (the GPU's scale-up domain). ``backend`` 'deepep': DeepEP's normal-mode buffers
    instead (core.memory.deep_ep, sized by the group's ranks and the hidden size)."""

    seq_len: int
    hidden: int
    experts: int
    domain: int
    backend: str = "hybridep"


def with_ep_dispatcher(overheads: "Overheads", dispatcher: str, seq_len: int, spec, gpu,
                       backend: str) -> "Overheads":
    """``overheads`` with HybridEP's buffers in place of NCCL all-to-all peers for the flex dispatcher on a MoE
    ``spec`` (core.model.spec.ModelSpec; dense: unchanged) on ``gpu`` (core.hardware.Accelerator: its
    ``scale_up_ranks``, HybridEP's NVLink domain); plan's evaluator and ``gpuplan memory`` alike, by their shared
    --flex-backend (``backend``; its default, schema.te_kernels.DEFAULT_FLEX_BACKEND, is the callers'): 'deepep'
    (Megatron-Core's default moe_flex_dispatcher_backend) counts DeepEP's normal-mode buffers (core.memory.deep_ep),
    'hybridep' HybridEP's."""
    if dispatcher != "flex" or spec.moe is None:
        return overheads
    return replace(overheads, hybrid_ep=HybridEPShape(seq_len, spec.hidden_size, spec.moe.num_experts,
                                                      gpu.scale_up_ranks, backend))


def hybrid_ep_bytes(layout: ParallelLayout, shape: HybridEPShape):
    """HybridEP's buffers on one GPU, bytes (DeepEP hybrid-ep csrc/hybrid_ep/hybrid_ep.cu,
    HybridEPBuffer::allocate_buffer): the worst case T = tokens per rank x ranks per NVLink domain x nodes
    tokens (all routed to one rank; Megatron passes the rank's tokens, micro-batch x sequence / (cp x tp),
    fused_a2a.py init_hybrid_ep_buffer); combine holds T x hidden bf16 tokens and T x (experts per rank x
    domain ranks) fp32 probabilities, dispatch T x hidden/128 fp32 scales and, across nodes, its own token
    and probability buffers (shared with combine inside one domain) plus (nodes - 1) x tokens staging
    buffers (two token, two probability ones for combine, one each for dispatch)."""
    ep = np.asarray(layout.ep)
    ranks = np.minimum(ep, shape.domain)
    nodes = np.ceil(ep / ranks)
    tokens = layout.micro_batch * shape.seq_len / (layout.cp * layout.tp)
    worst = tokens * ranks * nodes
    token_row, prob_row = 2.0 * shape.hidden, 4.0 * shape.experts / ep * ranks
    combine = worst * (token_row + prob_row)
    dispatch = worst * 4.0 * shape.hidden / 128 + (nodes > 1) * worst * (token_row + prob_row)
    staging = (nodes - 1) * tokens * (3 * token_row + 3 * prob_row + 4.0 * shape.hidden / 128)
    return (ep > 1) * (combine + dispatch + staging)


@dataclass(frozen=True)
class Overheads:
    """Memory outside PyTorch's allocated tensors, bytes per GPU, and the safety margin."""

    cuda_context: float = 0.5 * GiB
    """CUDA context + cuBLAS workspace: ~300 MB with lazy module loading (CUDA >= 11.7; PyTorch
    maintainers, pytorch/pytorch#107667), more with cuBLAS/cuDNN handles."""
    comm_per_group: float | None = None
    """NCCL buffers per communicator in use; None: by GPU type and group size (above)."""
    channel_scale: float = 1.5
    """nccl_channel_scale of the GPU (the default: H100's)."""
    margin: float = 0.05
    """Safety band of capacity kept free beyond the modelled reserve and runtime."""
    fragmentation: float = FRAGMENTATION_DEFAULT_SEGMENTS
    """Caching-allocator reserve over the allocated peak (reserved / allocated - 1)."""
    hybrid_ep: HybridEPShape | None = None
    """Set when the MoE dispatcher is flex (HybridEP): its own buffers replace NCCL all-to-all's
    per-peer ones (no NCCL all-to-all runs; token_dispatcher.py MoEFlexTokenDispatcher)."""

    xla: bool = False
    """The part runs XLA (a TPU: on_device): no CUDA context, no NCCL communicators, no PyTorch caching allocator;
    the runtime's own reserve is not modelled (schema.tpu_rules)."""
    measured: float = 0.0
    """Bytes a calibration measured above the modelled tensors (its memory_overhead, calibrate.apply.
    apply_to_overheads), on whichever part it is carried to: counted beside the CUDA context and NCCL buffers on a
    GPU, alone under XLA (fixed_bytes; clamped at 0 there: a TPU's needed memory is not below its tensors). 0
    without a calibration. One device-neutral field, so a memory --compare row of the other kind keeps it."""

    def on_device(self, gpu) -> Overheads:
        """The same overheads on ``gpu`` (core.hardware.Accelerator): its NCCL channel scale (nccl_channel_scale of
        its scale-up bandwidth, bytes/s), and ``xla`` where it is a TPU
        (core.hardware.Accelerator.runs_xla). XLA:TPU allocates a program's buffers statically at compile time and
        keeps "reserved space for the XLA runtime" of a size the page does not state (openxla.org/xla/errors/
        error_1000, 'System overhead'; the compiled binary, constants and compiler internals it also lists are
        unsized too): no CUDA context, NCCL buffer or caching-allocator reserve is counted there (fixed_bytes,
        reserve); those are unsized, assumed to fit inside the margin."""
        return replace(self, channel_scale=nccl_channel_scale(gpu.scale_up_bandwidth), xla=gpu.runs_xla)

    @property
    def reserve(self) -> float:
        """Reserved / allocated - 1 as counted: the caching allocator's fragmentation, 0 under XLA."""
        return 0.0 if self.xla else self.fragmentation

    def _group(self, ranks):
        ranks = np.asarray(ranks)
        if self.comm_per_group is not None:
            return (ranks > 1) * self.comm_per_group
        return _a100_group_bytes(ranks) * self.channel_scale

    def nccl_bytes(self, layout: ParallelLayout):
        """NCCL buffers of the communicators a rank uses: data (dp x cp), tensor, pipeline (one
        pair per neighbouring stage: 1 or 2) and expert all-to-all (every peer)."""
        data = self._group(layout.dp * layout.cp)
        tensor = self._group(layout.tp)
        pp = np.asarray(layout.pp)
        pipeline = np.minimum(2, pp - 1) * (self._group(2) if self.comm_per_group is None
                                            else self.comm_per_group)
        ep = np.asarray(layout.ep)
        if self.hybrid_ep is not None and self.hybrid_ep.backend == "deepep":
            return data + tensor + pipeline + deep_ep_bytes(ep, self.hybrid_ep.hidden)
        if self.hybrid_ep is not None:
            return data + tensor + pipeline + hybrid_ep_bytes(layout, self.hybrid_ep)
        experts = (ep - 1) * NCCL_ALL_TO_ALL_PEER_BYTES_H100 * self.channel_scale / 1.5
        return data + tensor + pipeline + experts

    def fixed_bytes(self, layout: ParallelLayout):
        """Runtime outside the allocator: a calibration's measured bytes + CUDA context + NCCL buffers; under XLA
        none is modelled, only what a calibration measured (``measured``, not below 0)."""
        if self.xla:  # one per layout (the layout's degrees may be arrays of candidates)
            shape = np.broadcast_shapes(*(np.shape(getattr(layout, degree)) for degree in ("dp", "cp", "tp", "pp", "ep")))
            return _plain(max(self.measured, 0.0) + np.zeros(shape))
        return _plain(self.measured + self.cuda_context + self.nccl_bytes(layout))

    def reserved_bytes(self, allocated):
        """The caching allocator's reserved peak for an allocated peak."""
        return _plain(np.asarray(allocated, dtype=float) * (1 + self.reserve))

    def device_bytes(self, allocated, layout: ParallelLayout):
        """What the GPU must hold: reserved + runtime."""
        return _plain(self.reserved_bytes(allocated) + self.fixed_bytes(layout))

    def budget_bytes(self, capacity: float) -> float:
        """Capacity x (1 - margin): what reserved + runtime may reach."""
        return capacity * (1 - self.margin)


def framework_gap_bytes(overheads: Overheads, share: float, allocated, model_states):
    """What the fit rule keeps free for a framework whose published reserved peaks exceed this
    model's: ``share`` x the reserved peak beyond the model states (weights, master weights,
    optimizer states), bytes (planner.framework_rules.FrameworkRules.published_reserve; 0 for
    frameworks without a measured gap). One rule for `plan`'s search and `memory`'s verdict."""
    if not share:
        return _plain(np.zeros(np.shape(allocated)))
    return _plain(share * np.maximum(overheads.reserved_bytes(np.asarray(allocated, dtype=float) - model_states), 0.0))


def usable_bytes(capacity: float, overheads: Overheads, layout: ParallelLayout):
    """The largest *allocated* peak that fits: (capacity x (1 - margin) - runtime) / (1 + reserve) (Overheads.reserve:
    the fragmentation, 0 under XLA, where the runtime is 0 too)."""
    return _plain((overheads.budget_bytes(capacity) - overheads.fixed_bytes(layout)) / (1 + overheads.reserve))


def _plain(value):
    return float(value) if np.ndim(value) == 0 else value
