"""What an SGLang forward runs outside its decoder layers (issue 38, wave 17): the small kernels a decode
step puts on the GPU's critical path besides the layers' (its input preparation, the embedding, the final
norm, the LM head, the sampler, the overlap scheduler's copies) and the two TP collectives of the vocabulary-
parallel embedding and LM head.

Read in the sglang 0.5.6 wheel (python/sglang/srt/..., file@v0.5.6:lines). Counted on the default decode path
of a dense model on an A100 (FlashInfer attention, `server_args.py@v0.5.6:1293-1308`; page size 1; greedy
sampling: `bench_serving.py@v0.5.6:216` sends temperature 0.0; no logprobs, penalties or grammar), at batch 1,
and on the two sm100 paths layer_kernels reads (DeepSeek-V3/R1 FP8: trtllm_mla; GPT-OSS MXFP4: trtllm_mha), whose
attention metadata differs and whose KV pages of 64 take the paged allocation (`server_args.py@v0.5.6:1367-1400`:
trtllm_mla and trtllm_mha set page size 64).
Other backends (fa3 on Hopper) take the FlashInfer count: theirs was not counted.

Units: kernels, bytes, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from gpuplan.core.comm.collectives import collective_seconds
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.hardware import Accelerator
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving import layer_kernels as LK
from gpuplan.core.serving.releases import EngineRelease
from gpuplan.core.serving.tp_span import on_pcie


@dataclass(frozen=True)
class StepKernels:
    """Kernels of one part of a decode step outside the layers, with where the code runs them."""

    part: str
    kernels: int
    source: str
    tp_only: int = 0
    """Of ``kernels``, those that run only at TP > 1 (the embedding's vocabulary mask)."""


SGLANG_OUTSIDE_LAYERS: tuple[StepKernels, ...] = (
    # launched by the host between graph replays (the overlap scheduler issues them while the previous
    # step runs; they queue behind it on the GPU: scheduler.py@v0.5.6:1994-2008)
    StepKernels("future token ids resolved into the input ids", 1,
                "managers/overlap_utils.py@v0.5.6:17-23 _resolve_future_token_ids, one torch.compile'd kernel"),
    StepKernels("KV slot allocation", 3,
                "mem_cache/common.py@v0.5.6:457-461 alloc_for_decode: locs clone, out_cache_loc.to(int32), "
                "req_to_token_pool.write (page size 1: alloc_token_slots slices the free list, no kernel)"),
    StepKernels("sequence lengths + 1", 2, "managers/schedule_batch.py@v0.5.6:1754-1756 (overlap: seq_lens, "
                "orig_seq_lens on the GPU; seq_lens_cpu on the host)"),
    StepKernels("positions", 1, "model_executor/forward_batch_info.py@v0.5.6:458 clamp_position, "
                "torch.compile'd (L1169-1171)"),
    StepKernels("graph input buffers", 5, "model_executor/input_buffers.py@v0.5.6:137-141: input_ids, "
                "req_pool_indices, seq_lens, out_cache_loc, positions copied into the captured buffers"),
    StepKernels("greedy sampling", 1, "layers/sampler.py@v0.5.6:92-94 torch.argmax (is_all_greedy)"),
    StepKernels("next ids into the future map", 1, "managers/overlap_utils.py@v0.5.6:144 store_to_map"),
    StepKernels("next ids to the host", 1, "managers/utils.py@v0.5.6:64 next_token_ids.to('cpu', "
                "non_blocking=True)"),
    # inside the captured graph, before and after the layers
    StepKernels("vocabulary-parallel embedding", 3, "layers/vocab_parallel_embedding.py@v0.5.6:463-487: the "
                "mask (get_masked_input_and_mask, torch.compile'd, L126-151) and masked_fill_ at TP > 1, the "
                "embedding lookup", tp_only=2),
    StepKernels("final add + RMSNorm", 1, "models/llama.py@v0.5.6:357 self.norm(hidden_states, residual)"),
    StepKernels("LM head GEMM", 1, "layers/logits_processor.py@v0.5.6:850 torch.matmul (its weight bytes are "
                "in the step's GEMMs; this is its floor, as each layer GEMM has one)"),
)
"""SGLang 0.5.6's decode-step kernels outside the layers, batch 1, but the attention backend's (DECODE_METADATA)."""

DECODE_METADATA: dict[str, tuple[StepKernels, ...]] = {
    "flashinfer": (StepKernels("FlashInfer decode metadata", 4, "layers/attention/flashinfer_backend.py@v0.5.6:1026 "
                               "kv_indptr[1:bs+1] = cumsum (cumsum + copy), L1037 create_flashinfer_kv_indices_triton, "
                               "and the plan's copy to the device (fast_decode_plan, L580; flashinfer's code not read: "
                               "1 copy)"),),
    "trtllm_mha": (StepKernels("TRT-LLM MHA decode metadata", 6, "layers/attention/trtllm_mha_backend.py@v0.5.6:"
                               "338-357: cache_seqlens copy, cu_seqlens_k cumsum + copy, the page-table gather from "
                               "req_to_token, // page_size, copy into page_table"),
                   StepKernels("paged KV slot allocation", 4, "mem_cache/common.py@v0.5.6:441-451 last_loc (seq_lens - 1, "
                               "the req_to_token gather), seq_lens + 1, mem_cache/allocator.py@v0.5.6:527-535 "
                               "alloc_decode_kernel (page size 64)")),
    "trtllm_mla": (StepKernels("TRT-LLM MLA decode metadata", 1, "layers/attention/trtllm_mla_backend.py@v0.5.6:"
                               "529-538 create_flashmla_kv_indices_triton (the length copies above it, L508-527, are verify / draft-extend only)"),
                   StepKernels("paged KV slot allocation", 4, "as trtllm_mha's (page size 64)")),
}
"""A decode step's attention metadata (and, on the paged paths, the allocation beyond page size 1's) by backend."""


def decode_backend(spec: ModelSpec, release: EngineRelease | None, fabric: Accelerator | None, fmt_name: str) -> str:
    """The decode attention backend whose metadata kernels DECODE_METADATA counts: the sm100 paths layer_kernels reads
    (trtllm_mla for DeepSeek-V3/R1 FP8, trtllm_mha for GPT-OSS MXFP4), else 'flashinfer'."""
    if release is None or LK.table_entry(spec, release, fabric, fmt_name, prefill=False) is None:
        return "flashinfer"
    return "trtllm_mla" if spec.attention.is_mla else "trtllm_mha"


def outside_layer_kernels(release: EngineRelease | None, tp: int, backend: str = "flashinfer") -> int:
    """Kernels an SGLang CUDA-graph decode step runs outside its layers (SGLANG_OUTSIDE_LAYERS + the backend's
    DECODE_METADATA: FlashInfer 24 at TP > 1, 22 at TP 1; trtllm_mha 30, trtllm_mla 25 at TP > 1); 0 for other
    engines, whose out-of-layer kernels were not counted (vLLM's fitted floor, kernels.VLLM_GRAPH_LAYER_S, absorbed
    its own on the TP 1 rows it was fitted on)."""
    if release is None or release.engine != "sglang":
        return 0
    return sum(k.kernels - (k.tp_only if tp <= 1 else 0) for k in SGLANG_OUTSIDE_LAYERS + DECODE_METADATA[backend])


def outside_layer_floor_seconds(release: EngineRelease | None, tp: int, graph_layer_s: float | None,
                                backend: str = "flashinfer") -> float:
    """GPU seconds of those kernels on a graph step: each at the small-kernel floor's rate a kernel,
    kernels.VLLM_GRAPH_LAYER_S / GRAPH_KERNELS_DENSE (50 us / 11 = 4.55 us), or a given ``graph_layer_s`` (a
    dense layer's, --graph-layer-us) over the same 11. Not fitted on any row: the count is the code's, the rate
    the floor's."""
    per_layer = KR.VLLM_GRAPH_LAYER_S if graph_layer_s is None else graph_layer_s
    return outside_layer_kernels(release, tp, backend) * per_layer / KR.GRAPH_KERNELS_DENSE


def floor_note(release: EngineRelease | None, tp: int, graph_layer_s: float | None, backend: str = "flashinfer") -> str:
    """The answer's words for outside_layer_floor_seconds ('' where it is 0): '+ 24 kernels outside the layers x
    4.5 us ...'."""
    kernels = outside_layer_kernels(release, tp, backend)
    if not kernels:
        return ""
    per = outside_layer_floor_seconds(release, tp, graph_layer_s, backend) / kernels
    return (f" + {kernels} kernels outside the layers x {per * 1e6:.2f} us (input copies, metadata, embedding, final "
            "norm, LM head, sampler; core/serving/outside_layers.py)")


def comm_note(release: EngineRelease | None, tp: int) -> str:
    """The answer's words for outside_layer_comm_seconds ('' where it is 0)."""
    if release is None or release.engine != "sglang" or tp <= 1:
        return ""
    return (" + the embedding's all-reduce and the LM head's logits all-gather (NCCL) outside the layers "
            "(core/serving/outside_layers.py)")


def logits_rows(tokens: float, sequences: float, prefill: bool) -> float:
    """Rows of logits a forward computes: the last token of each prompt in a prefill (logits_processor.py
    @v0.5.6 prunes to the last position of each extend), every scored token in a decode step."""
    return sequences if prefill else tokens


def outside_layer_comm_seconds(release: EngineRelease | None, spec: ModelSpec, tp: int, one_allreduce_s: float,
                               rows: float, fabric: Accelerator | None, p2p: bool = True) -> float:
    """TP collectives of an SGLang forward outside its layers, seconds: the vocabulary-parallel embedding's
    all-reduce of the step's hidden states (vocab_parallel_embedding.py@v0.5.6:484-486
    tensor_model_parallel_all_reduce: the same message and kernel as a layer's, ``one_allreduce_s``) and the LM
    head's all-gather of ``rows`` x vocab bf16 logits (logits_processor.py@v0.5.6:869-898
    tensor_model_parallel_all_gather -> parallel_state.py@v0.5.6:772-834 -> all_gather_into_tensor, L733-741:
    pynccl, NCCL's all-gather, captured in the graph), timed by core.comm.collectives on the TP group
    (x kernels.PCIE_NCCL_SLOWDOWN over PCIe, as the all-reduces). 0 at TP 1 and for other engines."""
    if release is None or release.engine != "sglang" or tp <= 1:
        return 0.0
    gather = 0.0
    if fabric is not None:
        part = KR.collective_fabric(fabric, p2p)
        gather = _all_gather_seconds(rows, spec.vocab_size * 2, tp, part)
        gather *= KR.PCIE_NCCL_SLOWDOWN if on_pcie(part, tp) else 1.0
    return one_allreduce_s + gather


_GATHER_ROWS = 1024
"""Rows of logits (1 .. this) whose all-gathers are evaluated together, in one vectorised pass, on a first miss."""


@lru_cache(maxsize=256)
def _gathers_by_row(row_bytes: int, tp: int, fabric: Accelerator) -> np.ndarray:
    """NCCL's all-gather of 1 .. _GATHER_ROWS rows of ``row_bytes`` over ``tp`` GPUs of ``fabric``, seconds, index =
    rows - 1: one numpy pass (collective_seconds takes arrays), where one scalar evaluation costs ~0.5 ms and a
    sizing search asks for every batch on every layout (infer --rps: 3,204 scalar evaluations, +2 s, before)."""
    rows = np.arange(1, _GATHER_ROWS + 1, dtype=float)
    return np.asarray(collective_seconds("all_gather", rows * row_bytes, cluster_for(fabric).group(tp)), dtype=float)


def _all_gather_seconds(rows: float, row_bytes: int, tp: int, fabric: Accelerator) -> float:
    """NCCL's all-gather producing ``rows`` x ``row_bytes`` over ``tp`` GPUs of ``fabric`` (core.comm.collectives):
    read from _gathers_by_row for whole rows up to _GATHER_ROWS, else evaluated alone."""
    if float(rows).is_integer() and 1 <= rows <= _GATHER_ROWS:
        return float(_gathers_by_row(int(row_bytes), tp, fabric)[int(rows) - 1])
    return float(collective_seconds("all_gather", float(rows * row_bytes), cluster_for(fabric).group(tp)))
