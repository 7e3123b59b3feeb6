"""How a model is served, apart from the GPU, layout and load: the engine's memory settings
(``Runtime``), the achievable fractions of the roofline (``Efficiency``) and the serving options
(``ServingSetup``: weight format, KV dtype, speculation, prefix caching, LoRA, decode kernel).
Units: bytes, seconds."""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core.serving import engines as E
from gpuplan.core.serving import lora as L
from gpuplan.core.serving.engines import DEFAULT_SAMPLER
from gpuplan.core.serving.speculative import Speculation
from gpuplan.core.serving.weights import WeightFormat

GiB = 2**30


@dataclass(frozen=True)
class Runtime:
    """The engine's memory settings and the memory outside weights and KV cache, bytes per GPU."""

    gpu_memory_utilization: float = 0.90
    """vLLM default 0.9 (engine args; newer releases 0.92): the share of the GPU's memory the
    instance may use for weights + activations + KV cache."""
    engine: str = "vllm"
    """'vllm' or 'sglang' (core/serving/engines.py): how the memory is split."""
    mem_fraction_static: float | None = None
    """SGLang: (weights + KV pool) / device memory; None = SGLang's own default for the GPU."""
    free_gpu_memory_fraction: float | None = None
    """TensorRT-LLM: share of the memory left after weights and activations that goes to the KV
    cache; None = its default 0.9."""
    driver_reserved: float = 0.5 * GiB
    """Memory CUDA does not report as the device total: vLLM logs total_gpu_memory 23.58 GiB on a
    24 GiB RTX 3090 (vllm#10517), 79.11-79.25 GiB on an H100 of 79.65 GiB, 79.15 GiB on an A100 80GB."""
    non_torch: float = 0.35 * GiB
    """CUDA context, cuBLAS workspace: vLLM 'non_torch_memory=0.35GiB' (vllm#10517, TP 1)."""
    comm_buffers: float | None = None
    """NCCL buffers when tp·pp > 1; None = derived (comm_bytes): on NVLink, the engine's
    communicators (core.serving.engines.ENGINE_COMMUNICATORS) x NCCL's per-communicator buffers, the figure
    training uses (core.device_memory.nccl_group_bytes); without NVLink 0.25 GiB (PCIE_COMM_BYTES)."""
    cuda_graphs: float = 0.5 * GiB
    """CUDA-graph pool, counted before the KV cache since vLLM 0.21 (log in noonghunna/club-3090#104:
    utilization 0.88 behaves as 0.8592 without it, 0.49 GiB of a 24 GiB card). 0 when eager or on
    vLLM <= 0.20 (graphs came out of the 1 - utilization headroom then)."""
    prefill_tokens: int | None = None
    """max_num_batched_tokens the activation profile runs; None = vLLM serve's default for the GPU."""
    max_num_seqs: int | None = None
    """Sequences per step (the sampler profile); None = vLLM serve's default for the GPU."""
    sampler: str = DEFAULT_SAMPLER
    """Which sampler the profile runs (SAMPLER_BYTES_PER_LOGIT): 'estimate' or 'torch-sort'."""
    holds_allreduce_inputs: bool = False
    """vLLM 0.2.x after PR 2031 (before 0.3.3): the profile counts the all-reduce inputs the caching
    allocator cannot reuse yet (core.serving.engines.held_allreduce_input_bytes) in its peak."""

    profile_counts_runtime: bool = True
    """False for vLLM <= 0.2.4, whose profile counted PyTorch's allocated peak only (worker.py
    torch.cuda.max_memory_allocated, replaced by PR 2031): the KV cache is sized as if the CUDA
    context, NCCL buffers and CUDA graphs took nothing."""

    def comm_bytes(self, tp: int, pp: int = 1, scale_up_bandwidth: float | None = None) -> float:
        """NCCL buffers per GPU: the tensor-parallel group's communicators and, with pipeline
        stages, the neighbouring pairs' (one or two per stage)."""
        rule = E.comm_rule(tp * pp, self.comm_buffers, scale_up_bandwidth)
        if rule != "nvlink":
            return {"none": 0.0, "given": self.comm_buffers, "pcie": E.PCIE_COMM_BYTES}[rule]
        # imported here: device_memory pulls in numpy, which importing core.serving does not
        from gpuplan.core.device_memory import nccl_group_bytes

        pairs = min(2, pp - 1)
        groups = nccl_group_bytes(tp, scale_up_bandwidth) + pairs * nccl_group_bytes(2, scale_up_bandwidth)
        return E.ENGINE_COMMUNICATORS[self.engine] * float(groups)

    def batch_limits(self, memory_bytes: float, gpu_name: str = "") -> tuple[int, int]:
        """(max_num_batched_tokens, max_num_seqs): the user's, else vLLM ``vllm serve`` defaults
        (engine/arg_utils.py get_batch_defaults, OPENAI_API_SERVER): 8192 and 1024 on GPUs with
        >= 70 GiB that are not A100s, else 2048 and 256."""
        big = memory_bytes >= 70 * GiB and "a100" not in gpu_name.lower()
        tokens, seqs = (8192, 1024) if big else (2048, 256)
        return self.prefill_tokens or tokens, self.max_num_seqs or seqs


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions of the peaks (expected, low, high); calibrate from a measurement."""

    bandwidth: tuple[float, float, float] = (0.65, 0.45, 0.85)
    """Decode weight/KV streaming vs peak HBM bandwidth (MBU). Six published batch-1 decodes imply
    0.51-0.82, median 0.67 (llama.cpp#4766 RTX 3090 F16 0.69, Q4_0 0.51; mlc-ai/llm-perf-bench#1 RTX 4090:
    MLC 0.75/0.82, ExLlama 0.56/0.65; docs/inference.md); eager PyTorch on H100 only 0.27 (arXiv 2605.30571)."""
    compute: tuple[float, float, float] = (0.5, 0.3, 0.7)
    """Prefill / large-batch matmul FLOPs vs dense peak (MFU). A gpuplan prior, like training's 0.4."""
    allreduce_latency_s: float = 8e-6
    """Small-message all-reduce latency over NVLink: vLLM custom all-reduce 8.5-11.8 us at 4-32 KB on
    H100, TP 2-8 (sgl-project/sglang#2904)."""
    pcie_latency_factor: float = 3.0
    """Without NVLink (scale-up link < 100 GB/s: PCIe) NCCL goes through the host bridge; latency x3
    is a gpuplan assumption (no published measurement found)."""

    def latency(self, link_bytes_per_s: float | None) -> float:
        slow = link_bytes_per_s is None or link_bytes_per_s < 100e9
        return self.allreduce_latency_s * (self.pcie_latency_factor if slow else 1.0)


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
    """How the decode kernel reads the KV cache of a GQA / MQA model (kv_reads_per_step)."""
