"""Engine releases: ``--engine vllm==0.19`` and the memory rules each release's start-up runs.

An engine's KV budget comes from its own profile of the model, and what that profile counts
changed from release to release. Each rule below is read from the engine's code or from the pull
request that changed it, named next to it; constants measured from logs say which log (those logs
are the fitted rows of ``gpuplan validate``, reported apart). Units: bytes, tokens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuplan.core.hardware import Accelerator
from gpuplan.core.serving.engines import ENGINE_NAMES
from gpuplan.errors import InputError

GiB = 2**30
Version = tuple[int, ...]
"""(major, minor, patch), and for an engine in POST_BUILD_ENGINES a post build's number as a 4th part: SGLang
0.4.1.post1 = (0, 4, 1, 1), which sorts after 0.4.1 = (0, 4, 1) and before 0.4.2 = (0, 4, 2), as PEP 440 orders
them (packaging.version: a post release follows its base release)."""
def version_text(version: Version) -> str:
    """A release as the answers and refusal lines write it: '0.9.0' for (0, 9, 0) (every part joined)."""
    return ".".join(map(str, version))


POST_BUILD_ENGINES = ("sglang",)
"""Engines whose rules are read at post builds: SGLang ships features in .postN wheels (EAGLE first in 0.4.1.post4,
NEXTN in 0.4.3.post1, EAGLE3 in 0.4.4.post2: jobs/inference/inputs_releases.SGLANG_SPECULATIVE_SINCE), so its
gates compare the post number. Every other engine reads X.Y.Z.postN as X.Y.Z, as before (no rule of theirs is
read at a post build)."""

NEWEST = {"vllm": (0, 29, 0), "sglang": (0, 5, 6), "trtllm": (1, 0, 0)}
"""The newest release whose rules are modelled, per engine: the default version. SGLang 0.5.6: its
server_args.py memory tiers and chunked prefill (@v0.5.6:725-806), the tokenising (prompt_tokenize), the MoE
runner's per-expert rows (moe_combine), the sm100 kernel counts (layer_kernels) and the request path were read
in the 0.5.6 wheel (review w11 r3 S3: the label said 'rules of sglang==0.5.3' for them)."""
OLDEST = {"vllm": (0, 2, 0), "sglang": (0, 3, 0), "trtllm": (0, 5, 0)}
VLLM_V1_SINCE = (0, 8, 0)
"""The first vLLM release whose default engine is V1 (VllmRules.v1 from its row on; V0 before)."""


@dataclass(frozen=True)
class EngineRelease:
    """An engine and the release whose rules apply; ``stated``: the user named the version."""

    engine: str
    version: Version
    stated: bool = False

    @property
    def label(self) -> str:
        """``vllm==0.19`` (the patch shown when it is not 0 or a post build follows: ``sglang==0.4.1.post1``)."""
        major, minor, patch = self.version[:3]
        post = f".post{self.version[3]}" if len(self.version) > 3 else ""
        return f"{self.engine}=={major}.{minor}" + (f".{patch}" if patch or post else "") + post

    @property
    def described(self) -> str:
        """The label and where it came from, for the report."""
        if self.stated:
            newest = self.version > NEWEST[self.engine]
            return self.label + (f" (rules of {release_of(self.engine).label}, the newest modelled)" if newest else "")
        return f"{self.label} (default: the newest release modelled; --engine {self.engine}==X.Y for another)"


def release_of(engine: str) -> EngineRelease:
    """The default release of ``engine``: its newest modelled one."""
    return EngineRelease(engine, NEWEST[engine])


def parse_release(text: str) -> EngineRelease:
    """``vllm``, ``vllm==0.19``, ``sglang==0.4.9``, ``trtllm==1.0`` -> EngineRelease; InputError
    naming ``engine`` otherwise (unknown engine, unreadable version, a release older than the
    rules modelled)."""
    raw = str(text).strip().lower()
    name, pinned, version = raw.partition("==")
    name = {"tensorrt-llm": "trtllm", "tensorrt_llm": "trtllm"}.get(name.strip(), name.strip())
    if name not in ENGINE_NAMES:
        raise InputError("engine", text, "must be vllm, sglang or trtllm, optionally with a release (vllm==0.19)")
    if not pinned:  # 'vllm==' with no release falls through to the refusal below, not to the newest
        return release_of(name)
    found = parse_version(version, name)
    if found is None:
        raise InputError("engine", text, f"release must read like {name}==0.19 or {name}==0.19.1 (PEP 440's "
                         "rcN, .postN, .devN and a +local label such as +cu128 are read; alpha, beta and epochs not)")
    if found < OLDEST[name]:
        oldest = ".".join(map(str, OLDEST[name][:2]))
        raise InputError("engine", text, f"{ENGINE_NAMES[name]} releases before {oldest} are not modelled; give "
                         f"{name}=={oldest} or later")
    return EngineRelease(name, found, True)


def parse_version(text: str, engine: str) -> Version | None:
    """'0.4.1.post4' -> (0, 4, 1, 4) for an engine in POST_BUILD_ENGINES, (0, 4, 1) for any other; '0.19' ->
    (0, 19, 0); None where the text is no release (a post number over 3 digits included, as for the other parts).
    A bare '.post' is post 0 (PEP 440's implicit number)."""
    # ASCII digits (re.ASCII: '\d' took 'vllm==٠.٩' as 0.9) and PEP 440's pre / post / dev suffixes only
    # (packaging.version: rcN, .postN, .devN; '\S*' took 'vllm==0.19rc1;anything')
    # and PEP 440's local label ('+cu128', '+g1a2b3c', as `pip show vllm` prints a CUDA build: the same release)
    match = re.fullmatch(r"v?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,3}))?((?:[.+-]?(?:post|rc|dev)\d*)*)"
                         r"(?:\+[a-z0-9]{1,32}(?:\.[a-z0-9]{1,32}){0,3})?", text.strip(), re.ASCII)
    if match is None:
        return None
    found = (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))
    post = re.search(r"post(\d*)", match.group(4), re.ASCII)
    if post is None or engine not in POST_BUILD_ENGINES:
        return found
    return found + (int(post.group(1) or 0),) if len(post.group(1)) <= 3 else None  # as the other parts: 3 digits


@dataclass(frozen=True)
class VllmRules:
    """What one vLLM release's start-up profile counts before it sizes the KV cache."""

    since: Version
    profile: str
    """'allocated' (KV = total x util - PyTorch's allocated peak, weights included: worker.py
    profile_num_available_blocks before PR 2031), 'in-use' (total x util - the device memory in use
    after the profile forward, PR 2031: NCCL buffers and the allocator's reserve included) or
    'split' (total x util - weights - torch peak increase - non-torch increase: PR 9352 and every
    release since, V1's gpu_worker determine_available_memory too)."""
    v1: bool
    """The V1 engine (default from 0.8.0): batch defaults by GPU and the V1 sampler profile."""
    holds_allreduce_inputs: bool
    """0.2.5-0.3.2: each all-reduce input stays reserved until the NCCL stream syncs
    (core.serving.profile.held_allreduce_input_bytes); 0.3.3 sets TORCH_NCCL_AVOID_RECORD_STREAMS."""
    sampler_bytes: float
    """Bytes per logit the profiled sampler step holds ([max_num_seqs, vocab] logits)."""
    sampler_buffer: bool
    """The Triton top-k/top-p kernel's [programs, vocab] fp32 buffer (vllm#33538: ~80 MiB)."""
    sampler_sharded: bool
    """Model Runner V2's batch-sharded sampling: each TP rank samples 1/tp of the rows (0.29)."""
    non_torch: float
    """Non-torch memory the profile counts on one GPU (bytes)."""
    comm: str
    """What tensor parallelism adds to it on NVLink: 'communicators' (the NCCL communicators
    created after the baseline snapshot, core.memory.device_memory's per-communicator figure), or
    'lazy' / 'fused' (a logged increase, NVLINK_TP_NON_TORCH)."""
    moe_workspace: bool
    """MoE layers keep one persistent fused-MoE workspace for max_num_batched_tokens (the V1 worker's
    WorkspaceManager, vllm PR 27532; core.serving.profile.moe_workspace_bytes)."""
    counts_graphs: bool
    """The estimated CUDA-graph memory is subtracted before the KV cache (0.21: 'CUDA graph memory
    profiling is enabled (default since v0.21.0)', gpu_worker.py)."""
    default_util: float
    source: str


# The non-torch increase each release's profile logs at TP 1, and what an NVLink TP group adds.
# Fitted rows (gpuplan validate reports them apart): vllm#10517 (0.35 GiB, 0.6.4, RTX 3090),
# vllm PR 10511's H100 logs (1.79 GiB at TP 1, 0.6.5), vllm PR 12126's H100 log (0.16 GiB, 0.7),
# llm-d-benchmark's vLLM 0.11.0 H100 table (0.13 / 0.54 GiB at TP 1 / 2), llm-d-planner's
# vLLM 0.18.0 and 0.19.0 H100 runs (0.25 GiB at TP 1 for Qwen3-14B and Llama-3.1-8B; 2.07 GiB at TP 2
# for Llama-3.1-8B).
NVLINK_TP_NON_TORCH = {"lazy": (0.54 - 0.13) * GiB, "fused": (2.07 - 0.25) * GiB}
"""'lazy' (0.11-0.17): the TP group's torch communicator, first used in the profile, after NCCL moved
before the baseline snapshot (vllm PR 25359). 'fused' (0.18-): the same plus the buffers of the
all-reduce + RMSNorm fusion ('Enabled custom fusions: allreduce_rms', VLLM_ALLREDUCE_USE_SYMM_MEM in
the 0.19 logs)."""

# Sampler bytes per [max_num_seqs x vocab] logit during the profile:
# - 38: the PyTorch sort top-k/top-p path (V0 profile_run: SamplingParams(top_p=0.99, top_k=vocab-1);
#   V1 _dummy_sampler_run from 0.8.0, vllm PR 13594: top_p 0.9, top_k vocab-1): model-dtype logits
#   2 + fp32 copy 4 + sorted values 4 + int64 indices 8 + the segmented sort's int64 input 8 and
#   cub's alternate key 4 and value 8 buffers (aten SortStable.cu). vllm#21429 logs 5.62 GiB for
#   1,024 x 151,936 logits (38 B: 5.51 GiB); llm-d-planner's Qwen3-14B 5.64 GiB at 0.15 / 0.16.
# - 14: from 0.17.0 the Triton top-k/top-p kernel (vllm PR 33538) masks in place: logits 2 + fp32
#   logits 4 + probabilities 4 + the exponential draws of random sampling 4, plus its buffer.
# - 2: Model Runner V2's dummy sampler skips top-k, top-p, logprobs and the fp32 upcast (its
#   _dummy_sampler_run note; vllm PR 57926 describes the gap): the model-dtype logits.
# - 14 (FlashInfer, where vLLM picked it: no release's default, --sampler flashinfer): vLLM
#   v0.10.1.1's _dummy_sampler_run keeps the model-dtype logits 2 (gpu_model_runner.py:2435) and asks
#   for top_p 0.9 with top_k vocab-1 (2445-2446); Sampler.forward upcasts them, fp32 4
#   (v1/sample/sampler.py:47), divides by the temperature in place (99); TopKTopPSampler took
#   forward_cuda at start-up ('Using FlashInfer for top-p & top-k sampling',
#   ops/topk_topp_sampler.py:41-52: FlashInfer imports and VLLM_USE_FLASHINFER_SAMPLER, default
#   None, is not False), which with both k and p calls flashinfer_sample -> FlashInfer's
#   top_k_top_p_sampling_from_logits (topk_topp_sampler.py:109, 295). FlashInfer 0.2.11 (the
#   version vLLM 0.10.1.1's 'flashinfer' extra pins) applies top-k first: top_k_mask_logits
#   allocates an fp32 mask_logits 4 (flashinfer/sampling.py:372-374), softmax of it makes fp32
#   probs 4 (981), and top_p_sampling_from_probs allocates only the [batch] int32 samples (166;
#   its CUDA op allocates nothing, csrc/sampling.cu): 2 + 4 + 4 + 4, no sort and no Triton buffer.
#   v0.19.0 runs the same flashinfer_sample (topk_topp_sampler.py:391) but only when
#   VLLM_USE_FLASHINFER_SAMPLER=1 (39-55).
SORT, TRITON, MRV2 = 38.0, 14.0, 2.0
FLASHINFER = 2.0 + 4.0 + 4.0 + 4.0

VLLM_RULES = (
    VllmRules((0, 2, 0), "allocated", False, False, SORT, False, False, 0.0, "none", False, False, 0.90,
              "worker.py profile_num_available_blocks: torch.cuda.max_memory_allocated (before PR 2031)"),
    VllmRules((0, 2, 5), "in-use", False, True, SORT, False, False, 0.35 * GiB, "communicators", False, False, 0.90,
              "PR 2031: total - free after the profile (mem_get_info); all-reduce inputs held"),
    VllmRules((0, 3, 3), "in-use", False, False, SORT, False, False, 0.35 * GiB, "communicators", False, False, 0.90,
              "0.3.3 worker.py sets TORCH_NCCL_AVOID_RECORD_STREAMS=1"),
    VllmRules((0, 6, 4), "split", False, False, SORT, False, False, 0.35 * GiB, "communicators", False, False, 0.90,
              "PR 9352: torch.cuda.memory_stats peak + non-torch memory (vllm#10517: 0.35 GiB)"),
    VllmRules((0, 6, 5), "split", False, False, SORT, False, False, 1.79 * GiB, "communicators", False, False, 0.90,
              "PR 10511: non-torch from before the instance, CUDA context included (1.79 GiB, H100)"),
    VllmRules((0, 7, 0), "split", False, False, SORT, False, False, 0.16 * GiB, "communicators", False, False, 0.90,
              "PRs 11809 / 12126: baseline after the context (0.16 GiB on an H100)"),
    VllmRules((0, 8, 0), "split", True, False, SORT, False, False, 0.5 * GiB, "communicators", False, False, 0.90,
              "V1 default; gpu_worker: peak allocated + (used - torch allocated), CUDA context included "
              "(0.51 GiB at start-up on an H100, llm-d-planner logs); sampler profiled (PR 13594)"),
    VllmRules((0, 9, 2), "split", True, False, SORT, False, False, 0.02 * GiB, "communicators", False, False, 0.90,
              "PR 19312: V1 memory_profiling, snapshot before the distributed init (NCCL counted)"),
    VllmRules((0, 11, 0), "split", True, False, SORT, False, False, 0.13 * GiB, "lazy", False, False, 0.90,
              "PR 25359: NCCL initialised before the snapshot (not counted)"),
    VllmRules((0, 12, 0), "split", True, False, SORT, False, False, 0.13 * GiB, "lazy", True, False, 0.90,
              "PR 27532: the V1 worker's WorkspaceManager keeps one fused-MoE workspace"),
    VllmRules((0, 17, 0), "split", True, False, TRITON, True, False, 0.13 * GiB, "lazy", True, False, 0.90,
              "PR 33538: Triton top-k/top-p sampler (no sort)"),
    VllmRules((0, 18, 0), "split", True, False, TRITON, True, False, 0.25 * GiB, "fused", True, False, 0.90,
              "0.18 / 0.19 logs: non-torch 0.25 GiB at TP 1, 2.1 GiB at TP 2-4 on H100"),
    VllmRules((0, 21, 0), "split", True, False, TRITON, True, False, 0.25 * GiB, "fused", True, True, 0.92,
              "0.21: CUDA-graph memory profiled before the KV cache; serve default utilization 0.92"),
    VllmRules((0, 28, 0), "split", True, False, MRV2, False, False, 0.25 * GiB, "fused", True, True, 0.92,
              "0.28: Model Runner V2 for dense models (PR 44443)"),
    VllmRules((0, 29, 0), "split", True, False, MRV2, False, True, 0.25 * GiB, "fused", True, True, 0.92,
              "0.29: Model Runner V2 for all models (PR 53183), batch-sharded sampling"),
)


def vllm_rules(version: Version, moe: bool = False) -> VllmRules:
    """The rules of the newest modelled change at or before ``version``. 0.28 moved only dense
    models to Model Runner V2: a MoE model keeps 0.21's V1 sampler until 0.29."""
    rules = [r for r in VLLM_RULES if r.since <= version][-1]
    if moe and rules.since == (0, 28, 0):
        return [r for r in VLLM_RULES if r.since == (0, 21, 0)][0]
    return rules


def vllm_batch_defaults(version: Version, memory_bytes: float, gpu_name: str, max_model_len: int) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) ``vllm serve`` picks when they are not given.
    V0 (< 0.8) without chunked prefill profiles max(max_model_len, 2048) tokens; it enables
    chunked prefill (2048 tokens) above 32K (engine/arg_utils.py). V1 0.8: 2048 and 256. From 0.9
    (get_batch_defaults, OPENAI_API_SERVER): 8192 and 1024 on GPUs of >= 70 GiB that are not
    A100s, else 2048 and 256."""
    if version < VLLM_V1_SINCE:
        return (max(max_model_len, 2048) if max_model_len <= 32768 else 2048), 256
    if version < (0, 9, 0):
        return 2048, 256
    big = memory_bytes >= 70 * GiB and "a100" not in gpu_name.lower()
    return (8192, 1024) if big else (2048, 256)


GRAPH_CAPTURE_LIMIT = {"gpt_oss": 1024}
"""Model types whose vLLM config raises max_cudagraph_capture_size from 512
(model_executor/models/config.py GptOssForCausalLMConfig: 'Increase the max capture size from 512
to 1024 for performance ... from 67 to 83' graphs; the v0.19.0 gpt-oss-20b log: PIECEWISE=83
(largest=1024))."""


def graph_capture_sizes(max_num_seqs: int, limit: int = 512) -> tuple[list[int], list[int]]:
    """(piecewise, full) CUDA-graph batch sizes V1 captures: 1, 2, 4, 8-248 by 8, then by 16
    (config/compilation.py), up to max_cudagraph_capture_size = min(2 x max_num_seqs, ``limit``)
    for the piecewise graphs; the full decode graphs (one token per sequence) stop at max_num_seqs
    as well. llm-d-planner's v0.19.0 logs at 1,024 sequences: 'Profiling CUDA graph memory:
    PIECEWISE=51 (largest=512), FULL=51 (largest=512)' (the rule gives 35 and 19 at 128)."""
    sizes = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, limit + 1, 16))
    top = min(2 * max_num_seqs, limit)
    return [s for s in sizes if s <= top], [s for s in sizes if s <= min(top, max_num_seqs)]


MiB = 2**20
FI_FUSION_MAX_BYTES_SM90 = {2: 64 * MiB, 4: 2 * MiB, 8: MiB // 2}
"""Largest all-reduce (bytes) vLLM 0.19 runs as FlashInfer's fused all-reduce + RMSNorm on an H100
(compilation/passes/fusion/allreduce_rms_fusion.py@v0.19.0:54-59 FI_ALLREDUCE_FUSION_MAX_SIZE_MB, sm90,
x MiB in config/compilation.py@v0.19.0:182-190). On by default at TP > 1 on sm90 / sm100 with pp = dp = 1
(config/vllm.py@v0.19.0:116-135). It splits the compile ranges at max_size // (hidden x dtype bytes)
tokens (config/vllm.py@v0.19.0:1518-1528): the logs' 'compile_ranges_endpoints': [292, 8192] for
Qwen2.5-7B TP 4; sizes up to it run fused (is_applicable_for_range, allreduce_rms_fusion.py:852-856)."""

CUSTOM_ALLREDUCE_MAX_BYTES = 8192 * 1024
"""Largest message vLLM's custom all-reduce takes, larger ones going to NCCL: CustomAllreduce's max_size
default (distributed/device_communicators/custom_all_reduce.py@v0.19.0:59; SGLang runs the same kernel;
core.serving.kernels.custom_allreduce_bytes_of reads it too). In vLLM 0.19 lowered to
CUSTOM_ALL_REDUCE_MAX_SIZES (all_reduce_utils.py@v0.19.0:31-37, sm90: 64 / 32 / 0.5 / 0.25 MiB at 2 / 4 / 6 / 8
GPUs) where torch symmetric memory is on (custom_all_reduce.py:123-133); should_custom_ar needs size < max_size
and a multiple of 16 bytes (custom_all_reduce.py:233-246)."""
CUSTOM_AR_TABLE_SM90 = {2: 64 * MiB, 4: 32 * MiB, 6: MiB // 2, 8: MiB // 4}
SYMM_MEM_MAX_BYTES_SM90 = {2: 64 * MiB, 4: 32 * MiB, 6: 64 * MiB, 8: 64 * MiB}
"""Torch symmetric-memory all-reduce, bf16 only, size < this (all_reduce_utils.py@v0.19.0:52-57,
symm_mem.py:40-140: its buffer of this size is allocated at start-up); above it pynccl (NCCL)."""


def fused_token_limit(hidden: int, tp: int, dtype_bytes: int) -> int:
    """Largest forward (tokens) vLLM 0.19 runs as FlashInfer's fused all-reduce + RMSNorm on ``tp`` H100s:
    FI_FUSION_MAX_BYTES_SM90[tp] // (hidden x dtype bytes), the compile-range split of
    config/vllm.py@v0.19.0:1518-1528; 0 where the table has no entry (the fusion never applies)."""
    return FI_FUSION_MAX_BYTES_SM90.get(tp, 0) // (hidden * dtype_bytes)


def graph_allreduce_path(hidden: int, tp: int, tokens: int, dtype_bytes: int = 2, bf16: bool = True,
                         fused: bool = True) -> str:
    """Which all-reduce vLLM 0.19 runs for a forward of ``tokens`` on an H100 group of ``tp`` GPUs with
    P2P (cuda_communicator.py@v0.19.0:180-237 order: FlashInfer's standalone all-reduce is off,
    VLLM_ALLREDUCE_USE_FLASHINFER False; then custom, symmetric memory, NCCL): 'fused' (FlashInfer
    all-reduce + RMSNorm, in place), 'custom' (out of place; inside a graph its input's IPC address is
    registered after the capture), 'symm_mem', 'nccl', or 'none' at tp 1. ``fused`` False: the fusion
    is off (pipeline parallelism: it needs pp = 1, config/vllm.py@v0.19.0:116-135)."""
    if tp <= 1:
        return "none"
    size = tokens * hidden * dtype_bytes
    if fused and tokens <= fused_token_limit(hidden, tp, dtype_bytes):
        return "fused"
    custom_max = min(CUSTOM_ALLREDUCE_MAX_BYTES, CUSTOM_AR_TABLE_SM90.get(tp, CUSTOM_ALLREDUCE_MAX_BYTES))
    if tp in CUSTOM_AR_TABLE_SM90 and size % 16 == 0 and size < custom_max:
        return "custom"
    if bf16 and tp in SYMM_MEM_MAX_BYTES_SM90 and size < SYMM_MEM_MAX_BYTES_SM90[tp]:
        return "symm_mem"
    return "nccl"


VLLM_ALLREDUCE_TABLES = ((0, 19, 0), (0, 20, 0))
"""The releases [first, next) whose all-reduce choice graph_allreduce_path reads: 0.19.x
(cuda_communicator.py@v0.19.0:180-237, all_reduce_utils.py@v0.19.0:31-57, allreduce_rms_fusion.py@v0.19.0:54-59).
Every other vLLM release, the earlier ones and 0.20-0.29 (the default vllm==0.29) alike, keeps
CUSTOM_ALLREDUCE_MAX_BYTES (8 MiB) in the timing and gets no graph all-reduce line: their code was not read."""


def reads_019_allreduce(release: EngineRelease, fabric: Accelerator | None, p2p: bool = True) -> bool:
    """The one predicate for vLLM 0.19's all-reduce rule (graph_allreduce_path / own_allreduce_max_bytes), read
    by the step timing (kernels.custom_allreduce_limit) and the memory report's 'Registering N cuda graph
    addresses' line alike: a release in VLLM_ALLREDUCE_TABLES, an sm90 part (the tables are sm90's: H100 / H200
    / H800 / H20) that is not PCIe-only (above 2 GPUs vLLM refuses its custom kernel there,
    custom_all_reduce.py@v0.19.0:150-157, and the thresholds read are NVLink's), with GPU P2P (without it the
    custom kernel is off and no other path was read)."""
    first, after = VLLM_ALLREDUCE_TABLES
    return (release.engine == "vllm" and first <= release.version < after and fabric is not None
            and fabric.compute_capability == (9, 0) and not fabric.pcie_only and p2p)


def allreduce_dtype(compute_dtype: str, fmt_name: str) -> tuple[int, bool]:
    """(bytes an element, bf16) of the hidden states a TP all-reduce moves under a weight format: 4 bytes
    where the format computes in fp32, else 2; bf16 unless 4 bytes or the fp16 format (torch symmetric
    memory takes bf16 only, all_reduce_utils.py@v0.19.0:52-57). The memory report and the step timing
    both take them from here."""
    dtype_bytes = 4 if compute_dtype == "fp32" else 2
    return dtype_bytes, dtype_bytes == 2 and fmt_name != "fp16"


def own_allreduce_max_bytes(hidden: int, tp: int, dtype_bytes: int = 2, bf16: bool = True, fused: bool = True) -> int:
    """Largest message (bytes) graph_allreduce_path gives to a kernel of vLLM 0.19's own on an H100
    group of ``tp`` (FlashInfer's fused all-reduce + RMSNorm where ``fused``, the custom all-reduce, and
    symmetric memory where ``bf16``: one- / two-shot NVLink kernels), larger ones going to NCCL: the max
    of the tables' limits where they apply (the paths are tried in that order and each limit is a size
    bound), less one 16-byte step for the strict '<'; 0 where none applies (NCCL at every size). The
    timing's custom-kernel bound (kernels.custom_allreduce_limit) reads this where reads_019_allreduce
    holds, so the memory report's paths and the all-reduce seconds follow one rule."""
    if tp <= 1:
        return 0
    limits = [fused_token_limit(hidden, tp, dtype_bytes) * hidden * dtype_bytes if fused else 0]
    if tp in CUSTOM_AR_TABLE_SM90:
        limits.append(min(CUSTOM_ALLREDUCE_MAX_BYTES, CUSTOM_AR_TABLE_SM90[tp]) - 16)
    if bf16 and tp in SYMM_MEM_MAX_BYTES_SM90:
        limits.append(SYMM_MEM_MAX_BYTES_SM90[tp] - 16)
    return max(limits)


def registered_graph_addresses(hidden: int, layers: int, tp: int, sizes: list[int], dtype_bytes: int = 2,
                               bf16: bool = True) -> int:
    """What vLLM 0.19 logs as 'Registering N cuda graph addresses' (custom_all_reduce.py@v0.19.0:216,
    at the exit of graph_capture: one per custom all-reduce captured): the captured sizes (all modes)
    whose all-reduce is 'custom' x (2 x layers + 1), one after attention and one after the MLP of each
    layer and the embedding's. The v0.19.0 H100 logs: Qwen2.5-7B TP 4 1,596 = 28 x 57, Llama-3.1-8B
    TP 4 2,080 = 32 x 65, the 80-layer models TP 4 9,982 = 62 x 161 (their 512s run symmetric memory),
    0 at TP 2 (every size fused). Dense Llama / Qwen2 decoders: Llama-4-Scout logs 2 a layer."""
    custom = sum(graph_allreduce_path(hidden, tp, s, dtype_bytes, bf16) == "custom" for s in sizes)
    return custom * (2 * layers + 1)
