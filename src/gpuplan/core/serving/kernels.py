"""What one forward step executes besides the weight GEMMs, and what a release's kernels are:
elementwise traffic per token, the TP all-reduces (through core/comm/volumes.py's ring), the decode
attention kernel each release runs, and the host time per layer of engines without CUDA graphs.
The achievable fractions themselves are ``core.serving.setup.Efficiency``. Units: bytes, seconds.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np

from gpuplan.core.comm.collectives import collective_seconds
from gpuplan.core.comm.volumes import all_reduce_time
from gpuplan.core.hardware import Accelerator
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.serving.engines import sglang_defaults
from gpuplan.core.serving.graph_floor import VLLM_GRAPHS_SINCE
from gpuplan.core.serving.releases import (CUSTOM_ALLREDUCE_MAX_BYTES, VLLM_V1_SINCE, EngineRelease,
                                           graph_capture_sizes, own_allreduce_max_bytes, reads_019_allreduce)
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.serving.tp_span import mnnvl_fused_max_bytes, on_pcie, own_kernel_off  # past the domain, tp 3: NCCL only

COLLECTIVE_EFFICIENCY = 0.8
"""Share of a link's per-direction bandwidth a ring all-reduce achieves (NCCL's bus bandwidth on
NVLink H100 ~ 360-370 of 450 GB/s per direction, nccl-tests; the same share taken for PCIe)."""


def decode_attention_of(release: EngineRelease) -> str:
    """The decode attention kernel a release runs on a GQA cache: vLLM before 0.4 its paged
    attention kernels (grid (num_heads, num_seqs): the cache read once per query head), from 0.4
    FlashAttention / FlashInfer decode (once per KV head); TensorRT-LLM before 0.10 masked MHA
    (grid {num_heads, batch_size}): its XQA kernels were 'currently experimental and not enabled by
    default' (v0.9.0 docs/source/performance.md; a run sets TRTLLM_ENABLE_XQA=1, --decode-attention
    grouped), from 0.10 the PluginConfig enables XQA (enable_xqa=True) for the head ratios it has
    kernels for; SGLang's FlashInfer / Triton decode read once."""
    if release.engine == "vllm" and release.version < (0, 4, 0):
        return "per-query-head"
    if release.engine == "trtllm" and release.version < (0, 10, 0):
        return "per-query-head"
    return "grouped"


PARALLEL_BLOCK_ONE_ALLREDUCE = {"vllm": (0, 2, 0), "trtllm": (0, 9, 0)}
"""Releases from which the engine's Falcon code reduces a parallel block once: vLLM's
model_executor/models/falcon.py (every release modelled) builds its row-parallel linears with
reduce_results = not (new_decoder_architecture or parallel_attn) and all-reduces attention + MLP
once; TensorRT-LLM's tensorrt_llm/models/falcon/model.py FalconDecoderLayer of the checkpoint-config
builds (0.9's trtllm-build) sets tp_group None inside the block ('Not to apply allreduce inside the
Attention/MLP layers. allreduce applies after those layer.'). TensorRT-LLM's first Falcon code
(2023, build.py era) reduced inside each RowLinear, twice a layer; a later constructor-argument
version (with the custom all-reduce workspace) already reduces once, but no tagged copy pins the
release, so 0.5 / 0.6.1 keep two (v0.6.1's rows fit two: docs/inference.md section 5). SGLang's
code is not read: two."""


def allreduces_per_layer(spec: ModelSpec, release: EngineRelease | None) -> int:
    """TP all-reduces per decoder layer: 2 (Megatron Sec. 3: after the attention output projection
    and after the MLP's down projection), 1 for a Falcon parallel block (attention and MLP read the
    same normalised input and their partial sums are added before one all-reduce) where the release's
    model code does that (PARALLEL_BLOCK_ONE_ALLREDUCE). Other parallel-residual models (GPT-NeoX,
    GPT-J) keep 2: vLLM's gpt_neox.py reduces in each RowParallelLinear."""
    if release is None or spec.model_type != "falcon" or not spec.parallel_residual:
        return 2
    since = PARALLEL_BLOCK_ONE_ALLREDUCE.get(release.engine)
    return 1 if since is not None and release.version >= since else 2


def graph_max_tokens_of(release: EngineRelease, max_num_seqs: int = 256, gpu: Accelerator | None = None,
                        tp: int = 1) -> int:
    """Steps of up to this many tokens replay CUDA graphs (no host launch time): none for TensorRT
    engines before 1.0 and vLLM before 0.2.6 (vllm PR 1926, merged for 0.2.6); vLLM V0 captured decode
    batches up to 256 (model_runner.py _BATCH_SIZES_TO_CAPTURE), V1 up to min(2 x max_num_seqs, 512)
    (releases.graph_capture_sizes); SGLang up to its cuda_graph_max_bs on ``gpu`` at ``tp``
    (engines.sglang_defaults: 512 on a B200 and at TP >= 4 on H100 / H200, 256 below TP 4;
    server_args.py@v0.5.6:776-802; 512 without a GPU: roofline.graph_max_tokens_at reads each step's); TensorRT-LLM 1.0 up to its max batch (its log:
    'Creating CUDA graph instances' up to max_num_requests)."""
    version = release.version
    if release.engine == "trtllm":
        return max_num_seqs if version >= (1, 0, 0) else 0
    if release.engine == "sglang":
        return 512 if gpu is None else sglang_defaults(gpu.memory_bytes, tp)[1]
    if version < VLLM_GRAPHS_SINCE:
        return 0
    if version < VLLM_V1_SINCE:
        return 256
    return max(graph_capture_sizes(max_num_seqs)[0])


def prefill_graphs_of(release: EngineRelease) -> bool:
    """Whether a prefill step (prompt tokens) can replay a CUDA graph. vLLM V1 (0.8+) captures
    piecewise graphs for any batch of up to its largest size, prompts included (attention runs
    eagerly between the pieces). vLLM V0 captures decode batches only (worker/model_runner.py@v0.2.7
    L140-147: prompt metadata use_cuda_graph=False; @v0.7.3 L762-770 _use_captured_graph needs
    decode_only), SGLang too (srt/model_executor/forward_batch_info.py@v0.5.3 L121-126:
    is_cuda_graph is DECODE / TARGET_VERIFY / IDLE; model_runner.py L2003-2011), and TensorRT-LLM's
    PyTorch backend (_torch/pyexecutor/scheduler.py ScheduledRequests.can_run_cuda_graph:
    'not self.context_requests'): their prefill runs eagerly."""
    return release.engine == "vllm" and release.version >= VLLM_V1_SINCE


V0_GRAPH_CONTEXT = 8192
"""vLLM V0 replays a decode graph only while the batch's longest context is at most this many tokens:
arg_utils.py@v0.2.7 L37 max_context_len_to_capture = 8192, checked in worker/model_runner.py L193-196;
@v0.7.3 arg_utils.py L137 max_seq_len_to_capture = 8192, model_runner.py L767-769. Longer decode
steps run eagerly. V1's piecewise graphs leave attention outside and have no such limit."""


def graph_context_limit_of(release: EngineRelease) -> float:
    """The longest cached context at which a decode step still replays a CUDA graph (tokens):
    V0_GRAPH_CONTEXT for vLLM V0 (0.2.6-0.7.x), unlimited otherwise."""
    v0 = release.engine == "vllm" and VLLM_GRAPHS_SINCE <= release.version < VLLM_V1_SINCE
    return V0_GRAPH_CONTEXT if v0 else float("inf")


def drafter_runs_eager(release: EngineRelease, method: str) -> bool:
    """An EAGLE proposer launched without CUDA graphs: vLLM V1 before 0.9.0, whose release
    notes list 'torch.compile & cudagraph to EAGLE (#17211)' (v0.9.0, 2025-05-15; a vLLM maintainer
    on the V1 EAGLE benchmarks of April 2025, vllm PR 17202: '#17211 can be critical for the e2e
    performance'). Each draft step then pays Efficiency.layer_launch_s per layer. No MTP: 0.8.x runs it on V0
    only, refused before here (jobs.inference.inputs_releases.VLLM_SPECULATIVE_V0_ONLY)."""
    return (release.engine == "vllm" and VLLM_V1_SINCE <= release.version < (0, 9, 0)
            and method in ("eagle", "eagle3"))


SAME_DIE_HBM_BYTES_PER_S = {"h200-sxm": 3.35e12}
"""Parts on the die of a part the per-query-head L2 share (setup.Efficiency.kv_repeat_l2_hit) was
fitted on, with that part's HBM bandwidth: the H200 SXM is the H100 SXM's GH100 (same SMs, clocks,
50 MB L2 and 700 W; only HBM3e at 4.8 TB/s and 141 GB differ; catalog h200-sxm notes) and the
H100 SXM's 3.35 TB/s (catalog h100-sxm) set the repeats' rate in the v0.6.1 fit. Evidence: at the
same shape, batch and release (TensorRT-LLM v0.9.0 docs/source/performance.md, H200 and H100 FP8
tables) the per-query-head rows run 1.00-1.08x faster on an H200 (Mistral-7B 1.00-1.04, Falcon-180B
1.02-1.08) where repeats at the H200's HBM rate gave 1.07-1.31x (docs/inference.md section 7).
TensorRT-LLM's masked MHA on a part of MASKED_MHA_ELEMENTS_PER_S leaves every repeat to L2 and is
floored by the die's work instead (roofline.decode_step), so there this rule serves vLLM's pre-0.4
kernels only."""


def repeat_read_bandwidth(fabric: Accelerator | None, bandwidth: float) -> float:
    """Bandwidth, bytes/s, at which a per-query-head decode kernel's repeated reads of a KV head
    (those not counted as L2 hits) run: the die's, not the HBM's. The L2 share was fitted where die
    and HBM go together (H100 SXM, A100 SXM), so a part's own HBM stands in, except on a part that
    carries another's die with faster HBM (SAME_DIE_HBM_BYTES_PER_S): its repeats run at the rate
    of the part the fit saw. ``bandwidth``: the part's HBM bandwidth."""
    if fabric is None:
        return bandwidth
    return SAME_DIE_HBM_BYTES_PER_S.get(fabric.id, bandwidth)


HOPPER_MASKED_MHA_ELEMENTS_PER_S = 132 / 62e-12
"""The H100 SXM die's rate (132 SMs at 62 ps an element per SM); the H200 is the same die."""
MASKED_MHA_ELEMENTS_PER_S = {"h100-sxm": HOPPER_MASKED_MHA_ELEMENTS_PER_S, "h200-sxm": HOPPER_MASKED_MHA_ELEMENTS_PER_S,
                             "a100-sxm4-80gb": 108 / 130e-12, "l40s": 142 / 105e-12}
"""Query-head elements per second (one query head x one cached key x one head-dim element) that
TensorRT-LLM's masked multi-head attention decode kernel works through on the whole GPU. The
kernel runs one thread block per (query head, sequence) (decoderMaskedMultiheadAttention
mmha_launch_kernel_ex, grid {num_heads, batch_size}) and does the QK dot products, softmax and V
sums on the CUDA cores, so its time has a floor set by the die's work per query head whatever the
cache traffic (docs/inference.md section 7: the H200 no faster than the H100 at 192 cached keys
for every MHA model of the v0.9.0 page). Per SM: 62 ps on Hopper (132 SMs on the H100 SXM and on
the H200 SXM, the same GH100 die: SAME_DIE_HBM_BYTES_PER_S), 130 ps on the A100 (108 SMs); fitted
by grid (4 ps / 10 ps steps) on TensorRT-LLM v0.6.1's 21 rows, where it takes the place of the L2
share for repeats (5.1% -> 4.4% mean). The L40S (142 Ada SMs, a design of its own): 105 ps, fitted
by grid (5 ps steps) on v0.9.0's four Falcon-180B L40S rows (mean 10.3% -> 2.9%); its Mistral-7B
rows, another head ratio (4 vs 29) and width (128 vs 64), are held out (-20 / -46 / -24 / -45% ->
+3 / -9 / 0 / -2%). Other parts keep the L2-share rule."""


def masked_mha_work_seconds(fabric: Accelerator | None, engine: str, query_head_elements: float) -> float | None:
    """Floor on a TensorRT-LLM masked-MHA decode step's attention time, seconds:
    ``query_head_elements`` (query heads x cached keys x head width, summed over layers, per TP rank)
    / MASKED_MHA_ELEMENTS_PER_S. None where no rate was fitted for the part or the engine is not
    TensorRT-LLM (the caller then keeps the HBM reads with the L2 share of repeats)."""
    if fabric is None or engine != "trtllm":
        return None
    rate = MASKED_MHA_ELEMENTS_PER_S.get(fabric.id)
    return None if rate is None else query_head_elements / rate


HOST_FIXED_S = 0.6e-3
"""Host time per step the GPU waits for in an engine that schedules synchronously (scheduler,
input preparation, the sampled tokens' copy back): the ~4 ms GPU bubble per decode step of vLLM
0.5 (vllm#6854, Llama 3 8B on one H100) less the 3.4 ms its output processing takes at batch 32
(vllm#6913, Llama 3 70B FP8 on 4 x H100)."""

HOST_PER_SEQUENCE_S = 0.1e-3
"""Output processing per sequence of a step (detokenising, Python objects) where it is not
overlapped: 0.2 ms at batch 1 and 3.4 ms at batch 32 (vllm#6913's table: ~0.1 ms a sequence)."""


def host_step_seconds(release: EngineRelease, sequences) -> float:
    """Host time per step that the GPU waits for (not hidden behind the forward). vLLM before 0.6
    processes outputs synchronously: HOST_FIXED_S + HOST_PER_SEQUENCE_S a sequence; 0.6-0.13
    overlap the output processing (V0's asynchronous output processor, vllm PR 7049; V1's separate
    output process) but schedule and prepare inputs between steps: HOST_FIXED_S; from 0.14 async
    scheduling is the default (vllm PR 27614: 'overlaps engine core scheduling with GPU
    execution'): 0. SGLang overlaps scheduling from 0.4 (its 'zero-overhead batch scheduler'),
    TensorRT-LLM's C++ executor and its PyTorch backend's overlap scheduler do too: 0."""
    version = release.version
    if release.engine == "sglang":
        return HOST_FIXED_S if version < (0, 4, 0) else 0.0
    if release.engine != "vllm" or version >= (0, 14, 0):
        return 0.0
    if version < (0, 6, 0):
        return HOST_FIXED_S + HOST_PER_SEQUENCE_S * sequences
    return HOST_FIXED_S


def elementwise_bytes_per_token(spec: ModelSpec, tp: int, act_bytes: int = 2) -> float:
    """HBM bytes one token's elementwise kernels move in one layer on a TP rank: the fused
    residual-add + RMSNorm twice (read and write 2h each), RoPE on q and k in place, SwiGLU
    (read 2I, write I): (8h + 2(q + k) + 3I) x bytes, with q, k and I split over tp (vLLM
    fused_add_rms_norm, rotary_embedding and silu_and_mul kernels; TensorRT-LLM fuses alike)."""
    a = spec.attention
    q = a.num_heads * a.qk_head_dim / tp
    k = max(1, a.num_kv_heads // tp) * a.qk_head_dim if not a.is_mla else (a.kv_lora_rank or 0)
    inner = spec.mlp.intermediate_size if spec.moe is None else (
        spec.moe.experts_per_token * spec.moe.expert_intermediate_size + spec.moe.shared_intermediate_size)
    return (8 * spec.hidden_size + 2 * (q + k) + 3 * inner / tp) * act_bytes


def custom_allreduce_bytes_of(release: EngineRelease, tp: int) -> float:
    """Largest TP all-reduce message the release's own (one-shot / two-shot) kernel takes; larger
    messages, and every message of a release without one, go through NCCL. vLLM before 0.3 had
    none (the custom all-reduce came with vllm PR 2192, merged for 0.3.0); TensorRT-LLM before 0.10
    reduces with NCCL unless an engine is built with --use_custom_all_reduce (a store_true flag,
    PluginConfig use_custom_all_reduce=False; the performance pages' build commands do not set
    it), from 0.10 the PluginConfig enables it, AUTO falling back to NCCL above its workspace
    (CustomAllReduceHelper.max_workspace_size_auto: 16 MB at tp <= 2, 8 MB above)."""
    version = release.version
    if release.engine == "trtllm":
        return 0.0 if version < (0, 10, 0) else (16e6 if tp <= 2 else 8e6)
    if release.engine == "vllm" and version < (0, 3, 0):
        return 0.0
    return CUSTOM_ALLREDUCE_MAX_BYTES


PCIE_NCCL_SLOWDOWN = 1.44
"""NCCL all-reduce time between PCIe-only GPUs against core.comm.collectives' PCIe figure (~25 GB/s
bus bandwidth at large messages: 0.8 of a Gen4 x16 direction). NCCL uses no P2P across CPU host
bridges by default (src/graph/paths.cc p2pCanConnect: p2pLevel = PATH_PXB, 'By default don't use
P2P across CPU Host Bridges'), so on a server whose cards hang off the CPU's root ports the ring
runs through host memory (SHM transport), where 'the performance you get is usually determined by
the bandwidth your CPU and memory can deliver' (NCCL maintainer, NVIDIA/nccl#1639). Least-squares
fit on four named rows, TensorRT-LLM v0.9.0's L40S FP8 first-token table at tp 4 / 8 (Llama-2-70B
at 128 and 2,048 tokens, Falcon-180B at 128 and 2,048; per row 1.41, 1.44, 1.52, 1.43): 1 / 1.44 =
0.69 of the modelled bandwidth, ~17 GB/s. The L40S throughput rows are held out. Serving only:
core/comm's training collectives keep their PCIe figure. Applied where tp_span.on_pcie holds: a PCIe-only
part, or a TP group past an H100 NVL's bridged pair (its ring on the host's PCIe, core.comm.host_tier)."""


@lru_cache(maxsize=64)  # one part per GPU type: the sizer asks it twice a decode step (w16 B2)
def host_path(fabric: Accelerator) -> Accelerator:
    """``fabric`` as its TP group's collectives see it without GPU peer-to-peer access: NCCL's P2P
    transport is refused (NCCL src/transport/p2p.cc p2pCanConnect asks cudaDeviceCanAccessPeer) and
    the ranks connect through SHM, FIFOs in host memory (shm.cc), whatever NVLink the part has: a
    PCIe-only part (pcie_only, so PCIE_NCCL_SLOWDOWN applies) whose link is cluster_for's default
    host link (64 GB/s both directions, PCIe Gen4 x16), no NVLS. Only the collectives read it: the
    part keeps its own memory bandwidth and compute."""
    return replace(fabric, scale_up_bandwidth=None, scale_up_pcie=True, nvls_gain=None)


def collective_fabric(fabric: Accelerator, p2p: bool) -> Accelerator:
    """The part a TP group's collectives run on: ``fabric`` itself with GPU peer-to-peer access, else
    host_path(fabric) (the one rule tp_allreduce_seconds, the sizing's all-reduce pass (jobs/inference/decode_table)
    and the answer's assumptions share: a pass on other links would miss the cache the timing reads)."""
    return fabric if p2p else host_path(fabric)


def custom_allreduce_limit(release: EngineRelease, tp: int, fabric: Accelerator | None = None,
                           given: float | None = None, p2p: bool = True, hidden: int | None = None, *,
                           dtype_bytes: int = 2, bf16: bool = True, pp: int = 1) -> float:
    """Largest TP message the engine's own all-reduce kernel takes in this layout, bytes (0: NCCL
    at every size): the release's limit (custom_allreduce_bytes_of) or ``given``, 0 without tensor
    parallelism and on more than two PCIe-only GPUs (vLLM custom_all_reduce.py refuses 'more than
    two PCIe-only GPUs'; tp_allreduce_seconds applies the same rule). TensorRT-LLM's AUTO strategy
    takes NCCL on any PCIe-only group, two GPUs included (AllreducePlugin::selectImplementation,
    cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp: no P2P -> NCCL; 'if (isAuto &&
    !mIsNVLINKSupported) return AllReduceStrategyType::NCCL'). Without GPU P2P (``p2p`` False) every
    engine's kernel is off: it exchanges buffers over CUDA IPC peer access (vLLM v0.10.1.1
    custom_all_reduce.py:147, 'Custom allreduce is disabled because your platform lacks GPU P2P
    capability'; TensorRT-LLM's AUTO: no P2P -> NCCL). Where releases.reads_019_allreduce holds (vLLM
    0.19.x, sm90, not PCIe-only, P2P), given the model's ``hidden`` size, the elements' ``dtype_bytes``
    / ``bf16`` (releases.allreduce_dtype of the weight format) and ``pp`` (the fusion needs pp 1): the
    memory report's rule, releases.own_allreduce_max_bytes. Other releases keep 8 MiB; 0 past the domain or, for vLLM / SGLang, at a tp outside 2 / 4 / 6 / 8 or past one host (tp_span), but vLLM >= 0.19's MNNVL fused bound past one GB200 / GB300 tray (tp_span.mnnvl_fused_max_bytes)."""
    mnnvl = mnnvl_fused_max_bytes(release, tp, fabric, pp, hidden, dtype_bytes)  # None: own_kernel_off's rule
    if tp <= 1 or not p2p or (on_pcie(fabric, tp) and (tp > 2 or release.engine == "trtllm")) or (mnnvl is None and own_kernel_off(release.engine, tp, fabric)):
        return 0.0
    if mnnvl is not None or given is not None:
        return float(mnnvl) if mnnvl is not None else given
    return (float(own_allreduce_max_bytes(hidden, tp, dtype_bytes, bf16, fused=pp <= 1))
            if hidden is not None and reads_019_allreduce(release, fabric, p2p) else custom_allreduce_bytes_of(release, tp))


_NCCL_ALL_REDUCE_SECONDS: dict[tuple[float, int, Accelerator], float] = {}
"""nccl_all_reduce_seconds' answers by (message bytes, tp, part): a pure function of hashable inputs."""
_NCCL_CACHE_LIMIT = 200_000


def nccl_all_reduce_seconds(message_bytes: float, tp: int, fabric: Accelerator) -> float:
    """Seconds of one NCCL all-reduce of ``message_bytes`` over ``tp`` GPUs of ``fabric``
    (core.comm.collectives.collective_seconds on the TP group's links), remembered: the serving
    sizer's rate searches ask for each message size many times, and one scalar evaluation of
    NCCL's options costs ~0.5 ms (``infer --rps``: 8,046 of them, 4.1 of 5.5 s profiled)."""
    key = (float(message_bytes), tp, fabric)
    found = _NCCL_ALL_REDUCE_SECONDS.get(key)
    if found is None:
        found = float(collective_seconds("all_reduce", key[0], cluster_for(fabric).group(tp)))
        _remember({key: found})
    return found


def nccl_all_reduce_values(messages: list[float], tp: int, fabric: Accelerator) -> list[float]:
    """nccl_all_reduce_seconds of each of ``messages`` (bytes) over ``tp`` GPUs of ``fabric``, in one vectorised call
    and not remembered: the caller keeps them and hands over those it uses (remember_nccl_all_reduce). The same
    floats as the scalar evaluation, bit for bit: collective_seconds is elementwise numpy arithmetic
    (tests/test_sizing_speed_s22.py compares them for every catalog part, TP 2, 4 and 8, P2P on and off, over 8
    sizes of 1,792 B .. 512 MiB; review s22 R3 also compared TP 16 over 84 sizes: 23,520 equal)."""
    seconds = collective_seconds("all_reduce", np.asarray(messages, dtype=float), cluster_for(fabric).group(tp))
    return [float(t) for t in np.broadcast_to(seconds, len(messages))]


def nccl_all_reduce_known(message: float, tp: int, fabric: Accelerator) -> bool:
    """nccl_all_reduce_seconds holds ``message`` over ``tp`` GPUs of ``fabric`` (evaluated or handed over)."""
    return (message, tp, fabric) in _NCCL_ALL_REDUCE_SECONDS


def remember_nccl_all_reduce(message: float, tp: int, fabric: Accelerator, seconds: float) -> None:
    """Hand nccl_all_reduce_seconds one value worked out ahead (nccl_all_reduce_values): a sizing's decode step at
    one batch hands its own messages over, where priming put the keys of every batch up to its KV cap in the table
    (~72,000 keys an answer, ~0.2 s of hashing; docs/performance.md, 'Serving sizing')."""
    _remember({(message, tp, fabric): seconds})  # the table's one bound


def _remember(found: dict) -> None:
    if len(_NCCL_ALL_REDUCE_SECONDS) + len(found) > _NCCL_CACHE_LIMIT:
        _NCCL_ALL_REDUCE_SECONDS.clear()
    _NCCL_ALL_REDUCE_SECONDS.update(found)


def tp_allreduce_seconds(message_bytes, tp: int, link_bytes_per_s: float | None, latency_s: float, *,
                         fabric: Accelerator | None = None, custom_max_bytes: float = CUSTOM_ALLREDUCE_MAX_BYTES,
                         p2p: bool = True):
    """One tensor-parallel all-reduce of ``message_bytes``. The engine's custom kernel (messages up
    to ``custom_max_bytes``, GPUs on NVLink or two on PCIe: vLLM refuses it on 'more than two
    PCIe-only GPUs', custom_all_reduce.py) costs a fixed latency (its one-shot kernel) plus
    core/comm/volumes.py's ring transfer, 2(tp-1)/tp x message, at COLLECTIVE_EFFICIENCY of the
    per-direction link bandwidth. Otherwise NCCL: core.comm.collectives.collective_seconds on the TP
    group's links of ``fabric`` (NCCL's tuner picks ring / NVLS and LL / LL128 / Simple by size;
    without ``fabric`` the custom formula stands in), x PCIE_NCCL_SLOWDOWN between PCIe-only GPUs.
    Without GPU P2P (``p2p`` False): NCCL at every size on host_path(fabric), the PCIe-only rule. 0 without TP.
    ``custom_max_bytes``: custom_allreduce_limit's (roofline's; 0 past the domain, own_kernel_off), default 8 MiB."""
    if tp <= 1:
        return 0.0
    fabric = collective_fabric(fabric, p2p) if fabric is not None else None
    pcie = on_pcie(fabric, tp)  # PCIe-only, or past the pair on an H100 NVL's host (tp_span.on_pcie)
    custom = p2p and message_bytes <= custom_max_bytes and not (pcie and tp > 2)
    if fabric is not None and not custom:
        slowdown = PCIE_NCCL_SLOWDOWN if pcie else 1.0
        return slowdown * nccl_all_reduce_seconds(message_bytes, tp, fabric)
    per_direction = (link_bytes_per_s or 64e9) / 2 * COLLECTIVE_EFFICIENCY
    return latency_s + all_reduce_time(message_bytes, tp, per_direction)
