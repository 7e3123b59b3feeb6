"""DeepEP's normal-mode buffers on one GPU: what Megatron-Core's flex dispatcher with the 'deepep' backend
holds in place of NCCL all-to-all connections (core.memory.device_memory.Overheads.nccl_bytes).

Megatron-Core (transformer/moe/fused_a2a.py@core_v0.14.0 L32-64 get_buffer) creates one deep_ep.Buffer per
expert-parallel group, sized by the larger of DeepEP's dispatch and combine configs' size hints for the group's
rank count, with hidden_bytes = hidden x max(element size, 2) (L29: 2 B for bf16 tokens) and
moe_deepep_num_sms = 20 SMs (transformer_config.py@core_v0.14.0 L193). DeepEP (deepseek-ai/DeepEP@v1.2.1):
the NVLink buffer is cudaMalloc'ed (csrc/deep_ep.cpp L49: num_nvl_bytes + barrier signals), the RDMA buffer
(more than 8 ranks: one rank per node of 8 NVLink peers) is NVSHMEM symmetric memory (L227 internode::alloc),
mapped in 2^29-byte granules (deep_ep/buffer.py L81-82 NVSHMEM_CUMEM_GRANULARITY), plus a 32 MiB workspace
(L62, csrc/kernels/configs.cuh NUM_WORKSPACE_BYTES). The sizes are Config::get_nvl_buffer_size_hint and
get_rdma_buffer_size_hint (csrc/config.hpp). Units: bytes.

Assumption: the group is the expert-parallel ranks (device_memory passes layout.ep). Megatron's flex dispatcher
builds the buffer on its tp_ep_group (token_dispatcher.py@core_v0.14.0 L1170-1171), expert-TP x EP ranks; the
two agree at expert tensor parallelism 1, which every published flex row runs; with expert TP > 1 the buffer
would be sized for etp x ep ranks (not modelled).
"""

from __future__ import annotations

import numpy as np

NVL_PEERS = 8  # csrc/kernels/configs.cuh NUM_MAX_NVL_PEERS
MAX_TOPK = MAX_SCALES = 128  # config.hpp kNumMaxTopK, kNumMaxScales
SOURCE_META = 8  # csrc/kernels/internode.cu SourceMeta: two ints
WORKSPACE = 32 * 2**20
NVSHMEM_GRANULE = 2**29
MEGATRON_SMS = 20

# (ranks: (NVL recv tokens, RDMA send tokens, RDMA recv tokens)) of Buffer.get_dispatch_config and
# get_combine_config (deep_ep/buffer.py@v1.2.1 L232-243, L260-270); the NVL chunk sizes agree, the RDMA
# receive size is rounded up to a multiple of the send size (config.hpp Config constructor)
DISPATCH = {2: (256, 6, 128), 4: (256, 6, 128), 8: (256, 6, 128), 16: (288, 20, 128), 24: (288, 32, 128),
            32: (288, 32, 128), 64: (288, 28, 128), 128: (560, 32, 128), 144: (720, 12, 128), 160: (720, 12, 128)}
COMBINE = {2: (256, 6, 128), 4: (256, 6, 128), 8: (256, 6, 128), 16: (288, 12, 128), 24: (288, 8, 128),
           32: (288, 8, 128), 64: (288, 20, 128), 128: (560, 12, 128), 144: (720, 8, 128), 160: (720, 8, 128)}


def _ranks_key(ep: int) -> int:
    """DeepEP's config key for ``ep`` ranks: the table's own, else the smallest larger one (DeepEP asserts
    on other counts; the largest for more than 160)."""
    keys = sorted(DISPATCH)
    return next((k for k in keys if k >= ep), keys[-1])


def _nvl_hint(nvl_recv: int, hidden_bytes: float, ranks: int, sms: int) -> float:
    """Config::get_nvl_buffer_size_hint (csrc/config.hpp@v1.2.1)."""
    rdma_ranks, nvl_ranks, channels = max(ranks // NVL_PEERS, 1), min(ranks, NVL_PEERS), sms // 2
    per_token = hidden_bytes + SOURCE_META + MAX_TOPK * 8 + MAX_TOPK * 4 + MAX_SCALES * 4
    return _align(channels * nvl_ranks * ((2 * rdma_ranks + 3) * 4 + nvl_recv * per_token))


def _rdma_hint(rdma_send: int, rdma_recv: int, hidden_bytes: float, ranks: int, sms: int) -> float:
    """Config::get_rdma_buffer_size_hint (0 within one node of 8)."""
    if ranks <= NVL_PEERS:
        return 0.0
    rdma_ranks, channels = ranks // NVL_PEERS, sms // 2
    recv = -(-rdma_recv // rdma_send) * rdma_send
    per_token = hidden_bytes + SOURCE_META + MAX_TOPK * 8 + MAX_TOPK * 4 + MAX_SCALES * 4 + 16
    return _align(channels * rdma_ranks * ((NVL_PEERS * 2 + 2) * 2 * 4 + 2 * recv * per_token))


def _align(num_bytes: float) -> float:
    """The hints' rounding up to 128 bytes (config.hpp: ((num_bytes + 127) / 128) * 128)."""
    return -(-num_bytes // 128) * 128


def deep_ep_bytes(ep, hidden: int, sms: int = MEGATRON_SMS):
    """DeepEP's buffers on a GPU of an expert-parallel group of ``ep`` ranks (numbers or arrays), bf16 tokens of
    ``hidden`` elements: the NVLink buffer, the RDMA buffer in NVSHMEM granules and the workspace; 0 at ep 1."""
    def one(ranks: int) -> float:
        if ranks <= 1:
            return 0.0
        key, hidden_bytes = _ranks_key(ranks), 2.0 * hidden
        nvl = max(_nvl_hint(cfg[key][0], hidden_bytes, ranks, sms) for cfg in (DISPATCH, COMBINE))
        rdma = max(_rdma_hint(cfg[key][1], cfg[key][2], hidden_bytes, ranks, sms) for cfg in (DISPATCH, COMBINE))
        return nvl + np.ceil(rdma / NVSHMEM_GRANULE) * NVSHMEM_GRANULE + WORKSPACE
    return np.vectorize(one, otypes=[float])(np.asarray(ep, dtype=int)) if np.ndim(ep) else one(int(ep))
