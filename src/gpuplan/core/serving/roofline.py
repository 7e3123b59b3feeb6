"""Serving speed: the prefill and decode roofline per step, TP all-reduces, cost per token.

Units: bytes, bytes/s, FLOPs, FLOP/s, seconds, tokens. Sources are named next to each formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from gpuplan.core.model.flops import (
    attention_core_flops_per_token,
    layer_matmul_weights_per_token,
)
from gpuplan.core.hardware import Accelerator
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.serving import first_token_path as FT
from gpuplan.core.serving import graph_floor as GF
from gpuplan.core.serving.identity_memo import by_identity
from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving import layer_kernels as LK
from gpuplan.core.serving import lora as L
from gpuplan.core.serving import marlin as MG
from gpuplan.core.serving import moe_combine as MC
from gpuplan.core.serving import outside_layers as OL
from gpuplan.core.serving import request_path as RP
from gpuplan.core.serving import spec_runner as SR
from gpuplan.core.serving.memory import draft_kv_share
from gpuplan.core.serving.pp_hops import pipeline_hop_seconds
from gpuplan.core.serving.releases import EngineRelease, allreduce_dtype
from gpuplan.core.serving.forward_time import StepTime  # re-exported: callers name roofline.StepTime
from gpuplan.core.serving.setup import ServingSetup
from gpuplan.core.serving.weights import ParamGroups, decode_weight_bytes_read, param_groups


def forward_allreduces(spec: ModelSpec, release: KR.EngineRelease | None = None) -> int:
    """TP all-reduces of one forward: Megatron's one after attention and one after the MLP per layer
    (Sec. 3), or one per layer where the release's model code sums a parallel block's attention and
    MLP outputs before reducing them (kernels.allreduces_per_layer: Falcon)."""
    return KR.allreduces_per_layer(spec, release) * spec.num_layers


def gemm_flops_per_token(spec: ModelSpec) -> float:
    """2 FLOPs per active matmul weight a token passes, LM head included."""
    return 2.0 * layer_matmul_weights_per_token(spec) + 2.0 * spec.vocab_size * spec.hidden_size


def _gemm_flops(spec: ModelSpec) -> float:
    """gemm_flops_per_token, looked up by name at each call: a test's monkeypatch of it is read (clear_memos)."""
    return gemm_flops_per_token(spec)


_gemm_flops_of = by_identity(lru_cache(maxsize=256)(_gemm_flops), 256)
"""gemm_flops_per_token by the spec's identity (identity_memo): decode_step's, the same at every batch."""


def clear_memos() -> None:
    """Forget the memos of a step's pieces (_step_constants, _gemm_flops_of, outside_layers' all-gathers by row):
    a test that monkeypatches a rule they read (tests/conftest.py's serving_memos_follow_patches)."""
    for memo in (_step_constants, _gemm_flops_of, OL._gathers_of):
        memo.cache_clear()


@dataclass(frozen=True)
class StepWork:
    """What one forward step moves and computes on one TP rank (summed over pp stages)."""

    weight_bytes: float
    gemm_flops: float
    kv_bytes: float = 0.0
    """Decode: the KV cache the attention kernel reads (once per KV head; repeats apart)."""
    attention_flops: float = 0.0
    """Prefill: the flash attention FLOPs (decode's are negligible next to its KV read)."""
    tokens: float = 1.0
    """Tokens in the step (elementwise traffic, all-reduce message size)."""
    sequences: float = 1.0
    """Sequences in the step (the host's output processing, kernels.host_step_seconds)."""
    scheduled: bool = True
    """The engine's scheduler runs before this step (False: a speculative proposer's draft steps,
    which run inside the same engine step as the verify step)."""
    kv_repeat_bytes: float = 0.0
    """Decode, per-query-head kernels: the repeated reads of each KV head that miss L2 (kv_bytes x
    (kv_reads_per_step - 1)), at kernels.repeat_read_bandwidth."""
    prefill: bool = False
    """A prefill step (prompt tokens): a CUDA graph covers it only where the release captures
    prefill graphs (kernels.prefill_graphs_of: vLLM V1)."""
    context: float = 0.0
    """Decode: the cached tokens per sequence (vLLM V0 replays decode graphs only up to
    kernels.graph_context_limit_of)."""


def step_time(work: StepWork, spec: ModelSpec, setup: ServingSetup, *, tp: int, pp: int, bandwidth: float,
              peak: float, link: float | None, which: int = 0, act_bytes: int = 2,
              fabric: Accelerator | None = None) -> StepTime:
    """One forward step on a TP rank, kernels in sequence (Efficiency's fractions): the GEMMs at
    max(weights / (HBM x bw), FLOPs / (peak x gemm)), the KV read at kv and flash attention at
    attention, the elementwise traffic at bw, per layer either an eager step's host launch time
    (layer_launch_s) or a graph step's small-kernel floor (graph_layer_s, GPU time), the
    scheduler's host time per step (kernels.host_step_seconds), then the TP
    all-reduces (kernels.tp_allreduce_seconds: the engine's kernel or NCCL on ``fabric``'s links)
    and the pipeline hops (pp_hops: on the scale-out network where a hop leaves a scale-up domain). Summed over pp
    stages."""
    eff = setup.efficiency
    bw, gemm, kv, attention, combine, per_token, ar_bytes, bf16, custom, allreduces, graph_max = _step_constants(
        spec, setup, tp, pp, which, act_bytes, fabric)
    layers = spec.num_layers
    # + SGLang's Triton / Marlin MoE writing and summing one hidden row per (token, expert) (moe_combine)
    moe_rows = work.tokens * layers * combine / (bandwidth * bw)
    elementwise = (work.tokens * layers * per_token / (bandwidth * bw)
                   + moe_rows)
    message = allreduce_message_bytes(spec, work.tokens, ar_bytes)
    p2p = setup.runtime.p2p
    link = link if p2p else None  # without GPU P2P the hops go through host memory (kernels.host_path)
    latency = eff.latency(link)
    one_allreduce = KR.tp_allreduce_seconds(message, tp, link, latency, fabric=fabric, custom_max_bytes=custom, p2p=p2p)
    comm = allreduces * one_allreduce
    # + the embedding all-reduce and LM-head all-gather outside the layers (SGLang, vLLM: outside_layers)
    rows = OL.logits_rows(work.tokens, work.sequences, work.prefill)
    comm += OL.outside_layer_comm_seconds(setup.runtime.release, spec, tp, one_allreduce, rows, fabric, p2p)
    comm += pipeline_hop_seconds(message, tp, pp, fabric, link, latency)  # scale-out past a domain (pp_hops)
    release = setup.runtime.release
    graphed = (work.tokens <= graph_max and work.context <= KR.graph_context_limit_of(release)
               and (not work.prefill or KR.prefill_graphs_of(release)))
    # + the kernels a scheduled graph step runs outside its layers, at the floor's rate a kernel (outside_layers; a
    # proposer's draft steps replay the drafter's own graph without the scheduler's input preparation: not counted)
    outside = 0.0
    if graphed and work.scheduled:
        kernels, per_kernel = OL.graph_step_outside(spec, setup, fabric, tp, pp, work.tokens, rows)
        outside = kernels * per_kernel
    floor = layers * graph_layer_seconds(setup, spec, fabric, tp, work.tokens) + outside if graphed else 0.0
    # eager forwards launched from Python (SGLang's prefill, vLLM V1 --enforce-eager; not the proposer's
    # draft steps, spec_runner's): max(issue, GPU), first_token_path
    eager = not graphed and work.scheduled and FT.runs_issue_bound(release, graph_max)
    host = 0.0 if graphed or eager else layers * eff.layer_launch_s
    host += KR.host_step_seconds(release, work.sequences) if work.scheduled else 0.0
    step = StepTime(work.weight_bytes / (bandwidth * bw), work.gemm_flops / tp / (peak * gemm), comm,
                    attention_s=(work.kv_bytes / (bandwidth * kv) + work.attention_flops / tp / (peak * attention)
                                 + work.kv_repeat_bytes / (KR.repeat_read_bandwidth(fabric, bandwidth) * kv)),
                    other_s=elementwise, moe_rows_s=moe_rows, host_s=host, kernel_floor_s=floor,
                    exposed=eff.exposed_share(work.tokens))
    if not eager:
        return step
    # an eager forward: the host issues every kernel and runs ahead of the GPU, after the forward's own host
    # work outside the layers (serial: F + max(I, G), first_token_path)
    issue, forward, exposed = FT.eager_exposed_seconds(release, spec, step.verify_s - host, which, fabric=fabric,
                                                       fmt_name=setup.fmt.name, tokens=work.tokens, tp=tp,
                                                       prefill=work.prefill)
    return replace(step, host_s=host + exposed, issue_s=issue, issue_forward_s=forward, issue_exposed_s=exposed)


@lru_cache(maxsize=1024)
def _step_constants_of(spec: ModelSpec, setup: ServingSetup, tp: int, pp: int, which: int, act_bytes: int,
                       fabric: Accelerator | None) -> tuple:
    """step_time's terms that do not depend on the step (its tokens, sequences, context): the efficiency fractions
    (bw, gemm, kv, attention), the MoE combine and elementwise bytes a token and layer, the all-reduce's element bytes
    and bf16 flag, the engine's own all-reduce limit, the all-reduces a forward and the largest graphed step. The
    same values step_time worked out at every call (a sizing answer: ~14,000 decode steps of ~120 (GPU, TP)), kept by
    its frozen inputs (docs/performance.md, 'Serving sizing')."""
    eff = setup.efficiency
    bw, gemm, kv, attention = eff.rates(which, setup.fmt.compute_dtype not in ("fp32", "bf16", "fp16"))
    # vLLM's int4 linears on sm8x run Marlin, whose 64-row tiles cap its GEMM rate (marlin)
    gemm = MG.gemm_fraction(setup, fabric, gemm, moe=spec.moe is not None)
    release = setup.runtime.release
    combine = MC.combine_bytes_per_token(spec, release, setup.fmt.name, act_bytes, fabric)
    per_token = KR.elementwise_bytes_per_token(spec, tp, act_bytes)
    # the all-reduce's elements as the memory report takes them (releases.allreduce_dtype: fp32 compute 4 bytes)
    ar_bytes, bf16 = allreduce_dtype(setup.fmt.compute_dtype, setup.fmt.name)
    custom = KR.custom_allreduce_limit(release, tp, fabric, eff.custom_allreduce_bytes, setup.runtime.p2p,
                                       spec.hidden_size, dtype_bytes=ar_bytes, bf16=bf16, pp=pp)
    graph_max = graph_max_tokens_at(release, eff.graph_max_tokens, fabric, tp)
    return (bw, gemm, kv, attention, combine, per_token, ar_bytes, bf16, custom, forward_allreduces(spec, release),
            graph_max)


_step_constants = by_identity(_step_constants_of)
"""step_time's constants: _step_constants_of, found by the identity of its inputs first (identity_memo)."""


def graph_max_tokens_at(release: EngineRelease, configured: int, fabric: Accelerator | None, tp: int) -> int:
    """Tokens of the largest step on ``fabric`` at ``tp`` that replays a CUDA graph: ``configured``
    (setup.Efficiency.graph_max_tokens; 0 = eager), except SGLang's, which its server sets by the GPU's
    memory and TP (kernels.graph_max_tokens_of: cuda_graph_max_bs, engines.sglang_defaults)."""
    if configured <= 0 or release.engine != "sglang" or fabric is None:
        return configured
    return KR.graph_max_tokens_of(release, gpu=fabric, tp=tp)


def graph_layer_seconds(setup: ServingSetup, spec: ModelSpec, fabric: Accelerator | None = None,
                        tp: int = 1, tokens: float = 1.0) -> float:
    """A CUDA-graph step's small-kernel floor per layer: the given Efficiency.graph_layer_s (as given,
    whatever the layer), else the release's for ``spec``'s layers (graph_floor.graph_layer_seconds_of:
    scaled by their kernels), with the kernels counted for the path on ``fabric`` where
    core.serving.layer_kernels has it (SGLang on sm100: DeepSeek-V3 FP8, GPT-OSS MXFP4; SGLang's Qwen3 q copy at
    ``tokens`` >= 2 a step)."""
    given = setup.efficiency.graph_layer_s
    if given is not None:
        return given
    release = setup.runtime.release
    return GF.graph_layer_seconds_of(release, spec) * LK.graph_floor_scale(spec, release, fabric, setup.fmt.name, tp,
                                                                              tokens)


def allreduce_message_bytes(spec: ModelSpec, tokens, act_bytes: int = 2):
    """Bytes of one TP all-reduce of a step of ``tokens`` tokens: the hidden states, ``act_bytes`` each."""
    return tokens * spec.hidden_size * act_bytes


def decode_positions(setup: ServingSetup) -> int:
    """Tokens a decode step scores per sequence: 1, or a speculative verify step's k proposed
    tokens + one of its own."""
    s = setup.speculation
    return 1 + (s.tokens if s else 0)


def decode_allreduce_messages(spec: ModelSpec, setup: ServingSetup, batches) -> list[tuple[float, ...]]:
    """For each of ``batches``, the message bytes of the TP all-reduces a decode step at that many sequences asks
    kernels for: its own (step_time's message: decode_positions tokens a sequence, allreduce_dtype's element bytes)
    and, with a draft model (speculation.draft: a draft model, EAGLE / MTP head), its k proposer steps' (one token a
    sequence on the draft's hidden size; decode_step's plain setup keeps the format: the same element bytes). The
    sizing evaluates those of every batch it may ask in one vectorised pass (jobs/inference/decode_table.py): without
    the draft's every draft all-reduce NCCL takes (--no-p2p: all of them) was evaluated alone (`infer llama-3.1-8b
    --rps 5 --speculative draft --draft-model llama-3.2-1b --no-p2p`: 17,017 scalar evaluations, ~10 s; w16 B2)."""
    ar_bytes = allreduce_dtype(setup.fmt.compute_dtype, setup.fmt.name)[0]
    positions = decode_positions(setup)
    draft = setup.speculation.draft if setup.speculation is not None else None
    own = [float(allreduce_message_bytes(spec, b * positions, ar_bytes)) for b in batches]
    if draft is None:
        return [(message,) for message in own]
    return [(message, float(allreduce_message_bytes(draft, b, ar_bytes))) for message, b in zip(own, batches)]


def prefill_allreduce_messages(spec: ModelSpec, setup: ServingSetup, fabric: Accelerator | None,
                               prompt: int) -> tuple[float, ...]:
    """The message bytes of the TP all-reduces prefill_step of one ``prompt`` asks kernels for: one forward of its
    uncached tokens, or the scheduler's chunks (request_path.prefill_chunk_runs: the full budget's and the
    remainder's). The sizing evaluates them in the decode steps' one pass (jobs/inference/decode_table.py)."""
    ar_bytes = allreduce_dtype(setup.fmt.compute_dtype, setup.fmt.name)[0]
    budget = RP.split_budget(setup, fabric, prompt, 1)
    if budget is None:
        tokens = (max(1, prompt - math.floor(setup.prefix_hit * prompt)),)
    else:
        tokens = tuple(new for new, _ in RP.prefill_chunk_runs(prompt, int(setup.prefix_hit * prompt), budget))
    return tuple(float(allreduce_message_bytes(spec, t, ar_bytes)) for t in tokens)


def gpu_keywords(gpu: Accelerator, setup: ServingSetup) -> dict:
    """decode_step / prefill_step's hardware keywords for ``gpu`` serving ``setup``: ``bandwidth`` (HBM,
    bytes/s), ``peak`` (dense FLOP/s of the format's compute dtype), ``link`` (scale-up, bytes/s both
    directions summed) and ``fabric`` (the part: its collectives and fitted kernel rates)."""
    return {"bandwidth": gpu.memory_bandwidth, "peak": gpu.peak(setup.fmt.compute_dtype),
            "link": gpu.scale_up_bandwidth, "fabric": gpu}


def tokens_per_second(batch, step_seconds) -> float:
    return batch / step_seconds


def cost_per_million_tokens(price_per_gpu_hour: float, gpus: int, tokens_per_s: float) -> float:
    """USD per 1e6 generated tokens: GPU-hours per token x price (3600 s per hour)."""
    if tokens_per_s <= 0:
        return math.inf
    return price_per_gpu_hour * gpus / 3600.0 / tokens_per_s * 1e6


DECODE_ATTENTION = ("grouped", "per-query-head")
"""How the decode attention kernel reads the KV cache (kv_reads_per_step)."""


def kv_reads_per_step(spec: ModelSpec, decode_attention: str = "grouped", l2_hit: float = 0.0) -> float:
    """How many times one decode step reads each cached K/V element from HBM.

    'grouped': once — the kernel serves every query head of a KV head from one load
    (FlashAttention / FlashInfer decode, TensorRT-LLM's XQA, "reducing data loading": its blog
    docs/source/blogs/XQA-kernel.md). 'per-query-head': num_heads / num_kv_heads times — the
    kernel runs one thread block per (query head, sequence) and each loads its KV head's cache:
    TensorRT-LLM's masked multi-head attention before XQA (decoderMaskedMultiheadAttention
    mmha_launch_kernel_ex, grid {num_heads, batch_size}) and vLLM's paged attention kernels
    (csrc/attention paged_attention_v1/v2 launchers, grid (num_heads, num_seqs)), of which a share
    ``l2_hit`` of the repeats hit L2 (setup.Efficiency.kv_repeat_l2_hit): 1 + (ratio - 1)(1 - l2_hit).
    MHA and MLA read once either way."""
    if not per_query_head(spec, decode_attention):
        return 1.0
    a = spec.attention
    return 1.0 + (a.num_heads / a.num_kv_heads - 1.0) * (1.0 - l2_hit)


def per_query_head(spec: ModelSpec, decode_attention: str) -> bool:
    """The decode kernel reads each KV head once per query head ('per-query-head'); MLA's latent
    cache is read once whatever the kernel."""
    return decode_attention != "grouped" and not spec.attention.is_mla


def decode_step(spec: ModelSpec, groups: ParamGroups, setup: ServingSetup, kv_per_sequence: float, *,
                tp: int, pp: int, batch, context, bandwidth: float, peak: float, link: float | None,
                which: int = 0, fabric: Accelerator | None = None, scheduled: bool = True) -> StepTime:
    """Time per output token at ``batch`` sequences of ``context`` cached tokens: the weights (+
    the experts the batch touches) streamed or their FLOPs, every sequence's KV cache read
    (kv_reads_per_step times; TensorRT-LLM's masked MHA once, floored by kernels.masked_mha_work_seconds),
    elementwise and host time, and the TP all-reduces. A speculative
    step adds the proposer's k draft steps, which run inside the same engine step (no scheduler host
    time of their own: ``scheduled`` False). ``which``: 0 expected, 1 low, 2 high efficiency."""
    s = setup.speculation
    positions = decode_positions(setup)
    # kv_per_sequence is per stage (a token crosses all stages); a per-query-head kernel reads it
    # once per query head of each KV head: the repeats go apart (kernels.repeat_read_bandwidth)
    kv_read = batch * kv_per_sequence * pp
    # TensorRT-LLM's masked MHA on a part with a fitted die rate: the cache read once (repeats from
    # L2), floored by the die's work per query head (kernels.masked_mha_work_seconds)
    a = spec.attention
    die_s = None if not per_query_head(spec, setup.decode_attention) else KR.masked_mha_work_seconds(
        fabric, setup.runtime.engine, batch * positions * context * spec.num_layers * a.num_heads / tp * a.head_dim)
    repeats = 0.0 if die_s is not None else (
        kv_read * (kv_reads_per_step(spec, setup.decode_attention, setup.efficiency.kv_repeat_l2_hit) - 1.0))
    weights = decode_weight_bytes_read(spec, groups, setup.fmt, tp, batch * positions)
    flops = batch * positions * _gemm_flops_of(spec)
    if setup.lora is not None:  # the active adapter slots are read too, and shrink + expand run per token
        weights += L.step_bytes(spec, setup.lora, tp, batch)
        flops += batch * positions * L.flops_per_token(spec, setup.lora)
    work = StepWork(weights, flops, kv_read, 0.0, batch * positions, batch, scheduled, repeats, context=context)
    step = step_time(work, spec, setup, tp=tp, pp=pp, bandwidth=bandwidth, peak=peak, link=link, which=which,
                     fabric=fabric)
    if die_s is not None:
        step = replace(step, attention_s=max(step.attention_s, die_s))
    if s is None:
        return step
    # the runner's eager launches around the verify and draft steps (spec_runner: counted from vLLM's code),
    # each at the package's Python launch time (first_token_path)
    ops = SR.runner_ops(setup.runtime.release, s.method)
    launch_s = FT.EAGER_HOST_PER_LAUNCH_RANGE_S[which]
    verify_ops_s, draft_s = SR.serial_host_seconds(ops, launch_s), 0.0
    if s.draft is not None:  # k proposer steps at the batch, plain decoding of the draft shape
        plain, draft_groups, share = draft_parts(spec, groups, setup, tp, pp)
        draft_kv = kv_per_sequence * share / (1 - share) if share < 1 else 0.0
        one = decode_step(s.draft, draft_groups, plain, draft_kv, tp=tp, pp=1, batch=batch, context=context,
                          bandwidth=bandwidth, peak=peak, link=link, which=which, fabric=fabric, scheduled=False)
        # where the runner's launches were counted, the drafts' own host time is their issue (spec_runner)
        draft_s = s.tokens * (one.total - (one.host_s if ops is not None else 0.0))
        # the head's input projection (EAGLE fc / MTP eh_proj), unquantized, streamed like a GEMM's weights
        draft_s += SR.fusion_weights(spec, s.method, s.tokens) * setup.fmt.other_bytes / (
            bandwidth * setup.efficiency.rates(which, False)[0])
        if ops is not None:  # no sync between the draft forwards: max(issue, GPU)
            draft_s = SR.draft_segment_seconds(ops, s.tokens, launch_s, draft_s)
    return replace(step, host_s=step.host_s + verify_ops_s, draft_s=draft_s, tokens_per_step=s.mean_accepted_length)


@lru_cache(maxsize=256)
def draft_parts(spec: ModelSpec, groups: ParamGroups, setup: ServingSetup, tp: int,
                pp: int) -> tuple[ServingSetup, ParamGroups, float]:
    """decode_step's proposer (setup.speculation.draft), the same at every batch: its setup (plain decoding, no
    adapters: they wrap the target only; no CUDA graph where the release runs the drafter eager), its parameter
    groups (EAGLE / MTP read the target's embedding and LM head) and its share of the KV cache (draft_kv_share).
    Remembered by value: a rate search asks ~170 batches of each (GPU, TP) (w16 B2)."""
    s = setup.speculation
    plain = replace(setup, speculation=None, lora=None)  # adapters wrap the target only
    if KR.drafter_runs_eager(setup.runtime.release, s.method):  # no graph: launches a layer
        plain = replace(plain, efficiency=replace(plain.efficiency, graph_max_tokens=0))
    draft_groups = param_groups(s.draft)
    if s.shares_embeddings:  # EAGLE / MTP read the target's LM head, not a head of their own
        draft_groups = replace(draft_groups, embedding=groups.embedding, lm_head=groups.lm_head, tied=groups.tied)
    return plain, draft_groups, draft_kv_share(spec, s, setup.kv_bytes, tp, pp)


def prefill_step(spec: ModelSpec, groups: ParamGroups, setup: ServingSetup, *, tp: int, pp: int, prompt,
                 bandwidth: float, peak: float, link: float | None, which: int = 0, batch: int = 1,
                 fabric: Accelerator | None = None) -> StepTime:
    """Time to first token for ``batch`` prompts of ``prompt`` tokens in one forward: the matmuls
    (weights read once), causal flash attention, elementwise and host time, all-reduces. With
    prefix caching only the uncached suffix is computed: causal FLOPs of the whole prompt minus
    those of the cached prefix (the suffix still attends to every cached key)."""
    budget = RP.split_budget(setup, fabric, prompt, batch)  # vLLM V1 prefills a long prompt in chunks (request_path)
    hardware = dict(tp=tp, pp=pp, bandwidth=bandwidth, peak=peak, link=link, which=which, fabric=fabric)
    if budget is not None:
        return RP.chunked_prefill(lambda prefixes, new: prefill_forward(
            spec, groups, setup, new=new, attention=causal_attention_flops(spec, prefixes + new, prefixes), **hardware),
            setup, prompt, budget)
    cached = math.floor(setup.prefix_hit * prompt)
    return prefill_forward(spec, groups, setup, new=max(1, prompt - cached), batch=batch,
                           attention=causal_attention_flops(spec, prompt, cached), **hardware)


def causal_attention_flops(spec: ModelSpec, prompt, cached):
    """Causal flash-attention FLOPs of computing a prompt's tokens past its ``cached`` prefix: those of the whole
    ``prompt`` less those of the prefix (the new tokens still attend to every cached key). ``prompt`` and
    ``cached`` one count each or int arrays of one per chunk (request_path.chunked_prefill), in which case an
    array of FLOPs; a prefix of 0 takes nothing off."""
    attention = attention_core_flops_per_token(spec, prompt, "causal") * prompt
    if isinstance(cached, np.ndarray):
        some = cached > 0
        attention[some] -= attention_core_flops_per_token(spec, cached[some], "causal") * cached[some]
    elif cached:
        attention -= attention_core_flops_per_token(spec, cached, "causal") * cached
    return attention


def prefill_forward(spec: ModelSpec, groups: ParamGroups, setup: ServingSetup, *, new: int, attention, tp: int,
                    pp: int, bandwidth: float, peak: float, link: float | None, which: int = 0, batch: int = 1,
                    fabric: Accelerator | None = None) -> StepTime:
    """One prefill forward of ``new`` tokens for each of ``batch`` prompts whose flash attention is ``attention``
    FLOPs a prompt (causal_attention_flops): the matmuls (weights read once), attention, elementwise and host
    time, all-reduces. ``attention`` an array (one value a chunk of a run of equal chunks): the StepTime's
    attention and the host terms that follow it are arrays too (request_path.combine_runs adds them up)."""
    flops = batch * (2.0 * layer_matmul_weights_per_token(spec) * new + 2.0 * spec.vocab_size * spec.hidden_size)
    weights = decode_weight_bytes_read(spec, groups, setup.fmt, tp, batch * new)
    if setup.lora is not None:
        weights += L.step_bytes(spec, setup.lora, tp, 1)
        flops += batch * new * L.flops_per_token(spec, setup.lora)
    work = StepWork(weights, flops, 0.0, batch * attention, batch * new, batch, prefill=True)
    return step_time(work, spec, setup, tp=tp, pp=pp, bandwidth=bandwidth, peak=peak, link=link, which=which,
                     fabric=fabric)


def batch_sizes(limit: int, cap: int = 1024) -> list[int]:
    """1, 2, 4, ... up to ``limit`` (and ``limit`` itself): the throughput-vs-batch curve's points."""
    top = min(limit, cap)
    sizes = [1 << i for i in range(0, 11) if (1 << i) <= top]
    return sizes + ([top] if top > 0 and top not in sizes else [])
