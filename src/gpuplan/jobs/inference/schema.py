"""The inputs of ``gpuplan infer``: a model, a GPU and a layout, the load (context and
concurrent sequences), the engine's memory settings and the efficiency factors."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import model_validator

from gpuplan.core import units
from gpuplan.core.serving import engines as E
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import setup as SU
from gpuplan.core.serving import kv_cache as K
from gpuplan.core.serving import lora as L
from gpuplan.core.serving import profile as P
from gpuplan.core.serving import releases as REL
from gpuplan.core.serving import speculative as S
from gpuplan.errors import InputError
from gpuplan.jobs.inference import inputs_group as IG
from gpuplan.jobs.inference import inputs_releases as IR
from gpuplan.schema import serving_rules as SR
from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V
from gpuplan.schema.model_fields import ModelFields

GiB = 2**30
QUANTIZATIONS = ("auto", "fp32", "bf16", "fp16", "fp8", "int8", "int4")
KV_DTYPES = ("auto", *K.KV_DTYPE_BYTES)

UNREAD_DEFAULTS = {"free_gpu_memory_fraction": E.TRTLLM_FREE_FRACTION,
                   "allreduce_latency_us": SU.Efficiency().allreduce_latency_s * 1e6}
"""Defaults of fields whose field default is None (TensorRT-LLM's share, the collective latency): restated where
nothing reads them, answered as unstated (the lead's rule, review w16 R5 S3; wave 18)."""


def _f(default, help: str, shown: str | None = None):
    return V.field(default, help, shown)


MIN_ENGINE_FRACTION = 0.01
"""Floor of the engines' memory shares. vLLM accepts (0, 1] (config/cache.py: gt=0, le=1); gpuplan
floors it at 1%, far below any working setting, since the memory needed is divided by it (a share
of 5e-324 made it infinite)."""


def _engine_fraction(value: Any, info) -> float:
    parsed = T.fraction(value, info)
    if parsed < MIN_ENGINE_FRACTION:
        raise InputError(info.field_name or "fraction", value,
                         f"must be between {MIN_ENGINE_FRACTION:g} and 1 (e.g. 0.9 or 90%)")
    return parsed


MIN_TARGET_S = 1e-6
"""A latency target below a microsecond is 0 in all but name (no GPU step is that fast)."""


def _target(high: float, examples: str):
    """A latency target: a positive duration (0 is refused: omit the target for no limit). ``examples``: latencies
    valid for this target, named by every refusal of its form (`--tpot 50` was told '30min, 2h or 90s')."""
    parse = T.seconds(high, examples=examples)
    latency_units = [u for u, size in (("ms", 1e-3), ("s", 1.0), ("min", 60.0), ("h", 3600.0)) if size <= high]
    unit_list = ", ".join(latency_units[:-1]) + f" or {latency_units[-1]}"

    positive = (f"must be a positive duration, at least 0.001ms (e.g. {examples.split(' or ')[0]}); omit it for no "
                "limit")

    def check(value: Any, info) -> float:
        try:
            seconds = parse(value, info)
        except units.NotPositive as exc:  # '1e-400ms' (0 once read) as '0' and '1e-20h' are told, not as '-5ms'
            if isinstance(exc, units.Overflowed) or str(value).strip().startswith("-"):
                raise
            raise exc.retold(exc.field, exc.value, positive) from None
        except InputError as exc:  # core.units names days and weeks ('7d, 36h, 90min or 2w'): a latency's units
            if not exc.expected.startswith("expected a duration such as"):
                raise
            raise exc.retold(exc.field, exc.value, f"expected a latency with a unit, e.g. {examples} ({unit_list}; "
                             "1us is 0.001ms)") from None
        if seconds < MIN_TARGET_S:
            raise InputError(info.field_name or "target", value, positive)
        return seconds

    return check


BLOCK_SIZES = tuple(2**i for i in range(9))
"""KV block sizes: powers of two up to 256 (TensorRT-LLM: tokens_per_block a power of two; SGLang
page_size, default 1); vLLM takes 1, 8, 16, 32, 64, 128, 256 (vllm/config/cache.py BlockSize)."""
VLLM_BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)


def _block_size(value: Any, info) -> int:
    size = T.count(1 << 16, whole=True)(value, info)
    if size not in BLOCK_SIZES:
        raise InputError("block_size", value, "must be a power of two from 1 to 256 (vLLM: 1, 8, 16, 32, 64, 128 "
                         "or 256)")
    return size


def _scaled(triple: tuple[float, float, float], value: float) -> tuple[float, float, float]:
    """A user-set efficiency keeps the default's relative range around it."""
    expected, low, high = triple
    return value, value * low / expected, min(1.0, value * high / expected)


def _engine(value: Any, info) -> str:
    """An engine, optionally with its release: checked here so a bad one is one line naming it."""
    release = REL.parse_release(T.name(value, info))
    return release.label if release.stated else release.engine


def _gib(value: float | None) -> float | None:
    return None if value is None else value * GiB


ServingGib = T.typed(float, T.number(0, 64))
EngineFraction = T.typed(float, _engine_fraction)


MAX_PREFILL_CHUNKS = V.MAX_SEQ_LEN // 2048
"""Chunks one prefill may be split into (8,192): the most vLLM's smallest default budget (2,048 tokens,
core.serving.releases.vllm_batch_defaults) makes of the longest --context (2^24). `--context 16M --prefill-tokens 1`
ran for hours (wave 9), one roofline step a chunk; at this bound `--prefill-tokens 1 --rps 1 --context 8192` still took
71 s on 2 cores (wave 13). Since, core.serving.request_path.chunked_prefill times each run of equal chunks in one numpy
pass (roofline.prefill_forward): 0.6 s, and no sizing ask at the bound over 0.9 s (wave 13, helper S2's grid)."""


class InferenceInputs(ModelFields):
    """A model, a GPU and a layout, the load, and how the engine runs it."""

    gpu: V.Gpu
    gpus: V.GpuCount
    tp: V.Tp
    pp: V.Pp
    context: Annotated[V.ServingContext | None, _f(None, "Tokens per sequence, prompt + output (e.g. 32K).",
                                                "min(4096, model maximum)")]
    output_tokens: Annotated[V.TokenLength | None, _f(None, "Generated tokens per sequence.",
                                                      "min(256, context / 2)")]
    batch: Annotated[V.Sequences, _f(1, "Concurrent sequences decoding together.")]
    quantization: Annotated[T.choice(*QUANTIZATIONS), _f("auto", "Weight format: auto (the model's "
                            "quantization_config or dtype), fp32, bf16, fp16, fp8, int8, int4.")]
    group_size: Annotated[T.typed(int | None, IG.group_size), _f(128, "int4 group size (scale + zero per group); -1 = "
                                                                "per channel.")]
    kv_dtype: Annotated[T.choice(*KV_DTYPES), _f("auto", "KV-cache dtype: auto (the model's), bf16, fp16, fp8, "
                                                          "fp32.")]
    engine: Annotated[T.typed(str, _engine, {"type": "string", "maxLength": 40}), _f(
        "vllm", "Serving engine and release whose memory rules are modelled: vllm, sglang or trtllm, optionally "
                "with a release, e.g. vllm==0.19, sglang==0.4.9, trtllm==1.0 (default: each engine's newest "
                f"modelled release: {', '.join(REL.release_of(e).label for e in REL.NEWEST)}; docs/inference.md).")]
    gpu_memory_utilization: Annotated[EngineFraction | None, _f(None, "vLLM share of GPU memory the instance may "
                                                                "use.", "the release's: 0.9, 0.92 from 0.21")]
    mem_fraction_static: Annotated[EngineFraction | None, _f(None, "SGLang: share of GPU memory for weights + KV "
                                                               "pool.", "SGLang's default for the GPU")]
    free_gpu_memory_fraction: Annotated[EngineFraction | None, _f(None, "TensorRT-LLM: share of the memory left after "
                                                                    "weights and activations for the KV cache.",
                                                              "0.9")]
    block_size: Annotated[T.typed(int, _block_size), _f(K.DEFAULT_BLOCK_SIZE, "KV block size in tokens: a power of "
                                                        "two up to 256 (vLLM: 1, 8, 16, ..., 256).")]
    prefill_tokens: Annotated[V.TokenLength | None, _f(None, "Tokens per prefill step (max_num_batched_tokens).",
                                                       "vLLM default for the GPU")]
    max_num_seqs: Annotated[V.Sequences | None, _f(None, "Max sequences per step (the sampler profile).",
                                                   "vLLM default for the GPU")]
    sampler: Annotated[T.choice(*P.SAMPLERS), _f(
        P.DEFAULT_SAMPLER, "Sampler step vLLM profiles on max_num_seqs rows of logits: auto (the release's), "
                           "torch-sort (38 B per logit, 0.8-0.16), triton (14 B, 0.17-0.27), flashinfer (14 B, no "
                           "Triton buffer: where the log says 'Using FlashInfer for top-p & top-k sampling'), "
                           "logits (2 B, Model Runner V2); docs/inference.md.")]
    cuda_graph_gib: Annotated[ServingGib | None, _f(None, "CUDA-graph memory, GiB (0 = eager).",
                                                    "estimated: vLLM counts it from 0.21")]
    non_torch_gib: Annotated[ServingGib | None, _f(None, "Non-torch memory the engine's profile counts on one "
                                                         "GPU, GiB.", "the release's (docs/inference.md)")]
    nccl_gib: Annotated[ServingGib | None, _f(None, "NCCL buffers when tp·pp > 1, GiB per GPU.",
                                              "derived: the engine's communicators x NCCL's per-communicator "
                                              "buffers on NVLink, 0.25 on PCIe")]
    p2p: Annotated[T.Bool, _f(True, "The GPUs have peer-to-peer access (--no-p2p: a VM, container or board whose "
                                    "driver reports none; vLLM then logs 'Custom allreduce is disabled because your "
                                    "platform lacks GPU P2P capability', custom_all_reduce.py, and NCCL connects "
                                    "through host memory, src/transport/p2p.cc -> shm.cc): no custom all-reduce, "
                                    "PCIe-only NCCL buffers and all-reduce time; the GPU keeps its own bandwidths.")]
    driver_reserved_gib: Annotated[ServingGib, _f(SU.Runtime.driver_reserved / GiB, "Memory not visible to CUDA, "
                                                                                    "GiB.")]
    bandwidth_efficiency: Annotated[T.Efficiency | None, _f(
        None, "HBM-bandwidth fraction the weight GEMMs and elementwise kernels reach (the KV read scales with it).",
        "0.85 (0.65-0.95)")]
    compute_efficiency: Annotated[T.Efficiency | None, _f(
        None, "Fraction of the dense peak 16-bit GEMMs reach (flash attention scales with it; where vLLM runs int4 "
              "through Marlin, its fraction is scaled from this one: docs/inference.md 5k).", "0.80 (0.60-0.90)")]
    allreduce_latency_us: Annotated[T.typed(float, T.number(0, 1e4)) | None, _f(
        None, "All-reduce latency over NVLink, us (x3 on PCIe).", "8")]
    graph_layer_us: Annotated[T.typed(float, T.number(0, 1e3)) | None, _f(
        None, "GPU time per decoder layer of a CUDA-graph step beyond its kernels' roofline (the small "
              "kernels' floor), us.", "the release's: 50 for vLLM >= 0.2.6, 0 for SGLang / TensorRT-LLM")]
    launch_layer_us: Annotated[T.typed(float, T.number(0, 1e3)) | None, _f(
        None, "Host launch time per decoder layer of an eager step (no CUDA graph), us.", "80")]
    endpoint: Annotated[T.choice(*SU.ENDPOINTS), _f(
        "completions", "OpenAI endpoint the requests reach: completions (/v1/completions) or chat "
                       "(/v1/chat/completions: vLLM 0.11.0 parses the chat template again for each, +11 ms TTFT).")]
    price: V.Price
    search: Annotated[T.Bool, _f(True, "Search catalog GPUs x TP for configurations that serve the load.")]
    prompt: Annotated[V.TokenLength | None, _f(None, "Prompt tokens per request (with --output-tokens: the "
                                                     "context is their sum), e.g. 2K.", "context - output")]
    rps: Annotated[T.typed(float, T.number(1e-6, 1e7)) | None, _f(
        None, "Requests per second to serve: sizes the cheapest GPU type, count and TP that meet --ttft-p99 and "
              "--tpot (docs/inference.md).", "no sizing")]
    ttft_p99: Annotated[T.typed(float, _target(3600, "500ms or 2s")) | None, _f(
        None, "Target p99 time to first token, e.g. 500ms (with --rps).", "no limit")]
    tpot: Annotated[T.typed(float, _target(60, "50ms or 0.2s")) | None, _f(
        None, "Target time per output token, e.g. 50ms (with --rps).", "no limit")]
    disaggregate: Annotated[T.Bool, _f(False, "With --rps: size separate prefill and decode pools (DistServe, "
                                              "Splitwise) instead of colocated replicas; TTFT includes the KV "
                                              "transfer over the network.")]
    speculative: Annotated[T.choice(*S.METHODS), _f("none", "Speculative decoding: none, draft (a draft model, "
                                                    "--draft-model), eagle, eagle3, mtp (the model's own MTP "
                                                    "layer), ngram (prompt lookup; needs --spec-acceptance).")]
    draft_model: Annotated[T.Name | None, _f(None, "Draft model for --speculative draft: a catalog name or Hugging "
                                                   "Face id sharing the target's tokenizer.", "none")]
    spec_tokens: Annotated[T.typed(int, T.number(1, 16, whole=True)), _f(3, "Tokens proposed per speculative step "
                                                                           "(num_speculative_tokens).")]
    spec_acceptance: Annotated[T.Fraction | None, _f(None, "Per-token acceptance rate of proposed tokens (0-1).",
                                                     "eagle 0.55, eagle3 0.58, mtp 0.85, draft 0.6")]
    prefix_hit: Annotated[T.typed(float, T.number(0, 0.99, percent=True)), _f(0.0, "Share of each prompt found in the prefix "
                                                                      "cache (0-0.99): that prefill is skipped and "
                                                                      "the cached prefix is shared by all sequences.")]
    decode_attention: Annotated[T.choice(*R.DECODE_ATTENTION) | None, _f(
        None, "How the decode kernel reads a GQA / MQA model's KV cache: grouped (once per KV head: "
              "FlashAttention / FlashInfer decode, TensorRT-LLM XQA) or per-query-head (once per query head: "
              "vLLM's paged_attention kernels before 0.4, TensorRT-LLM's masked MHA).",
        "the release's kernel")]
    enable_lora: Annotated[T.Bool, _f(False, "Serve LoRA adapters on the base model (vLLM / SGLang --enable-lora): "
                                             "the engine preallocates adapter slots on every GPU.")]
    max_loras: Annotated[T.typed(int, T.number(1, 4096, whole=True)) | None, _f(
        None, "Adapters one batch can mix (vLLM --max-loras, SGLang --max-loras-per-batch); implies --enable-lora.",
        "vLLM 1, SGLang 8")]
    max_lora_rank: Annotated[T.typed(int, T.number(1, 512, whole=True)), _f(
        L.DEFAULT_RANK, "Rank every adapter slot is padded to (vLLM --max-lora-rank: 1, 8, 16, 32, 64, 128, 256, "
                        "320 or 512).")]
    max_cpu_loras: Annotated[T.typed(int, T.number(1, 1 << 20, whole=True)) | None, _f(
        None, "Adapters cached in host memory (vLLM --max-cpu-loras).", "max_loras")]

    @model_validator(mode="after")
    def _consistent(self) -> InferenceInputs:
        if self.gpus is not None and self.tp is not None and self.tp * (self.pp or 1) != self.gpus:
            raise InputError("gpus", self.gpus, f"must equal tp x pp = {self.tp} x {self.pp or 1}")
        if self.rps is None and (self.ttft_p99 is not None or self.tpot is not None):
            raise InputError("rps", None, "give the request rate (--rps) to size for a latency target")
        fixed = next((name for name in ("tp", "pp", "gpus", "batch") if name in self.given), None)
        if self.rps is not None and fixed:  # the sizing answered tp 1 for --tp 2, and said nothing
            raise InputError(fixed, getattr(self, fixed), "--rps sizes the GPU type, TP, replicas and batch itself "
                             f"over the catalog; drop --{fixed} (or drop --rps to serve this setup)")
        if self.prompt is not None and self.context is not None:
            raise InputError("prompt", self.prompt, "give --prompt (with --output-tokens) or --context, not both")
        if (self.prompt or 0) + (self.output_tokens or 0) > V.MAX_SEQ_LEN:  # the --context bound (2^24)
            raise InputError("output_tokens", self.output_tokens, f"--prompt {self.prompt or 0:,} + --output-tokens "
                             f"{self.output_tokens or 0:,} is past the {V.MAX_SEQ_LEN:,}-token context bound")
        self._check_engine_options()
        self._check_graph_layer()
        prompt = self.prompt or self.context or 0
        if self.prefill_tokens and -(-prompt // self.prefill_tokens) > MAX_PREFILL_CHUNKS:  # one roofline a chunk
            raise InputError("prefill_tokens", self.prefill_tokens, f"splits a {prompt:,}-token prompt into more than "
                             f"{MAX_PREFILL_CHUNKS:,} prefill chunks; at least {-(-prompt // MAX_PREFILL_CHUNKS):,} "
                             "tokens per step, or a shorter --context / --prompt")
        IR.check_speculative(self.speculative, self.release)
        IR.check_formats(self.quantization, self.kv_dtype, self.release)
        IR.check_features(self.release, self.pp_degree, self.prefix_hit, self.disaggregate)
        SR.check_serving_options(self)  # --sampler a release predates, --endpoint chat where inert (wave 20)
        if self.draft_model is not None and self.speculative != "draft":
            raise InputError("draft_model", self.draft_model, "applies to --speculative draft")
        for name in ("spec_tokens", "spec_acceptance"):
            if self.stated_otherwise(name) and self.speculative == "none":  # 3 tokens, the default: answered
                raise InputError(name, getattr(self, name), "applies with --speculative (draft, eagle, eagle3, mtp "
                                 "or ngram)")
        if self.stated_otherwise("group_size") and self.quantization != "int4":  # 128, the default: answered
            raise InputError("group_size", self.group_size if self.group_size is not None else -1,
                             "applies to --quantization int4 (a checkpoint's quantization_config sets its own)")
        if self.max_num_seqs is not None and self.batch > self.max_num_seqs:
            raise InputError("batch", self.batch, f"must be at most max_num_seqs ({self.max_num_seqs}): the engine "
                             "schedules at most max_num_seqs sequences per step (vLLM SchedulerConfig)")
        if self.engine_name == "vllm" and self.block_size not in VLLM_BLOCK_SIZES:
            raise InputError("block_size", self.block_size, "vLLM takes 1, 8, 16, 32, 64, 128 or 256")
        if self.disaggregate and (self.rps is None or self.ttft_p99 is None or self.tpot is None):
            raise InputError("disaggregate", True, "sizes prefill and decode pools for a load: give --rps, "
                             "--ttft-p99 and --tpot")
        self._check_lora()
        if not self.p2p and self.tp_degree * self.pp_degree == 1 and self.rps is None:
            raise InputError("p2p", False, "applies between GPUs: give tp x pp > 1 (or --rps, whose sizing tries "
                             "larger TP); one GPU has no peer to reach")
        self._check_single_gpu_comm()
        if self.gpus is not None and self.tp is None and self.gpus % (self.pp or 1):
            raise InputError("gpus", self.gpus, f"must be a multiple of pp = {self.pp}")
        return self

    def _check_single_gpu_comm(self) -> None:
        """NCCL buffers and the collective latency of one configuration (--no-search, no --rps) on one GPU (tp x
        pp = 1) change nothing: the answer was the same with and without them (wave 7). The search and the --rps
        sizing try larger TP, where they count. --allreduce-latency-us 8, the default (setup.Efficiency), is answered."""
        if self.search or self.rps is not None or self.tp_degree * self.pp_degree != 1:
            return
        for field, what in (("nccl_gib", "sizes NCCL's buffers"), ("allreduce_latency_us", "times collectives")):
            if self.stated_otherwise(field, UNREAD_DEFAULTS.get(field)) and getattr(self, field) is not None:
                raise InputError(field, getattr(self, field), f"{what} between GPUs: with tp x pp = 1 there are none "
                                 "(give --tp or --pp > 1, or leave it out)")

    def _check_engine_options(self) -> None:
        """An option only another engine's memory rule reads (core/serving/engines.py ENGINE_OPTIONS) is
        refused rather than ignored; its default restated (--sampler auto, --free-gpu-memory-fraction 0.9) is answered
        (the lead's rule, review w16 R5 S3; refused until wave 18)."""
        for name in E.ENGINE_OPTIONS:
            if self.stated_otherwise(name, UNREAD_DEFAULTS.get(name)) and getattr(self, name) is not None:
                why = E.option_refusal(name, self.engine_name)
                if why:
                    raise InputError(name, getattr(self, name), why)

    def _graph_max_tokens(self) -> int:
        """Tokens of the largest step that replays a CUDA graph: 0 with --cuda-graph-gib 0 ('0 = eager'), else
        the release's at --max-num-seqs (core.serving.kernels.graph_max_tokens_of; 256 where it is not given;
        SGLang's is read per GPU and TP where a step is timed: core.serving.roofline.graph_max_tokens_at)."""
        from gpuplan.core.serving import kernels as KR

        return 0 if self.cuda_graph_gib == 0 else KR.graph_max_tokens_of(self.release, self.max_num_seqs or 256)

    def _check_graph_layer(self) -> None:
        """The graph / launch timings and graph memory no step reads (jobs.inference.inputs_graphs)."""
        from gpuplan.jobs.inference.inputs_graphs import check_graph_timings

        check_graph_timings(self, self._graph_max_tokens())

    def _check_lora(self) -> None:
        if self.max_loras is not None and "enable_lora" in self.model_fields_set and not self.enable_lora:
            raise InputError("max_loras", self.max_loras, "contradicts enable_lora false (--no-enable-lora): "
                             "max_loras turns LoRA serving on; drop --no-enable-lora, or --max-loras to serve "
                             "without adapters")
        lora_fields = {name for name in ("max_lora_rank", "max_cpu_loras") if self.stated_otherwise(name)}
        if not self.lora_enabled:
            if lora_fields:
                name = min(lora_fields)
                raise InputError(name, getattr(self, name), "applies with --enable-lora (or --max-loras)")
            return
        if self.engine_name == "trtllm":
            raise InputError("enable_lora", True, "multi-LoRA memory is modelled for --engine vllm and sglang "
                             "(TensorRT-LLM sizes its LoRA cache from its own fractions)")
        field = "enable_lora" if self.enable_lora else "max_loras"
        IR.check_lora(field, getattr(self, field), self.release)
        if self.engine_name == "vllm":
            L.check_rank(self.max_lora_rank)
        slots = self.lora.max_loras
        if self.max_cpu_loras is not None and self.max_cpu_loras < slots:
            raise InputError("max_cpu_loras", self.max_cpu_loras, f"must be at least max_loras ({slots}), as "
                             "vLLM requires")

    @property
    def release(self) -> REL.EngineRelease:
        """The engine and release (``vllm==0.19``; a bare name: its newest modelled release)."""
        return REL.parse_release(self.engine)

    @property
    def engine_name(self) -> str:
        return self.release.engine

    @property
    def lora_enabled(self) -> bool:
        return self.enable_lora or self.max_loras is not None

    @property
    def lora(self) -> L.LoraServing | None:
        """The multi-LoRA setup (core/serving/lora.py), or None when LoRA is off."""
        if not self.lora_enabled:
            return None
        slots = self.max_loras or L.DEFAULT_MAX_LORAS.get(self.engine_name, 1)
        return L.LoraServing(slots, self.max_lora_rank, self.max_cpu_loras or slots)

    @property
    def tp_degree(self) -> int:
        """tp as given, else --gpus / pp, else 1 (a bare --pp N means N GPUs, one per stage)."""
        if self.tp is not None:
            return self.tp
        return self.gpus // (self.pp or 1) if self.gpus is not None else 1

    @property
    def pp_degree(self) -> int:
        return self.pp or 1

    @property
    def runtime(self) -> SU.Runtime:
        release = self.release
        return SU.Runtime(gpu_memory_utilization=self.gpu_memory_utilization, engine=release.engine,
                          version=release.version if release.stated else None,
                         mem_fraction_static=self.mem_fraction_static,
                         free_gpu_memory_fraction=self.free_gpu_memory_fraction,
                         driver_reserved=self.driver_reserved_gib * GiB, non_torch=_gib(self.non_torch_gib),
                         comm_buffers=_gib(self.nccl_gib), cuda_graphs=_gib(self.cuda_graph_gib),
                         prefill_tokens=self.prefill_tokens, max_num_seqs=self.max_num_seqs, sampler=self.sampler,
                          p2p=self.p2p, endpoint=self.endpoint)

    @property
    def efficiency(self) -> SU.Efficiency:
        """The kernel fractions (setup.Efficiency), the release's host time per layer, and the
        user's calibrations (a given efficiency keeps the default's relative range)."""
        from dataclasses import replace

        eff = replace(SU.Efficiency(), graph_max_tokens=self._graph_max_tokens())
        if self.graph_layer_us is not None:
            eff = replace(eff, graph_layer_s=self.graph_layer_us * 1e-6)
        if self.launch_layer_us is not None:
            eff = replace(eff, layer_launch_s=self.launch_layer_us * 1e-6)
        if self.bandwidth_efficiency is not None:
            eff = replace(eff, bandwidth=_scaled(eff.bandwidth, self.bandwidth_efficiency))
        if self.compute_efficiency is not None:
            eff = replace(eff, compute=_scaled(eff.compute, self.compute_efficiency))
        if self.allreduce_latency_us is not None:
            eff = replace(eff, allreduce_latency_s=self.allreduce_latency_us * 1e-6)
        return eff

    @property
    def decode_kernel(self) -> str:
        """--decode-attention, else the release's decode kernel (core.serving.kernels)."""
        from gpuplan.core.serving import kernels as KR

        return self.decode_attention or KR.decode_attention_of(self.release)
