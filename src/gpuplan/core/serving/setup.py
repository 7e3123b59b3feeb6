"""How a model is served, apart from the GPU, layout and load: the engine's memory settings
(``Runtime``), the achievable fractions of the roofline (``Efficiency``) and the serving options
(``ServingSetup``: weight format, KV dtype, speculation, prefix caching, LoRA, decode kernel).
Units: bytes, seconds."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from gpuplan.core.serving import lora as L
from gpuplan.core.serving import releases as R
from gpuplan.core.serving.profile import DEFAULT_SAMPLER
from gpuplan.core.serving.speculative import Speculation
from gpuplan.core.serving.weights import WeightFormat

GiB = 2**30
ENDPOINTS = ("completions", "chat")
"""The OpenAI-compatible endpoints a served request can reach (Runtime.endpoint): vLLM's /v1/completions and
/v1/chat/completions (entrypoints/openai/api_server.py), SGLang's alike."""


@dataclass(frozen=True)
class Runtime:
    """The engine, its release, its memory settings and the memory outside weights and KV cache,
    bytes per GPU. None means the release's own default (core/serving/releases.py)."""

    gpu_memory_utilization: float | None = None
    """vLLM: the share of the device's memory the instance may use for weights, activations,
    non-torch memory (and, from 0.21, CUDA graphs) and the KV cache; None = the release's default
    (0.9; 0.92 from 0.21)."""
    engine: str = "vllm"
    """'vllm', 'sglang' or 'trtllm' (core/serving/engines.py): how the memory is split."""
    version: tuple[int, int, int] | None = None
    """The engine release whose rules apply (``--engine vllm==0.19``); None = the newest modelled."""
    mem_fraction_static: float | None = None
    """SGLang: (weights + KV pool) / device memory; None = SGLang's own default for the GPU."""
    free_gpu_memory_fraction: float | None = None
    """TensorRT-LLM: share of the memory left after weights and activations that goes to the KV
    cache; None = its default 0.9."""
    driver_reserved: float = 0.5 * GiB
    """Memory CUDA does not report as the device total: vLLM logs total_gpu_memory 23.58 GiB on a
    24 GiB RTX 3090 (vllm#10517), 79.19 GiB on an H100 of 79.65 GiB (llm-d-planner's 0.19 runs),
    79.15 GiB on an A100 80GB."""
    non_torch: float | None = None
    """Non-torch memory the profile counts on one GPU; None = the release's (vLLM: 0.35 GiB for
    0.6.4 ... 0.25 GiB from 0.18, core/serving/releases.py; SGLang and TensorRT-LLM: the CUDA
    context, 0.35 GiB as vllm#10517 logs it)."""
    comm_buffers: float | None = None
    """Non-torch memory tensor / pipeline parallelism adds; None = derived
    (core.serving.profile.comm_bytes)."""
    cuda_graphs: float | None = None
    """CUDA-graph memory; None = estimated (core.serving.profile.graph_bytes) and counted where
    the release counts it (vLLM 0.21+, TensorRT-LLM's PyTorch backend); 0 = eager."""
    prefill_tokens: int | None = None
    """max_num_batched_tokens the activation profile runs; None = the release's default."""
    max_num_seqs: int | None = None
    """Sequences per step (the sampler profile); None = the release's default."""
    sampler: str = DEFAULT_SAMPLER
    """The sampler the profile runs (core.serving.profile.SAMPLER_BYTES_PER_LOGIT): 'auto' = the
    release's."""
    p2p: bool = True
    """The GPUs of a tensor / pipeline group have peer-to-peer access (the driver's
    cudaDeviceCanAccessPeer). False (a VM or container without it, or cards the driver gives none):
    the custom all-reduce is off (vLLM custom_all_reduce.py: 'Custom allreduce is disabled because
    your platform lacks GPU P2P capability') and NCCL connects through SHM in host memory (NCCL
    src/transport/p2p.cc p2pCanConnect -> shm.cc), so the NCCL memory and all-reduce rules of
    PCIe-only GPUs apply (core.serving.engines.comm_rule, kernels.tp_allreduce_seconds); the part
    keeps its own memory bandwidth and compute."""
    endpoint: str = "completions"
    """The OpenAI-compatible endpoint the requests reach (ENDPOINTS): 'completions' (/v1/completions, a text
    prompt) or 'chat' (/v1/chat/completions: the server renders the model's chat template first; vLLM 0.11.0
    also parses the template again for every request, core.serving.request_path.chat_template_seconds)."""

    @property
    def release(self) -> R.EngineRelease:
        return _release(self.engine, self.version)

    def vllm_rules(self, moe: bool = False) -> R.VllmRules:
        return R.vllm_rules(self.release.version, moe)

    def utilization(self) -> float:
        """vLLM's gpu_memory_utilization: the given one, else the release's default."""
        return self.gpu_memory_utilization or self.vllm_rules().default_util

    def context_bytes(self) -> float:
        """Non-torch memory on one GPU for SGLang / TensorRT-LLM (their total is measured after the
        CUDA context exists)."""
        return self.non_torch if self.non_torch is not None else CUDA_CONTEXT

    def batch_limits(self, memory_bytes: float, gpu_name: str = "", max_model_len: int = 8192) -> tuple[int, int]:
        """(max_num_batched_tokens, max_num_seqs): the user's, else ``vllm serve``'s default for the
        release and GPU (core.serving.releases.vllm_batch_defaults). A max_num_seqs left to the
        default is at most the token budget (vLLM v0.19.0 vllm/engine/arg_utils.py:2238-2240, 'if
        orig_max_num_seqs is None: max_num_seqs = min(max_num_seqs, max_num_batched_tokens)'), so
        --prefill-tokens 512 alone gives 512 sequences, not the default 1,024 (SEQS_CAPPED_SINCE)."""
        tokens, seqs = R.vllm_batch_defaults(self.release.version, memory_bytes, gpu_name, max_model_len)
        tokens = self.prefill_tokens or tokens
        if self.max_num_seqs is not None:
            return tokens, self.max_num_seqs
        capped = self.engine == "vllm" and self.release.version >= SEQS_CAPPED_SINCE
        return tokens, min(seqs, tokens) if capped else seqs


@lru_cache(maxsize=64)
def _release(engine: str, version: tuple | None) -> R.EngineRelease:
    """Runtime.release of (engine, version): one frozen EngineRelease per pair, not a new one each read (a serving
    sizing answer read it ~105,000 times, 0.35 of 3.2 s profiled; docs/performance.md 'Serving sizing')."""
    return R.EngineRelease(engine, version or R.NEWEST[engine], version is not None)


SEQS_CAPPED_SINCE = (0, 19, 0)
"""The first vLLM release read with the default max_num_seqs capped by max_num_batched_tokens
(arg_utils.py @v0.19.0:2238-2240; main @99d7eb5 has it too). Earlier releases were not read and
keep their default (256 or 1,024) whatever the token budget."""


CUDA_CONTEXT = 0.35 * GiB
"""CUDA context and cuBLAS workspace outside PyTorch: vLLM 0.6.4 logs 'non_torch_memory=0.35GiB'
on one RTX 3090 (vllm#10517); the engines whose total is read after the context exists subtract it."""


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions of the roofline by kernel (expected, low, high), and the host time
    kernels cannot hide. The expected values were fitted on TensorRT-LLM v0.6.1's static-batch
    table (21 rows: Llama-2-7B / 70B and Falcon-180B on H100 FP8 and A100 FP16, docs/inference.md);
    its v0.9.0 table and every other speed reference are held out. Calibrate from a measured run
    with --bandwidth-efficiency / --compute-efficiency."""

    bandwidth: tuple[float, float, float] = (0.85, 0.65, 0.95)
    """HBM bandwidth while GEMMs stream weights and elementwise kernels stream activations."""
    compute: tuple[float, float, float] = (0.80, 0.60, 0.90)
    """16-bit GEMMs at large M vs the dense peak (cuBLAS / CUTLASS tiles filled)."""
    kv: float = 0.95
    """Decode attention reading the KV cache vs HBM bandwidth (FlashAttention / FlashInfer decode,
    XQA, masked MHA: long contiguous reads); scaled like ``bandwidth`` across the range."""
    attention: float = 0.60
    """Prefill flash attention vs the dense peak (FlashAttention-2 forward reaches 0.5-0.73 of an
    A100, Dao 2023 Fig. 4; FlashAttention-3 0.6-0.75 of an H100); scaled like ``compute``."""
    low_precision_gemm: float = 0.75
    """FP8 / INT8 / FP4 GEMMs reach this share of the 16-bit fraction (fitted 0.60 vs 0.80: their
    peak doubles, the epilogue and scaling do not)."""
    layer_launch_s: float = 80e-6
    """Host time per decoder layer of a step that runs eagerly (no CUDA graph): ~10 kernel launches
    a layer, which the GPU waits for (8 us a launch outruns the ~4.5 us a small kernel takes, so
    the eager layer is launch-bound and pays no graph_layer_s on top); fitted, as above, on TensorRT
    engines enqueued without graphs (--launch-layer-us). Against vLLM's own eager steps it is low:
    vllm PR 1440 (Llama-2-7B, batch 1, 5 + 100 tokens: 1.2 s eager, 1.05 s graphs) gives 1.5 ms a
    step, 47 us a layer more than a graph step, where 80 - 50 = 30 us here (docs/inference.md
    section 5: no eager vLLM row to fit a vLLM value on)."""
    graph_max_tokens: int = 512
    """Steps of at most this many tokens replay a CUDA graph and pay no launch time (prefill steps
    only where the release captures them: kernels.prefill_graphs_of); 0 = never (--cuda-graph-gib 0;
    core.serving.kernels.graph_max_tokens_of gives each release's; SGLang's follows the step's GPU and
    TP, roofline.graph_max_tokens_at)."""
    graph_layer_s: float | None = None
    """GPU time per decoder layer of a step that replays a CUDA graph, beyond its kernels' roofline
    (the small kernels' floor: roofline.StepTime.kernel_floor_s, not host time); None = the
    release's (core.serving.graph_floor.graph_layer_seconds_of: 4.267 us a kernel, 46.9 us a dense layer, for
    vLLM from 0.2.6 and SGLang, fitted on vllm PR 23197's Llama-3.1-8B rows, times the layer's kernels (MoE,
    q / k norms); 0 for TensorRT-LLM, unmeasured there); --graph-layer-us (taken as given, per
    layer; over the layer's kernels, the rate of the kernels outside the layers: outside_layers.kernel_seconds).
    Eager steps pay layer_launch_s instead."""
    allreduce_latency_s: float = 8e-6
    """Small-message all-reduce latency over NVLink: vLLM custom all-reduce 8.5-11.8 us at 4-32 KB on
    H100, TP 2-8 (sgl-project/sglang#2904)."""
    pcie_latency_factor: float = 3.0
    """Without NVLink (scale-up link < 100 GB/s: PCIe) NCCL goes through the host bridge; latency x3
    is a gpuplan assumption (no published measurement found)."""
    custom_allreduce_bytes: float | None = None
    """TP all-reduce messages up to this size run the engine's own kernel, larger ones NCCL (core.
    collectives, by size); 0 = NCCL always; None = the release's (core.serving.kernels.
    custom_allreduce_bytes_of)."""
    ridge_exposed: float = 0.75
    """Share of the shorter GEMM bound (weight streaming or math) a step of few tokens leaves exposed:
    ridge_exposed x min(1, ridge_tile_tokens / tokens) of it adds to the longer one. With one
    128-row tile (CUTLASS / cuBLAS CTA tile M = 128) every CTA streams a whole K x N-tile panel of
    weights for a single tile of math, so near the ridge (A100 FP16 at 128 tokens: streaming 7.8 ms,
    math 6.9 ms for Llama-2-7B) neither bound is reached. Fitted on TensorRT-LLM v0.5's 14 first-token
    rows (0: 18.5% mean error, 0.75: 9.8%); its v0.9.0 first-token table is held out."""
    ridge_tile_tokens: int = 128
    """Tokens of one GEMM tile row (the CTA tile M of cuBLAS / CUTLASS's large-tile kernels)."""
    kv_repeat_l2_hit: float = 0.3
    """Per-query-head decode kernels (roofline.kv_reads_per_step): share of the repeated reads of a
    KV head that hit L2 instead of HBM. Those kernels launch one block per (query head, sequence)
    with the query heads of one KV head in adjacent blocks (grid {num_heads, batch_size}), so blocks
    resident together share part of the cache lines; fitted on TensorRT-LLM v0.6.1's 21 rows
    (0: 8.9% mean, max 25.7%; 0.3: 5.7%, max 12.0%)."""

    def exposed_share(self, tokens) -> float:
        """The ridge_exposed share at a step of ``tokens`` tokens (1 token = a whole tile's share)."""
        return self.ridge_exposed * min(1.0, self.ridge_tile_tokens / max(tokens, 1))

    def latency(self, link_bytes_per_s: float | None) -> float:
        slow = link_bytes_per_s is None or link_bytes_per_s < 100e9
        return self.allreduce_latency_s * (self.pcie_latency_factor if slow else 1.0)

    def rates(self, which: int, low_precision: bool) -> tuple[float, float, float, float]:
        """(weights / elementwise bandwidth, GEMM compute, KV bandwidth, prefill attention) fractions
        at ``which`` (0 expected, 1 low, 2 high); ``low_precision``: an FP8 / INT8 / FP4 GEMM."""
        bw, gemm = self.bandwidth[which], self.compute[which]
        kv = min(1.0, self.kv * bw / self.bandwidth[0])
        attention = min(1.0, self.attention * gemm / self.compute[0])
        return bw, gemm * (self.low_precision_gemm if low_precision else 1.0), kv, attention


OTHER_ENGINES = Efficiency(bandwidth=(0.65, 0.45, 0.85), compute=(0.5, 0.3, 0.7), kv=0.65, attention=0.5,
                           low_precision_gemm=1.0, graph_max_tokens=1 << 30, graph_layer_s=0.0)
"""The prior for engines outside vLLM, SGLang and TensorRT-LLM (llama.cpp, MLC, ExLlama): six
published batch-1 decodes imply 0.51-0.82 of HBM bandwidth, median 0.67 (llama.cpp#4766 RTX 3090
F16 0.69, Q4_0 0.51; mlc-ai/llm-perf-bench#1 RTX 4090: MLC 0.75/0.82, ExLlama 0.56/0.65). That
whole-step fraction already holds their per-layer overheads: no graph_layer_s on top."""


@dataclass(frozen=True)
class ServingSetup:
    """Everything about how the model is served, apart from the GPU, layout and load."""

    fmt: WeightFormat
    kv_bytes: float
    """Bytes per cached K/V element (kv_cache.KV_DTYPE_BYTES)."""
    runtime: Runtime = Runtime()
    efficiency: Efficiency = Efficiency()
    block_size: int = 16
    speculation: Speculation | None = None
    """Speculative decoding (core/serving/speculative.py); None = plain decoding."""
    prefix_hit: float = 0.0
    """Share of each prompt found in the prefix cache (vLLM automatic prefix caching, SGLang
    RadixAttention, Zheng et al. 2024, arXiv:2312.07104): those tokens skip prefill compute and,
    coming from a prefix every sequence shares, are cached once (an assumption: hits from
    per-user history are not shared)."""
    lora: L.LoraServing | None = None
    """Multi-LoRA serving (core/serving/lora.py): adapter slots on every GPU; None = no LoRA."""
    decode_attention: str = "grouped"
    """How the decode kernel reads the KV cache of a GQA / MQA model
    (core.serving.roofline.kv_reads_per_step; the release's default: kernels.decode_attention_of)."""
    mm_prefix_lm: bool = False
    """vLLM attends bidirectionally over each image's tokens for this checkpoint
    (core.serving.attention_backend.is_mm_prefix_lm of its config: a multimodal Gemma 3, not its
    text-only export), which from 0.19 only TRITON_ATTN runs: no FlashAttention buffers in its graphs."""
