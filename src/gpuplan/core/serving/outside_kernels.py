"""The kernels a decode step runs outside its decoder layers, as counted in each engine's code (issue 38, wave 17;
review w17 ME): SGLang 0.5.6 (sglang wheel, python/sglang/srt/..., file@v0.5.6:lines) and vLLM 0.10.1 V1 (vllm
wheel, vllm/..., file@v0.10.1:lines), the release the small-kernel floor was fitted on (graph_floor). Counts only:
outside_layers times them. Units: kernels.

SGLang: counted on the default decode path of a dense model on an A100 (FlashInfer attention,
`server_args.py@v0.5.6:1293-1308`; page size 1; greedy sampling: `bench_serving.py@v0.5.6:216` sends temperature
0.0; no logprobs, penalties or grammar), at batch 1, and on the two sm100 paths layer_kernels reads (DeepSeek-V3/R1
FP8: trtllm_mla; GPT-OSS MXFP4: trtllm_mha), whose attention metadata differs and whose KV pages of 64 take the paged
allocation (`server_args.py@v0.5.6:1367-1400`). Other backends (fa3 on Hopper) take the FlashInfer count: theirs was
not counted. Under the overlap scheduler (the default) the forward runs on its own stream
(`scheduler.py@v0.5.6:934-937` forward_stream = a new torch Stream) while the scheduler's default stream (the
thread's current stream, L447-449) runs prepare_for_decode for step k+1, reached from get_next_batch_to_run ->
update_running_batch (L1011, L1943) after run_batch queued step k: those kernels (SGLANG_OFF_PATH, the paged
allocation) overlap step k and `forward_stream.wait_stream(default_stream)` (L1997) only orders them before step
k+1 (schedule_batch.py@v0.5.6:1750: 'Do not use in-place operations in the overlap mode'). Without overlap
(speculative decoding unless SGLANG_ENABLE_SPEC_V2, server_args.py@v0.5.6:1693-1694; PP > 1, L1604-1605) they run
before the forward on the one stream: on the path.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StepKernels:
    """Kernels of one part of a decode step outside the layers, with where the code runs them."""

    part: str
    kernels: int
    source: str
    tp_only: int = 0
    """Of ``kernels``, those that run only at TP > 1 (the embedding's vocabulary mask)."""


def total(parts: tuple[StepKernels, ...], tp: int) -> int:
    """Kernels of ``parts`` at ``tp`` (the tp_only ones at TP > 1 only)."""
    return sum(k.kernels - (k.tp_only if tp <= 1 else 0) for k in parts)


SGLANG_ON_PATH: tuple[StepKernels, ...] = (
    # on the forward stream, inside forward_stream_ctx (scheduler.py@v0.5.6:1996-2007), before the graph replay
    StepKernels("future token ids resolved into the input ids", 1,
                "managers/overlap_utils.py@v0.5.6:17-23 _resolve_future_token_ids, one torch.compile'd kernel"),
    StepKernels("positions", 1, "model_executor/forward_batch_info.py@v0.5.6:458 clamp_position, "
                "torch.compile'd (L1169-1171)"),
    StepKernels("graph input buffers", 5, "model_executor/input_buffers.py@v0.5.6:137-141: input_ids, "
                "req_pool_indices, seq_lens, out_cache_loc, positions copied into the captured buffers"),
    # inside the captured graph, before and after the layers
    StepKernels("vocabulary-parallel embedding", 3, "layers/vocab_parallel_embedding.py@v0.5.6:463-487: the "
                "mask (get_masked_input_and_mask, torch.compile'd, L126-151) and masked_fill_ at TP > 1, the "
                "embedding lookup", tp_only=2),
    StepKernels("final add + RMSNorm", 1, "models/llama.py@v0.5.6:357 self.norm(hidden_states, residual)"),
    StepKernels("LM head GEMM", 1, "layers/logits_processor.py@v0.5.6:850 torch.matmul (its weight bytes are "
                "in the step's GEMMs; this is its floor, as each layer GEMM has one)"),
    StepKernels("logits to fp32", 1, "layers/logits_processor.py@v0.5.6:911-917 logits_buffer.copy_ (or .float())"),
    # after the replay, still on the forward stream
    StepKernels("greedy sampling", 1, "layers/sampler.py@v0.5.6:92-94 torch.argmax (is_all_greedy)"),
    StepKernels("next ids into the future map", 1, "managers/overlap_utils.py@v0.5.6:144 store_to_map"),
    StepKernels("next ids to the host", 1, "managers/utils.py@v0.5.6:64 next_token_ids.to('cpu', "
                "non_blocking=True)"),
)
"""SGLang 0.5.6's decode-step kernels outside the layers on the forward stream, batch 1, but the attention backend's
(DECODE_METADATA): 16 at TP > 1, 14 at TP 1."""

SGLANG_OFF_PATH: tuple[StepKernels, ...] = (
    StepKernels("KV slot allocation", 3,
                "mem_cache/common.py@v0.5.6:457-461 alloc_for_decode: locs clone, out_cache_loc.to(int32), "
                "req_to_token_pool.write (page size 1: alloc_token_slots slices the free list, no kernel)"),
    StepKernels("sequence lengths + 1", 2, "managers/schedule_batch.py@v0.5.6:1754-1756 (overlap: seq_lens, "
                "orig_seq_lens on the GPU; seq_lens_cpu on the host)"),
)
"""prepare_for_decode's kernels on the scheduler's default stream: off the path under overlap (module docstring),
on it without."""

PAGED_ALLOCATION = StepKernels("paged KV slot allocation", 4, "mem_cache/common.py@v0.5.6:441-451 last_loc "
                               "(seq_lens - 1, the req_to_token gather), seq_lens + 1, mem_cache/allocator.py"
                               "@v0.5.6:527-535 alloc_decode_kernel (page size 64)")
"""The page-64 paths' allocation beyond page size 1's, prepare_for_decode's too: off the path under overlap."""

DECODE_METADATA: dict[str, tuple[StepKernels, ...]] = {
    "flashinfer": (StepKernels("FlashInfer decode metadata", 4, "layers/attention/flashinfer_backend.py@v0.5.6:1026 "
                               "kv_indptr[1:bs+1] = cumsum (cumsum + copy), L1037 create_flashinfer_kv_indices_triton, "
                               "and the plan's copy to the device (fast_decode_plan, L580; flashinfer's code not read: "
                               "1 copy)"),),
    "trtllm_mha": (StepKernels("TRT-LLM MHA decode metadata", 6, "layers/attention/trtllm_mha_backend.py@v0.5.6:"
                               "338-357: cache_seqlens copy, cu_seqlens_k cumsum + copy, the page-table gather from "
                               "req_to_token, // page_size, copy into page_table"),),
    "trtllm_mla": (StepKernels("TRT-LLM MLA decode metadata", 1, "layers/attention/trtllm_mla_backend.py@v0.5.6:"
                               "529-538 create_flashmla_kv_indices_triton (the length copies above it, L508-527, are "
                               "verify / draft-extend only)"),),
}
"""A decode step's attention metadata by backend (init_forward_metadata_replay_cuda_graph, on the forward stream)."""

GATHER_RESHAPE = StepKernels("logits all-gather reshape", 1, "distributed/parallel_state.py@v0.5.6:834-840: "
                             "movedim(0, dim) + reshape of the gathered (tp, rows, vocab / tp) logits copies at rows "
                             "> 1 (a view at 1 row); vllm distributed/device_communicators/base_device_communicator.py"
                             "@v0.10.1 all_gather the same", tp_only=1)
"""At TP > 1 and more than one row of logits (both engines, in the LM head's all-gather)."""

VLLM_V1_OUTSIDE: tuple[StepKernels, ...] = (
    # gpu_model_runner.py@v0.10.1 _prepare_inputs (L690-900), one stream, before the forward (no overlap in 0.10)
    StepKernels("block table and slot mapping to the GPU", 2, "v1/worker/block_table.py@v0.10.1:100-107 "
                "commit_block_table, commit_slot_mapping (non_blocking copies)"),
    StepKernels("input ids, positions, query_start_loc, seq_lens to the GPU", 4,
                "v1/worker/gpu_model_runner.py@v0.10.1:766-782 (non_blocking copies)"),
    StepKernels("padding fills", 3, "gpu_model_runner.py@v0.10.1:785 seq_lens[num_reqs:].fill_(0), L788-789 "
                "query_start_loc fill_, L874 slot_mapping[n:].fill_(-1)"),
    StepKernels("logits indices", 1, "gpu_model_runner.py@v0.10.1:803 query_start_loc[1:] - 1"),
    StepKernels("FA3 scheduler metadata", 1, "v1/attention/backends/flash_attn.py@v0.10.1:196, 273 "
                "get_scheduler_metadata (aot_schedule: FlashAttention 3 on Hopper)"),
    # the model forward (torch.compile'd, piecewise graphs) and after it
    StepKernels("vocabulary-parallel embedding", 1, "model_executor/layers/vocab_parallel_embedding.py@v0.10.1:"
                "396-415: mask (TP > 1), masked_input.long(), lookup, masked_fill_, inside the Inductor-compiled "
                "graph piece: counted as one fused kernel (the fusion not traced)"),
    StepKernels("final add + RMSNorm", 1, "models/llama.py@v0.10.1:393 self.norm(hidden_states, residual)"),
    StepKernels("last-token hidden states", 1, "gpu_model_runner.py@v0.10.1:1646 hidden_states[logits_indices]"),
    StepKernels("LM head GEMM", 1, "model_executor/layers/logits_processor.py@v0.10.1:110 _get_logits "
                "lm_head.quant_method.apply"),
    StepKernels("sampler", 8, "v1/sample/sampler.py@v0.10.1: logits.to(float32) (L47); benchmark_latency sends "
                "temperature 1.0, top_p 1.0 (benchmarks/latency.py@v0.10.1:98-105): all_random, so div_ by the "
                "temperature (L93-99, L127), then topk_topp_sampler.py@v0.10.1:95-100 softmax, random_sample L247-259 "
                "exponential_, div_, argmax; sampled.to(int32) (L81); gpu_model_runner.py@v0.10.1:1733 "
                "sampled_token_ids.tolist() (the copy to the host)"),
)
"""vLLM 0.10.1 V1's decode-step kernels outside the layers (Llama, FlashAttention 3 on an H100, batch 1): 23 (the
count the floor's fit rows carry, graph_floor.GRAPH_KERNEL_S). vLLM V0 (0.2.6-0.10) takes the same count: its own
was not counted."""
