"""What a serving engine's start-up profile measures before it sizes the KV cache: the activation
peak of its dummy forward and sampler step, the non-torch memory that appears (CUDA context,
NCCL communicators, all-reduce workspaces) and the CUDA-graph memory it estimates. Which of them a
release counts, and with what sampler, is core/serving/releases.py; the split that uses them is
core/serving/memory.py. Units: bytes, tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.serving import engines as E
from gpuplan.core.serving import attention_backend as AB
from gpuplan.core.serving.releases import (FLASHINFER, GRAPH_CAPTURE_LIMIT, GiB, MRV2, NVLINK_TP_NON_TORCH, SORT,
                                           TRITON, VllmRules, graph_capture_sizes)

MiB = 2**20

def activation_elements_per_token(spec: ModelSpec, tp: int = 1, moe_caches: bool = True,
                                  routed: float | None = None) -> float:
    """Peak live activation elements per prefill token in one layer, one TP rank.

    Dense: gate+up output (2I/tp), the activated product (I/tp) and three hidden-size tensors
    (residual, normed input, layer output) = 3I/tp + 3h. Fitted exactly by vLLM's profile of
    Llama-3.1-8B (vllm-project/vllm#10517: peak_torch - weights = 2.07 GiB at 20,000 tokens and
    2.99 GiB at 29,000; 3·14336 + 3·4096 elements x 2 bytes gives 2.06 and 2.99 GiB).
    MoE: vLLM fused_moe intermediate caches [M, k, 2N], [M·k, N], [M, k, h] with N = I_e/tp,
    plus a shared expert, plus the 3h hidden tensors; ``moe_caches`` False leaves the routed
    caches out (they live in the persistent workspace, moe_workspace_bytes); ``routed`` replaces the
    routed experts' elements per token (first_capture_elements_per_token).
    """
    h = spec.hidden_size
    dense = 3 * spec.mlp.intermediate_size / tp + 3 * h
    if spec.moe is None or not spec.num_moe_layers:
        return dense
    moe = spec.moe
    if routed is None:
        routed = moe.experts_per_token * (3 * moe.expert_intermediate_size / tp + h) if moe_caches else 0.0
    moe_layer = routed + 3 * moe.shared_intermediate_size / tp + 3 * h
    return max(moe_layer, dense if spec.num_dense_layers else 0.0)


FUSED_MOE_CHUNK = 32768
"""VLLM_FUSED_MOE_CHUNK_SIZE's default (vllm/envs.py): the workspace holds at most this many tokens."""


def moe_workspace_bytes(spec: ModelSpec, tokens: int, tp: int, act_bytes: int = 2) -> float:
    """The fused-MoE workspace the V1 worker keeps (WorkspaceManager, vllm PR 27532): the Triton
    experts' workspace13 [M, k, max(N, h)], shared by the gate/up output and the down output
    (vllm PR 31531), and workspace2 [M·k, N/2] for the activated product, N = 2 I_e / tp,
    M = min(max_num_batched_tokens, FUSED_MOE_CHUNK). 0 for a dense model."""
    if spec.moe is None or not spec.num_moe_layers:
        return 0.0
    n = 2 * spec.moe.expert_intermediate_size / tp
    rows = min(tokens, FUSED_MOE_CHUNK) * spec.moe.experts_per_token
    return rows * (max(n, spec.hidden_size) + n / 2) * act_bytes


MXFP4_TRITON_ROUND = 64
"""vLLM 0.19 pads an MXFP4 expert's intermediate size (per TP rank) to a multiple of 64 for the Triton
backend on CUDA (fused_moe/oracle/mxfp4.py mxfp4_round_up_hidden_size_and_intermediate_size, v0.19.0
lines 376-401), the hidden size unchanged."""


def routed_call_elements(spec: ModelSpec, tp: int, experts: str) -> float:
    """Elements per token the routed experts of one MoE layer allocate inside their call (so inside
    a CUDA-graph capture, in its pool), by where their buffers come from: 'workspace' (vLLM 0.19's
    modular kernels take workspace13, workspace2 and fused_out from the persistent WorkspaceManager,
    fused_moe/modular_kernel.py lines 1035-1066: none); 'mxfp4' (experts that size their own: the
    Triton MXFP4 experts vLLM 0.19 runs on Hopper, gpt_oss_triton_kernels_moe.py: the output
    empty_like(hidden) at line 280 and intermediate_cache [M·k, N/2] at 346, N/2 = I_e/tp padded
    to MXFP4_TRITON_ROUND); 'fused' (fused_moe's own three caches, before the WorkspaceManager:
    k x (3 I_e/tp + h), as activation_elements_per_token)."""
    moe = spec.moe
    if moe is None or not spec.num_moe_layers or experts == "workspace":
        return 0.0
    if experts == "mxfp4":
        padded = -(-moe.expert_intermediate_size / tp // MXFP4_TRITON_ROUND) * MXFP4_TRITON_ROUND
        return moe.experts_per_token * padded + spec.hidden_size
    return moe.experts_per_token * (3 * moe.expert_intermediate_size / tp + spec.hidden_size)


def vllm_moe_experts(rules: VllmRules, quantized: str) -> str:
    """Where a release's routed experts keep their buffers (routed_call_elements): 'mxfp4' for
    experts-only quantized checkpoints, whose kernels size their own (as profiled_peak's
    ``moe_workspace``), else 'workspace' where the release has the WorkspaceManager, 'fused' before."""
    if quantized == "experts":
        return "mxfp4"
    return "workspace" if rules.moe_workspace else "fused"


def first_capture_elements_per_token(spec: ModelSpec, tp: int, experts: str = "fused") -> float:
    """activation_elements_per_token as a graph capture allocates them: the routed experts' share
    is what routed_call_elements says they allocate in the call."""
    return activation_elements_per_token(spec, tp, routed=routed_call_elements(spec, tp, experts))


V1_PROFILE_WORKSPACE = 0.052 * GiB
"""Persistent buffers V1's profile run allocates beside the forward and the sampler (input batch,
attention metadata and workspaces): fitted on one log, llm-d-planner's vLLM 0.19 Llama-3.1-8B on an
H100 (torch peak 1.89 GiB against 1.838 GiB of sampler, Triton buffer and hidden states). The
0.11-0.16 rows, scored held out, sit 0.04-0.06 GiB under the sort sampler alone as well."""


SAMPLER_BYTES_PER_LOGIT = {"auto": 0.0, "torch-sort": SORT, "triton": TRITON, "flashinfer": FLASHINFER,
                           "logits": MRV2}
"""Bytes per [max_num_seqs x vocab] logit of the profiled sampler step (derivation:
core/serving/releases.py); 'auto' takes the release's own. 'flashinfer' is no release's default:
vLLM runs it where FlashInfer is installed (0.10: whenever it imports, 0.19: with
VLLM_USE_FLASHINFER_SAMPLER=1), which the log says ('Using FlashInfer for top-p & top-k sampling')."""
SAMPLERS = tuple(SAMPLER_BYTES_PER_LOGIT)
DEFAULT_SAMPLER = "auto"
TRITON_PROGRAMS = 132
"""Programs of the Triton top-k/top-p kernel, one [vocab] fp32 row each (vllm PR 33538: 'around
~80MiB of extra VRAM'; 132 rows, an H100's SM count, x 151,936 x 4 B = 80 MB)."""


@dataclass(frozen=True)
class ProfiledPeak:
    """The torch peak increase of an engine's profile run, bytes per GPU."""

    forward: float
    """The dummy forward of max_num_batched_tokens tokens: one layer's live activations."""
    sampler: float
    """The sampler step on max_num_seqs rows of logits, with the forward's hidden states still held."""
    held_allreduce: float = 0.0
    """vLLM 0.2.5-0.3.2 only: all-reduce inputs the allocator has not released yet."""

    @property
    def peak(self) -> float:
        return max(self.forward, self.sampler) + self.held_allreduce


def sampler_name(sampler: str, rules: VllmRules) -> str:
    """``sampler``, or for 'auto' the name of the release's own (releases.VllmRules.sampler_bytes)."""
    if sampler != DEFAULT_SAMPLER:
        return sampler
    return {SORT: "torch-sort", TRITON: "triton", MRV2: "logits"}[rules.sampler_bytes]


def sampler_bytes(spec: ModelSpec, max_num_seqs: int, tokens: int, rules: VllmRules, tp: int,
                  sampler: str = DEFAULT_SAMPLER, act_bytes: int = 2) -> float:
    """The sampler step of the profile: max_num_seqs rows of the full vocabulary (every TP rank
    holds them after the logits gather; Model Runner V2 in 0.29 samples 1/tp of the rows on each),
    the bytes per logit of the release's sampler (or ``sampler``; an fp32 model's logits take 2 B
    more), the Triton kernel's buffer, and the forward's [tokens, hidden] output, which profile_run
    keeps while it samples (gpu_model_runner.profile_run: hidden_states, then _dummy_sampler_run)."""
    per_logit = (SAMPLER_BYTES_PER_LOGIT[sampler] or rules.sampler_bytes) + (act_bytes - 2)
    rows = max_num_seqs / tp if rules.sampler_sharded else max_num_seqs
    triton = sampler_name(sampler, rules) == "triton"
    buffer = TRITON_PROGRAMS * spec.vocab_size * 4 if (triton and rules.sampler_buffer) else 0.0
    return rows * spec.vocab_size * per_logit + buffer + tokens * spec.hidden_size * act_bytes


def profiled_peak(spec: ModelSpec, tokens: int, max_num_seqs: int, tp: int, rules: VllmRules,
                  sampler: str = DEFAULT_SAMPLER, last_stage: bool = True, act_bytes: int = 2,
                  moe_workspace: bool = True) -> ProfiledPeak:
    """vLLM's profiled activation peak at ``tokens`` batched tokens and ``max_num_seqs`` sequences
    (only the last pipeline stage samples). V1 adds V1_PROFILE_WORKSPACE; from 0.12 a MoE model's
    fused-MoE workspace (``moe_workspace``: not for MXFP4 experts, whose kernels size their own)
    stays allocated through both steps."""
    workspace = moe_workspace_bytes(spec, tokens, tp, act_bytes) if (rules.moe_workspace and moe_workspace) else 0.0
    persistent = workspace + (V1_PROFILE_WORKSPACE if rules.v1 else 0.0)
    forward = tokens * act_bytes * activation_elements_per_token(spec, tp, moe_caches=not workspace)
    step = sampler_bytes(spec, max_num_seqs, tokens, rules, tp, sampler, act_bytes) if last_stage else 0.0
    held = held_allreduce_input_bytes(spec, tokens, tp, act_bytes) if rules.holds_allreduce_inputs else 0.0
    return ProfiledPeak(forward + persistent, step + persistent, held)


def held_allreduce_input_bytes(spec: ModelSpec, prefill_tokens: int, tp: int, act_bytes: int = 2) -> float:
    """Bytes the profile forward leaves unusable when every tensor-parallel all-reduce input stays
    held until the host synchronises (vLLM 0.2.x after PR 2031, before 0.3.3 set
    TORCH_NCCL_AVOID_RECORD_STREAMS=1): ProcessGroupNCCL records each all-reduce tensor on its NCCL
    stream, and PyTorch's caching allocator, on freeing such a block, waits for that stream's event
    before reusing it (c10/cuda/CUDACachingAllocator.cpp free -> insert_events), so the pool grows by
    one message per all-reduce while the host runs ahead of the GPU; vLLM 0.2.5's profile reads the
    device memory in use after the forward (worker.py profile_num_available_blocks, mem_get_info).
    One message of prefill_tokens x hidden per all-reduce: the embedding's and two per layer
    (vllm/model_executor/layers: VocabParallelEmbedding and RowParallelLinear, o_proj and down_proj).
    Assumes the host is ahead for the whole forward (a prefill of thousands of tokens is GPU-bound),
    so all of them are held at once. 0 without tensor parallelism."""
    if tp <= 1:
        return 0.0
    return (2 * spec.num_layers + 1) * prefill_tokens * spec.hidden_size * act_bytes




def comm_bytes(rules: VllmRules | None, engine: str, tp: int, pp: int, scale_up_bandwidth: float | None,
               given: float | None = None, p2p: bool = True) -> float:
    """Non-torch memory tensor / pipeline groups add to what the profile counts, bytes per GPU.
    Without NVLink, or without GPU P2P (``p2p`` False, engines.comm_rule): 0.25 GiB
    (engines.PCIE_COMM_BYTES), nothing for vLLM 0.11 and later. On NVLink, for the releases whose baseline
    snapshot precedes the distributed init ('communicators'; SGLang and TensorRT-LLM too): the
    engine's communicators (engines.ENGINE_COMMUNICATORS) x NCCL's per-communicator buffers
    (core.memory.device_memory.nccl_group_bytes, the figure training uses), one pair more per neighbouring
    pipeline stage; for vLLM 0.11 and later, the logged increase of a TP group
    (releases.NVLINK_TP_NON_TORCH)."""
    rule = E.comm_rule(tp * pp, given, scale_up_bandwidth, p2p)
    if rule == "pcie" and rules is not None and rules.comm in NVLINK_TP_NON_TORCH:
        # NCCL initialised before the snapshot (0.11+) and no all-reduce fusion off NVLink: the
        # profile adds next to nothing (vllm#29070, 0.11.1 at TP 4 on 24 GB cards bridged in pairs:
        # 'non-torch forward increase memory: 0.09GiB', below its 0.13 at TP 1)
        return 0.0
    if rule != "nvlink":
        return {"none": 0.0, "given": given or 0.0, "pcie": E.PCIE_COMM_BYTES}[rule]
    if rules is not None and rules.comm in NVLINK_TP_NON_TORCH:
        return NVLINK_TP_NON_TORCH[rules.comm] if tp > 1 else 0.0
    # imported here: device_memory pulls in numpy, which importing core.serving does not
    from gpuplan.core.memory.device_memory import nccl_group_bytes

    pairs = min(2, pp - 1)
    groups = nccl_group_bytes(tp, scale_up_bandwidth) + pairs * nccl_group_bytes(2, scale_up_bandwidth)
    return E.ENGINE_COMMUNICATORS[engine] * float(groups)


GRAPH_SAMPLE_PAGE = 2 * MiB
"""The unit of vLLM's per-graph sample: profile_cudagraph_memory (gpu_model_runner.py lines
5903-5923, v0.19.0) captures the first two sizes of each mode and takes the second capture's
``torch.cuda.mem_get_info`` free-memory drop as the cost of every further graph, which moves in
whole 2 MiB pages: every per-graph sample of the llm-d-planner v0.19.0 H100 logs is an even
number of MiB (2 to 20; 24 and 26 where a fresh 20 MiB segment opened, see the excluded row) or
the code's 1 MiB floor (a pipeline stage of 8 layers).
The estimate takes the nearest whole page (the median of that sample when the page boundary
falls anywhere), at least 1 MiB (the code's ``max(mem_samples[1], 1 << 20)``)."""

GRAPH_BYTES_PER_LAYER = 0.1656 * MiB
"""What one more captured batch size adds per decoder layer and mode. No batch-sized tensor
outlives a capture: CUDAGraphWrapper keeps each graph's output as a weak reference
(compilation/cuda_graph.py, v0.19.0 lines 320-331) and the pieces' intermediates go back to the
shared pool the next, smaller size reuses; what stays is the graph itself, whose nodes are its
kernels, a fixed number per layer (the driver's memory for the instantiated graph):
least squares (relative, through the origin, pages not rounded) of the logged estimates
less the first captures over the three named dense rows of llm-d-planner's v0.19.0 H100 logs:
Llama-3.1-8B tp 1 (0.84 GiB), Qwen2.5-7B tp 1 (0.61) and Qwen2.5-72B tp 2 (1.63), 100 further
graphs each (their own per-graph samples, PIECEWISE / FULL: 6 / 6 MiB for 32 layers, 4 / 4 for
28, 18 / 10 for 80). Every other dense row is held out."""

GRAPH_BYTES_PER_MOE_LAYER = 0.0445 * MiB
"""What an MoE layer adds per further graph on top of GRAPH_BYTES_PER_LAYER: it launches more
kernels than a dense MLP (vLLM model_executor/layers/fused_moe/fused_moe.py: fused_topk or
grouped_topk, moe_align_block_size, two invoke_fused_moe_kernel, the activation and moe_sum, where
a dense MLP has gate/up, activation and down); its intermediate caches are views of the persistent
workspace (moe_workspace_bytes), so a further graph adds no batch-sized buffer. Fitted as above,
given the dense term, on the two named MoE rows: Qwen3-30B-A3B tp 1 (48 MoE layers, 1.24 GiB,
samples 10 / 10 MiB) and Mixtral-8x7B tp 2 (32, 0.82 GiB, 6 / 8). Held out: gpt-oss-20b and
DeepSeek-V2-Lite."""

GRAPH_BYTES_PER_MLA_LAYER = 0.0717 * MiB
"""What multi-head latent attention adds per layer and further graph: DeepSeek-V2's attention
launches more kernels than GQA (vLLM model_executor/layers/mla.py and
v1/attention/backends/mla/common.py: kv_a_proj_with_mqa, the kv_a_layernorm, the rotary part split
and concatenated, the W_UK absorption bmm before FLASH_ATTN_MLA and the W_UV bmm after it in
decode). Fitted, given the dense and MoE terms, on two named rows with DeepSeek-V2-Lite's layer
shape (27 layers, hidden 2048, 16 heads, kv_lora_rank 512, 64 routed + 2 shared experts, top 6):
Kimi-VL-A3B-Instruct's language model at tp 1 (1.19 GiB, samples 8 / 6 MiB) and tp 2 (1.04 GiB,
8 / 8). Held out: DeepSeek-V2-Lite-Chat itself (1.39 GiB, 10 / 8), the same layer shape as the
fitted rows: untested on other MLA shapes such as DeepSeek-V3 / Kimi-K2 (61 layers, hidden 7168)."""

GRAPH_BYTES_PER_QUANT_LAYER = 0.0276 * MiB
"""What quantizing the activations before each W8A8 GEMM adds per layer and further graph: an
fp8 / int8 checkpoint's linear layers quantize their input per token on every call (vLLM
QuantFP8, a native op under torch.compile: the Qwen2.5-7B fp8-dynamic log lists 'quant_fp8': 112,
four per layer; compressed-tensors W8A8 int8 runs scaled_int8_quant), and the scaled GEMM
(CUTLASS scaled_mm) takes the scales as one more argument. Fitted, given the dense term, on the
three named RedHatAI fp8-dynamic rows: Llama-3.3-70B tp 2 (1.82 GiB, 20 / 12) and tp 4 (1.70,
18 / 14), Qwen2.5-7B tp 1 (0.71, 6 / 4). Held out: the W8A8 int8 rows and Llama-3.1-8B with
vLLM's online fp8."""

ACTIVATION_QUANT_DTYPES = ("fp8", "int8")
"""Compute dtypes (WeightFormat.compute_dtype) whose GEMMs take quantized activations, where the GPU
has tensor cores of that dtype (quantizes_activations). fp4 is left out: NVFP4 W4A4 on Blackwell
quantizes its activations too (scaled_fp4_quant), but no logged row measures what that adds to a
graph, so the fitted W8A8 term is not carried over to it (its estimate may be low by up to
layers x 0.0276 MiB a graph)."""


def quantizes_activations(compute_dtype: str, tensor_core_dtypes: tuple[str, ...] | None = None) -> bool:
    """Whether the GEMMs of ``compute_dtype`` quantize their activations (GRAPH_BYTES_PER_QUANT_LAYER)
    on a GPU whose tensor cores run ``tensor_core_dtypes`` (the dtypes of Accelerator.peak_flops;
    None: not known, the dtype is taken as run natively). An fp8 checkpoint on a part without fp8
    tensor cores (Ampere, sm < 89) runs as weight-only W8A16 on vLLM's FP8 Marlin kernel ('for GPUs
    that lack FP8 hardware support', quantization/kernels/wFP8a16 and utils/marlin_utils_fp8.py):
    no activation quantization."""
    if compute_dtype not in ACTIVATION_QUANT_DTYPES:
        return False
    return tensor_core_dtypes is None or compute_dtype in tensor_core_dtypes


def per_graph_bytes(spec: ModelSpec, layers: int, activation_quant: bool = False) -> float:
    """vLLM's per-graph sample for one mode: ``layers`` x (GRAPH_BYTES_PER_LAYER + the MoE share x
    GRAPH_BYTES_PER_MOE_LAYER + GRAPH_BYTES_PER_MLA_LAYER for latent attention +
    GRAPH_BYTES_PER_QUANT_LAYER where the GEMMs quantize their activations), in whole
    GRAPH_SAMPLE_PAGE pages, at least 1 MiB. Bytes."""
    moe_share = spec.num_moe_layers / spec.num_layers if spec.moe is not None else 0.0
    mla = GRAPH_BYTES_PER_MLA_LAYER if spec.attention.kv_lora_rank else 0.0
    quant = GRAPH_BYTES_PER_QUANT_LAYER if activation_quant else 0.0
    per_layer = GRAPH_BYTES_PER_LAYER + GRAPH_BYTES_PER_MOE_LAYER * moe_share + mla + quant
    return max(round(layers * per_layer / GRAPH_SAMPLE_PAGE) * GRAPH_SAMPLE_PAGE, MiB)


def graph_estimate_band(spec: ModelSpec, max_num_seqs: int, max_tokens: int | None = None) -> float:
    """± bytes on graph_bytes from the per-graph samples' resolution, not fitted: vLLM multiplies each
    mode's one second-capture sample by its further sizes (profile_cudagraph_memory, v0.19.0
    gpu_model_runner.py line 5926), the sample moves in whole GRAPH_SAMPLE_PAGE pages, and which page
    count a shape gets the code does not fix (no allocation of the window depends on TP;
    docs/inference.md, 'Tensor parallelism, read from the code'): one page in the larger mode's
    sample x its further sizes, 100 MiB at 51 sizes. 28 of the 35 scored 0.19 logs lie within it,
    six more within 1.25x (their first captures' error); Qwen2.5-7B TP 4 is two pages off."""
    piecewise, full = capture_sizes(spec, max_num_seqs, max_tokens)
    return GRAPH_SAMPLE_PAGE * (max(len(piecewise), len(full)) - 1)


def capture_sizes(spec: ModelSpec, max_num_seqs: int, max_tokens: int | None = None):
    """(piecewise, full) batch sizes vLLM captures for ``spec`` (releases.graph_capture_sizes), the largest
    capped by the model type's GRAPH_CAPTURE_LIMIT and by max_num_batched_tokens ``max_tokens``."""
    limit = GRAPH_CAPTURE_LIMIT.get(spec.model_type, 512)
    return graph_capture_sizes(max_num_seqs, min(limit, max_tokens or limit))


FA_MAX_SPLITS = 32
"""VLLM_FLASH_ATTN_MAX_NUM_SPLITS_FOR_CUDA_GRAPH's default (vllm/envs.py, vllm PR 25274): the
split-KV count FlashAttention 3 is planned for in a full CUDA graph
(v1/attention/backends/flash_attn.py, max_num_splits when the batch runs under a full graph)."""


FA_SPLIT_MAX_BATCH = 992
"""FlashAttention 3 runs a varlen batch of more sequences than this unsplit, whatever num_splits
asks: PREPARE_VARLEN_MAX_BATCHES_1CTA (vllm-project/flash-attention hopper/flash_api.cpp, commit
5824e6e of 2026-01-16, the one v0.19.0's flash_attn.py cites: 'disable split for varlen and >992
batches for now'). gpt-oss captures full decode graphs up to 1,024 sequences: its v0.19.0 log's
FULL first capture is 8 MiB, no accumulators (the PIECEWISE one, 128 MiB, is the larger)."""


def split_kv_accumulator_bytes(spec: ModelSpec, tokens: int, tp: int, act_bytes: int = 2) -> float:
    """FlashAttention's split-KV accumulators in one full-graph capture of ``tokens`` decode
    tokens: out_accum [splits, heads/tp, tokens, d] and softmax_lse_accum [splits, heads/tp,
    tokens], fp32, allocated inside the captured call (flash_attn mha_fwd with num_splits > 1), so
    they land in the graph pool. MLA (FLASH_ATTN_MLA) attends in the latent space, d =
    kv_lora_rank. Checked against llm-d-planner's v0.19.0 H100 logs ('Estimated FULL CUDA graph
    memory: X MiB first-capture'): Llama-3.1-8B 260 MiB (formula 258), Qwen2.5-7B 228 (226),
    Llama-3.1-8B tp 4 70 (65), DeepSeek-V2-Lite 522 (513). 0 above FA_SPLIT_MAX_BATCH sequences.
    Only FLASH_ATTN / FLASH_ATTN_MLA have them: graph_bytes charges nothing for TRITON_ATTN
    (attention_backend.vllm_attention_backend)."""
    if tokens > FA_SPLIT_MAX_BATCH:
        return 0.0
    a = spec.attention
    width = a.kv_lora_rank or a.head_dim
    return FA_MAX_SPLITS * (a.num_heads / tp) * tokens * (width + 1) * 4


CUBLAS_WORKSPACE_SM90 = 32 * MiB
CUBLAS_WORKSPACE_BEFORE_SM90 = 4096 * 1024 * 2 + 16 * 1024 * 8  # ':4096:2:16:8': 2 x 4 MiB + 8 x 16 KiB
CUBLAS_WORKSPACE = {"hopper": CUBLAS_WORKSPACE_SM90, "blackwell": CUBLAS_WORKSPACE_SM90,
                    "ampere": CUBLAS_WORKSPACE_BEFORE_SM90, "volta": CUBLAS_WORKSPACE_BEFORE_SM90}
"""PyTorch's default cuBLAS workspace per (handle, stream), by GPU generation
(aten/src/ATen/cuda/CublasHandlePool.cpp getChosenWorkspaceSize: ':4096:2:16:8 default, 32MiB for
Hopper and Blackwell', i.e. compute capability 9.x and up; 8.125 MiB before). Keyed by
Accelerator.collective_arch (NCCL's generation index: 'ampere' covers Ada's 8.9 too)."""


def cublas_workspace_bytes(gpu_arch: str | None) -> float:
    """The cuBLAS workspace a new stream allocates on its first GEMM (CUBLAS_WORKSPACE; ROCm's
    default, 32 MiB, where the generation is not known)."""
    return CUBLAS_WORKSPACE.get(gpu_arch or "", CUBLAS_WORKSPACE_SM90)


def graph_bytes(spec: ModelSpec, max_num_seqs: int, tp: int, layers: int, act_bytes: int = 2,
                blas_workspace: float = 0.0, activation_quant: bool = False,
                max_tokens: int | None = None, backend: str | None = None, fa_version: int = 3,
                moe_experts: str = "fused") -> float:
    """vLLM's CUDA-graph estimate (gpu_model_runner.profile_cudagraph_memory, logged from 0.19,
    subtracted from 0.21): per mode the first capture and, for every further size, what the second
    capture took (per_graph_bytes); the pool overlays the modes, so the larger first capture counts
    once: max(first) + sum((n - 1) x per graph). Each first capture holds its own graph as well
    (its sample spans the capture and the graph's instantiation, _warmup_and_capture) and its
    buffers: the piecewise one at the largest size holds the forward's activations twice (the
    warm-up run leaves them in the caching allocator's reserve, empty_cache runs once, before the
    modes, and the capture allocates them again in the private pool) plus ``blas_workspace``: the
    capture runs on its own stream, whose first GEMM allocates a cuBLAS workspace
    (cublas_workspace_bytes) inside the pool (v0.19.0 logs, H100: Llama-3.1-8B 138 MiB against
    2 x 54 + 32 + 6 = 146). The full first capture reuses that pool and that stream's workspace and
    adds the attention's split-KV accumulators where the backend allocates them in the call
    (FlashAttention; ``backend``: attention_backend.vllm_attention_backend's, None = the one an
    ``act_bytes`` model without other properties gets; ``fa_version`` 2, compute capability 8.x,
    leaves a large decode batch unsplit: attention_backend.fa2_splits_first_capture). TRITON_ATTN allocates its split-decode
    buffers before the profile (attention_backend.triton_softmax_segment_bytes), so its full first
    capture is its graph alone: the Gemma 3 IT v0.19.0 logs, 4-8 MiB. The piecewise first capture is the larger of the two,
    so its error reaches the estimate, in five of the logs: fp32 224 MiB against 2 x 108 + 32 + 6 =
    254 (+13%; Triton attention's full capture logs 4), Llama-3.1-8B tp 4 84 against 83, Qwen2.5-7B
    tp 2 / tp 4 122 / 104 against 113 / 85 (at tp 2 the modelled full one, 117, is the larger) and
    gpt-oss-20b 128 against 184 (+44%). ``layers``: a pipeline
    stage's; ``activation_quant``: W8A8 GEMMs (quantizes_activations); ``max_tokens``:
    max_num_batched_tokens, which caps the largest captured size (config/vllm.py
    _set_cudagraph_sizes, v0.19.0: max_cudagraph_capture_size = min(max_num_tokens, ...));
    ``moe_experts``: where the routed experts' buffers live (vllm_moe_experts): from 0.19 a MoE
    layer's routed caches are workspace views the capture does not allocate, but MXFP4 experts
    allocate their output and activated intermediate in the call (first_capture_elements_per_token;
    gpt-oss-20b tp 2: 106 MiB against 128 logged, 184 with the fused caches charged)."""
    piecewise, full = capture_sizes(spec, max_num_seqs, max_tokens)
    per_graph = per_graph_bytes(spec, layers, activation_quant)
    elements = first_capture_elements_per_token(spec, tp, moe_experts)
    first_piecewise = 2 * max(piecewise) * act_bytes * elements + blas_workspace
    backend = backend or AB.vllm_attention_backend(spec, act_bytes)[0]
    accumulates = full and (backend == AB.FLASH_ATTN_MLA or backend == AB.FLASH_ATTN and (
        fa_version != 2 or AB.fa2_splits_first_capture(spec, max(full), tp)))
    first_full = split_kv_accumulator_bytes(spec, max(full), tp, act_bytes) if accumulates else 0.0
    further = len(piecewise) - 1 + max(len(full) - 1, 0)
    return max(first_piecewise, first_full) + per_graph * (1 + further)
