"""The layout space: every (GPUs, dp, tp, pp, vpp, cp, ep, ZeRO, micro-batch) a model can run on.

Degrees come from divisors, so any GPU count works (96, 1,113, 100,000), with the constraints the
frameworks impose (Megatron-Core / torchtitan):

* tp divides the GPU count, the attention heads and the K/V heads (MLA: the heads), and fits in
  the scale-up domain (a node; 72 on NVL72);
* cp divides what tp leaves, and the sequence in 2·cp chunks (Megatron's load-balanced ring
  attention splits each sequence into 2·cp pieces), up to 32;
* pp divides what tp·cp leave and is at most the layer count; stages may be uneven (the first
  ones take the remainder: core.memory.training.stage_layer_counts);
* vpp (interleaved 1F1B) divides layers / pp when pp > 1 (Megatron: layers % (pp·vpp) == 0);
  Megatron-Core's interleaved schedule needs at least pp micro-batches per step, and its combined
  1F1B schedule (--ep-a2a-overlap) ep > 1, vpp > 1 with a pipeline, a multiple of pp micro-batches
  and no full recompute (planner.framework_rules);
* dp = GPUs / (tp·cp·pp); ep divides the experts and dp·cp·tp / etp (experts are laid out over etp x ep
  of a stage's ranks: dp·cp where etp = tp, Megatron-Core's default; core.expert_layout); ZeRO 0-3 when there is more than one data-parallel rank;
* a shard group (--shard-group, HSDP) the user gave divides dp·cp, with the ZeRO stages the framework runs it
  with (framework_rules.HSDP_ZERO_STAGES); with --shard-group auto the search also ranks groups of whole nodes
  (planner.shard_group_search);
* every data-parallel rank gets at least one sequence (dp <= the requested batch); a batch given
  in sequences (--global-batch) is kept exactly, so dp divides it (Megatron asserts
  global_batch % (micro_batch x dp) == 0), while a batch given in tokens (or the 4M default) is a
  target rounded to a multiple of dp (B = dp·round(target/dp)); the micro-batch is any divisor
  of B / dp.

Arrays are built with numpy; the planner evaluates them in bulk (planner.search).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cache
from itertools import product

import numpy as np

from gpuplan.core.expert_layout import EXPERTS_REPLICATED_OVER_TP, expert_tp_for, resolved_expert_tp
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.parallel import virtual_stages_fit
from gpuplan.errors import InputError
from gpuplan.planner.framework_rules import (HSDP_ZERO_STAGES, PER_MICRO_BATCH_SPLIT, combined_1f1b_runs,
                                             interleaved_runs, rules_for, sequence_split_runs, torch_pipeline_runs,
                                             zero_allowed)

RECOMPUTE_MODES = ("none", "selective", "full")
DEGREES = ("gpus", "dp", "tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch", "micro_batches", "global_batch")


@dataclass(frozen=True)
class SpaceLimits:
    """What to enumerate; a fixed degree (the user's layout) narrows that axis to one value."""

    max_tp: int | None = None
    """Largest tensor-parallel degree (default: the scale-up domain, i.e. GPUs per node)."""
    max_cp: int = 32
    max_micro_batch: int | None = None
    zero: tuple[int, ...] = (0, 1, 2, 3)
    max_zero_with_pp: int = 3
    """Highest ZeRO stage combined with pipeline parallelism (the framework's limit)."""
    interleaved_pipeline: bool = True
    """The framework runs virtual pipeline stages (vpp > 1)."""
    interleaved_needs_pp_micro_batches: bool = False
    """Interleaved layouts need at least pp micro-batches per step (Megatron-Core:
    framework_rules.interleaved_runs)."""
    combined_1f1b: bool = False
    """The MoE all-to-all runs under Megatron-Core's combined 1F1B schedule (--ep-a2a-overlap): only
    layouts it runs (framework_rules.combined_1f1b_runs; interleaved with a multiple of pp
    micro-batches, interleaved_runs' default groups), whatever the framework."""
    recompute: tuple[str, ...] = RECOMPUTE_MODES
    fixed: dict = field(default_factory=dict)
    """Degrees the user fixed: tp, pp, vpp, cp, ep, zero, micro_batch, dp."""
    exact_batch: bool = False
    """The requested batch is exact (sequences given): dp must divide it, no rounding."""
    batch_per_gpu: float = 0.0
    """Sequences per GPU a default batch is raised to at each count (0: the asked batch holds)."""
    sequence_split: bool = False
    """Sequence parallelism is on: the framework's sequence-split rule holds (framework_rules.sequence_split_runs,
    the one schema.layout_rules.check_sequence_split states: Megatron's tp divides seq_len / cp, torchtitan's
    tp x 2·cp divides micro_batch x seq_len; generic none)."""
    framework: str = "generic"
    """Whose data-parallel sharding rules the free search follows (planner.framework_rules); a ZeRO
    stage the user fixed is evaluated as asked."""
    shard_group: int | None = None
    """--shard-group (HSDP): only structures whose dp x cp it divides, with the ZeRO stages the framework runs it
    with (framework_rules.HSDP_ZERO_STAGES); None: every data-parallel rank shards (auto: shard_group_search)."""
    shard_group_search: bool = False
    """--shard-group auto: the search also ranks the HSDP groups of whole nodes below each layout's dp x cp
    (planner.shard_group_search, after the plain search)."""
    etp: int | None = None
    """--etp as given; None: the framework's expert TP (core.expert_layout), which sets the ranks ep divides
    (expert_region_ranks)."""


def batch_target(target_batch: float, gpus: int, limits: SpaceLimits | None) -> float:
    """Sequences per step asked for on ``gpus`` GPUs: the asked batch, at least
    ``limits.batch_per_gpu`` per GPU when the batch is the default."""
    floor = limits.batch_per_gpu * gpus if limits is not None else 0.0
    return max(target_batch, floor)


@cache
def divisors(n: int) -> tuple[int, ...]:
    """Positive divisors of n, ascending: from its prime factors (trial division stops once the
    cofactor's square root is passed, so n <= 10^7 costs at most ~1,600 steps)."""
    factors: list[tuple[int, int]] = []
    rest, p = n, 2
    while p * p <= rest:
        power = 0
        while rest % p == 0:
            rest //= p
            power += 1
        if power:
            factors.append((p, power))
        p += 1 if p == 2 else 2
    if rest > 1:
        factors.append((rest, 1))
    found = [1]
    for prime, power in factors:
        found = [d * prime**k for d in found for k in range(power + 1)]
    return tuple(sorted(found))


def tp_options(spec: ModelSpec, gpus: int, max_tp: int, kv_subsharding: bool = False) -> list[int]:
    """TP degrees (dividing ``gpus``, up to ``max_tp``) that divide the query heads and either divide the K/V
    heads or, where the framework sub-shards the QKV activation (``kv_subsharding``, framework_rules), are a
    multiple of them: Megatron-Core 0.16 accepts num_query_groups 'a multiple or divisor of
    tensor_model_parallel_size' (transformer_config.py@core_v0.16.0 L939-946) and, below tp, keeps one query
    group a rank after all-gathering the mixed QKV (attention.py@core_v0.16.0 L289-300, L1397-1416; its
    all-gather / reduce-scatter timed by core.comm.qkv_gather). Before wave 16 only a tp the user fixed got
    the multiples, so a one-K/V-head model (PaLM, StarCoder) was searched at tp 1 alone."""
    a = spec.attention
    kv = a.num_heads if a.is_mla else a.num_kv_heads
    return [t for t in divisors(gpus) if t <= max_tp and a.num_heads % t == 0
            and (kv % t == 0 or (kv_subsharding and t % kv == 0))]


def free_kv_subsharding(spec: ModelSpec, limits: SpaceLimits, tp_fixed: bool = False) -> bool:
    """Whether the free search tries tp past the K/V heads (tp_options): where the framework runs it
    (framework_rules.kv_subsharding), on a dense model. A MoE model keeps the divisors unless the user fixes tp
    (the fixed tp is checked by core.parallel.check_kv_heads): its grid is ep x tp wide, and the multiples took
    `plan qwen3-30b-a3b` (32 heads, 4 K/V) on H100 from 691,522 to 951,954 layouts, past
    planner.search.MAX_EVALUATED (800,000), on 25 of the catalog's GPUs, and qwen3-235b-a22b past it on four TPUs
    (wave 16 C2); its expert weights, which EP splits, outweigh the attention share that tp past the K/V heads
    would split further."""
    return rules_for(limits.framework).kv_subsharding and (spec.moe is None or tp_fixed)


def batch_for(dp: int, target: float) -> int:
    """Sequences per step: the target rounded to a multiple of dp (at least dp)."""
    return dp * max(1, round(target / dp))


@cache
def interleaving_options(num_layers: int, pp: int) -> tuple[int, ...]:
    """Virtual-pipeline sizes the planner searches for ``pp`` stages (1 = no interleaving): the
    divisors of the layers per stage when pp divides the layers (Megatron-Core's even split)."""
    if pp == 1 or num_layers % pp:
        return (1,)
    return (1,) + tuple(v for v in divisors(num_layers // pp) if v > 1)


@cache
def uneven_interleaving_options(num_layers: int, pp: int) -> tuple[int, ...]:
    """Virtual-pipeline sizes above 1 that ``pp`` stages can build unevenly (interleaving_buildable).
    Searched only under the combined 1F1B schedule, which runs a pipeline only interleaved
    (framework_rules.combined_1f1b_runs), where the even split has none: Megatron-Bridge runs
    DeepSeek-V3's 61 layers as PP 2 x VP 8, PP 4 x VP 4 and PP 8 x VP 2 / 4 with that overlap
    (catalog/reference/published_throughput.yaml, pipeline layouts of its recipes); without them a
    61-layer model would get no pipeline at all."""
    return tuple(v for v in range(2, num_layers + 3) if interleaving_buildable(num_layers, pp, v))


def interleaving_buildable(num_layers: int, pp: int, vpp: int) -> bool:
    """Whether a virtual-pipeline size a user fixed can be built on ``pp`` stages: interleaving
    needs pp > 1, and the virtual stages must fit the layers (core.parallel.virtual_stages_fit:
    uneven splits as torchtitan makes them, or Megatron-Core's embedding/loss split, how
    Megatron-Bridge's Llama 3.1 405B recipes run 126 layers as PP 16 x VP 8,
    src/megatron/bridge/recipes/llama/h100/llama3.py). Only a fixed --vpp gets these: searched
    freely they moved the Llama 3.1 405B GPU-hours row from -11% to -24% (docs/step.md)."""
    return vpp == 1 or (pp > 1 and virtual_stages_fit(num_layers, pp, vpp))


def structures(spec: ModelSpec, gpus: int, seq_len: int, max_tp: int, limits: SpaceLimits):
    """(tp, cp, pp, vpp, dp) of every structure ``gpus`` GPUs allow (Python loops: a few hundred)."""
    fixed = limits.fixed
    L = spec.num_layers
    no_pipeline = spec.tie_embeddings and not rules_for(limits.framework).pipeline_with_tied_embeddings
    no_cp = rules_for(limits.framework).cp_attention_untimed and "cp" not in fixed  # CP needs an untimed kernel
    for tp in tp_options(spec, gpus, max_tp, free_kv_subsharding(spec, limits, "tp" in fixed)):
        if "tp" in fixed and tp != fixed["tp"]:
            continue
        for cp in divisors(gpus // tp):
            if cp > limits.max_cp or (cp > 1 and (seq_len % (2 * cp) or no_cp)) or ("cp" in fixed and cp != fixed["cp"]):
                continue
            if limits.sequence_split and not sequence_split_runs(limits.framework, True, tp=tp, cp=cp, seq_len=seq_len,
                                                                 micro_batch=None):
                continue
            for pp in divisors(gpus // (tp * cp)):
                if pp > L or ("pp" in fixed and pp != fixed["pp"]) or (pp > 1 and no_pipeline and "pp" not in fixed):
                    continue
                dp = gpus // (tp * cp * pp)
                if "dp" in fixed and dp != fixed["dp"]:
                    continue
                if "vpp" in fixed:
                    vpps = (fixed["vpp"],) if interleaving_buildable(L, pp, fixed["vpp"]) else ()
                elif limits.interleaved_pipeline:
                    vpps = interleaving_options(L, pp)
                    if limits.combined_1f1b and vpps == (1,) and pp > 1:
                        vpps = uneven_interleaving_options(L, pp)
                else:
                    vpps = (1,)
                for vpp in vpps:
                    # the combined 1F1B rule's ep > 1 half is in _ep_choices
                    if not limits.combined_1f1b or combined_1f1b_runs(pp, vpp, ep=2):
                        yield tp, cp, pp, vpp, dp


def sequence_split_note(spec: ModelSpec, gpus: int, seq_len: int, max_tp: int, limits: SpaceLimits | None) -> str:
    """Words for the no-fit refusal where the framework's sequence-split rule (structures) left tp 1 only on up to
    ``gpus`` GPUs: every tp > 1 the heads allow is refused at cp 1, and a cp never restores one (a cp passes only
    when 2·cp divides seq_len, and tp then divides seq_len / cp only if it divides seq_len). '' otherwise, and
    under a rule that counts the micro-batch (torchtitan's: the search picks one that divides). Review w14 R2 N1:
    `plan --model llama-3.1-405b --gpus 64 --seq-len 4097` named more GPUs only."""
    if limits is None or not limits.sequence_split or "tp" in limits.fixed:
        return ""
    tps = [tp for tp in tp_options(spec, gpus, max_tp, free_kv_subsharding(spec, limits)) if tp > 1]
    if not tps or any(sequence_split_runs(limits.framework, True, tp=tp, cp=1, seq_len=seq_len, micro_batch=None)
                      for tp in tps):
        return ""
    return (f"; sequence parallelism left tp 1 only: Megatron asserts tp divides the sequence length {seq_len:,} "
            "(tensor_parallel/mappings.py@00caa53 L67-70), so give --no-sequence-parallel or a --seq-len multiple "
            f"of {max(tps)}")


def sequence_split_refusal(spec: ModelSpec, counts: tuple[int, ...], seq_len: int, target_batch: float,
                           max_tp: int, limits: SpaceLimits | None) -> InputError | None:
    """Why an empty search found no layout where the framework's sequence-split rule counts the micro-batch
    (torchtitan's, PER_MICRO_BATCH_SPLIT): the same search without the rule finds layouts, and on the first one's
    tp / cp no micro-batch it allowed makes micro_batch x seq_len divide (schema.layout_rules.torchtitan_split_error,
    `memory`'s words). None otherwise (the rule is not the cause). Review w14 R3 S2: `plan --framework torchtitan
    --tp 8 --seq-len 4097 --global-batch 4` said only 'no layout can use these GPU counts'."""
    from gpuplan.schema.layout_rules import torchtitan_split_error

    if limits is None or not limits.sequence_split or limits.framework not in PER_MICRO_BATCH_SPLIT:
        return None
    free = enumerate_layouts(spec, counts, seq_len, target_batch, max_tp, replace(limits, sequence_split=False))
    if not len(free["tp"]):
        return None
    tp, cp = int(free["tp"][0]), int(free["cp"][0])
    tried = np.unique(free["micro_batch"][(free["tp"] == tp) & (free["cp"] == cp)])
    return torchtitan_split_error(tp, cp, seq_len, tuple(int(m) for m in tried))


def enumerate_layouts(spec: ModelSpec, counts: tuple[int, ...], seq_len: int, target_batch: float,
                      max_tp: int, limits: SpaceLimits | None = None,
                      max_rows: int | None = None) -> dict[str, np.ndarray]:
    """Every valid layout (without the recompute axis) as parallel int64 arrays (DEGREES).
    ``max_rows``: refuse (InputError) before building more rows than that."""
    limits = limits or SpaceLimits()
    fixed = limits.fixed
    experts = spec.moe.num_experts if spec.moe is not None else 0
    rules = rules_for(limits.framework)
    # one (head, grid) block per structure; the (ep, ZeRO, micro-batch) grids repeat across
    # structures, so each distinct one is built once and the rows are assembled in a few numpy
    # calls. The ep, ZeRO and micro-batch choices depend on a few degrees only: each distinct
    # question is answered once (a 1,024-GPU search has ~500 structures, ~20 distinct answers)
    heads: list[tuple[int, ...]] = []
    grids: list[np.ndarray] = []
    built: dict[tuple, np.ndarray] = {}
    ep_choices: dict[int, tuple[int, ...]] = {}
    zero_choices: dict[tuple, tuple[int, ...]] = {}
    mb_choices: dict[tuple, tuple[int, ...]] = {}
    total = 0
    split = limits.sequence_split and limits.framework in PER_MICRO_BATCH_SPLIT  # the rule counts the micro-batch
    shard, hsdp = limits.shard_group, HSDP_ZERO_STAGES.get(limits.framework, HSDP_ZERO_STAGES["generic"])
    for gpus in counts:
        target = batch_target(target_batch, gpus, limits)
        for tp, cp, pp, vpp, dp in structures(spec, gpus, seq_len, max_tp, limits):
            if dp > target or (limits.exact_batch and round(target) % dp) or (shard and (dp * cp) % shard):
                continue
            batch = batch_for(dp, target)
            per_rank = batch // dp
            region = expert_region_ranks(dp, cp, tp, limits)
            eps = ep_choices.get(region)
            if eps is None:
                eps = ep_choices[region] = _ep_choices(experts, region, fixed, limits.combined_1f1b) if region else ()
            ep_max = max(eps, default=1)
            # the stages allowed read only whether dp x cp, pp and the other model-parallel degrees exceed 1
            # (the tests below and framework_rules.zero_allowed; tests/test_search_dedup.py checks this key)
            zero_key = zero_choice_key(dp, tp, pp, cp, ep_max)
            zeros = zero_choices.get(zero_key)
            if zeros is None:
                zeros = zero_choices[zero_key] = tuple(
                    z for z in limits.zero if (z == 0 or dp * cp > 1 or "zero" in fixed) and ("zero" not in fixed or z == fixed["zero"])
                    and (pp == 1 or z <= limits.max_zero_with_pp) and (shard is None or z in hsdp)
                    and ("zero" in fixed or zero_allowed(rules, z, dp=dp, tp=tp, pp=pp, cp=cp, ep_max=ep_max)))
            # only interleaved layouts under that rule depend on pp
            needs_pp = vpp > 1 and (limits.interleaved_needs_pp_micro_batches or limits.combined_1f1b)
            torch_pp = rules.torch_pipelining and pp > 1  # torch.distributed.pipelining's micro-batch rules
            mb_key = (per_rank, pp if needs_pp or torch_pp else 0, torch_pp and vpp > 1, (tp, cp) if split else None)
            mbs = mb_choices.get(mb_key)
            if mbs is None:
                mbs = mb_choices[mb_key] = tuple(
                    m for m in divisors(per_rank) if (limits.max_micro_batch is None or m <= limits.max_micro_batch)
                    and ("micro_batch" not in fixed or m == fixed["micro_batch"])
                    and (not needs_pp or interleaved_runs(pp, vpp, per_rank // m, limits.combined_1f1b))
                    and (not torch_pp or bool(torch_pipeline_runs(pp, vpp, per_rank // m)))
                    and (not split or sequence_split_runs(limits.framework, True, tp=tp, cp=cp, seq_len=seq_len,
                                                          micro_batch=m)))
            key = (eps, zeros, mbs)
            grid = built.get(key)
            if grid is None:  # ep, ZeRO, micro-batch columns (3 x rows), in product order
                grid = built[key] = np.array(list(product(eps, zeros, mbs)), dtype=np.int64).reshape(-1, 3).T.copy()
            if not grid.shape[1]:
                continue
            total += grid.shape[1]
            if max_rows is not None and total > max_rows:
                raise InputError("gpus", f"{len(counts):,} GPU count(s)", f"the search would consider more than "
                                 f"{max_rows:,} layouts; give fewer GPU counts (--gpus), a smaller global batch or fix "
                                 "some degrees (--tp, --pp, --micro-batch)")
            heads.append((gpus, dp, tp, pp, vpp, cp, batch, per_rank))
            grids.append(grid)
    if not grids:
        return {name: np.zeros(0, dtype=np.int64) for name in DEGREES}
    sizes = np.fromiter((g.shape[1] for g in grids), dtype=np.int64, count=len(grids))
    gpus, dp, tp, pp, vpp, cp, batch, per_rank = (np.repeat(column, sizes) for column in
                                                  np.array(heads, dtype=np.int64).T)
    ep, zero, mb = np.concatenate(grids, axis=1)  # each row of the (3 x rows) array is contiguous
    columns = dict(gpus=gpus, dp=dp, tp=tp, pp=pp, vpp=vpp, cp=cp, ep=ep, zero=zero, micro_batch=mb,
                   micro_batches=per_rank // mb, global_batch=batch)
    return {name: columns[name] for name in DEGREES}


def zero_choice_key(dp: int, tp: int, pp: int, cp: int, ep_max: int) -> tuple[bool, bool, bool]:
    """What the ZeRO stages a structure may run depend on (enumerate_layouts' test and
    framework_rules.zero_allowed): data parallelism (dp x cp > 1), a pipeline, any model-parallel degree.
    One answer per key, not per structure: ~9,000 structures of a default-range plan share 8 keys."""
    return dp * cp > 1, pp > 1, tp > 1 or pp > 1 or cp > 1 or ep_max > 1


def check_fixed_in_range(fixed: dict, max_tp: int, max_cp: int) -> None:
    """A tp or cp the user fixed beyond what the search lays out is refused naming it (it was 'no layout
    can use these GPU counts', naming gpus); `gpuplan memory` still takes it."""
    if fixed.get("tp", 1) > max_tp:
        raise InputError("tp", fixed["tp"], f"at most {max_tp}: the planner keeps tensor parallelism inside the "
                         f"scale-up domain of {max_tp} GPUs (--gpus-per-node)")
    if fixed.get("cp", 1) > max_cp:
        raise InputError("cp", fixed["cp"], f"at most {max_cp}, the context-parallel degrees the planner lays out")


def expert_region_ranks(dp: int, cp: int, tp: int, limits: SpaceLimits) -> int:
    """The ranks of a pipeline stage ep must divide once etp has split them (core.parallel.check_expert_layout):
    dp x cp x tp / etp, i.e. dp x cp where etp = tp (Megatron-Core's default) or DeepSpeed-MoE carves ep from the
    data-parallel ranks; 0 where etp does not divide dp x cp x tp (no expert layout). With a shard group (HSDP) the
    group's ranks take dp x cp's place (core.parallel.HSDP_EXPERT_RULE: the frameworks lay the experts out within
    it); DeepSpeed's MiCS runs no experts (1: ep 1 only)."""
    data = limits.shard_group or dp * cp
    if limits.framework in EXPERTS_REPLICATED_OVER_TP:
        return 1 if limits.shard_group else data
    # the etp of any layout with ep > 1 (ep 1 divides every region): tp, --etp, or torchtitan's 1
    etp = resolved_expert_tp(expert_tp_for(limits.framework, limits.etp), tp, ep=2)
    ranks = data * tp
    return ranks // etp if ranks % etp == 0 else 0


def _ep_choices(experts: int, data_ranks: int, fixed: dict, combined_1f1b: bool = False) -> tuple[int, ...]:
    """Expert-parallel degrees: divisors of the experts that divide ``data_ranks`` (expert_region_ranks; 1 for a
    dense model); above 1 under the combined 1F1B schedule (framework_rules.combined_1f1b_runs)."""
    eps = [e for e in divisors(experts) if data_ranks % e == 0 and (e > 1 or not combined_1f1b)] if experts else [1]
    return tuple(e for e in eps if "ep" not in fixed or e == fixed["ep"])


def is_common_size(n: int) -> bool:
    """A common cluster size: a power of two or 3 x one (..., 512, 768, 1024, 1536, ...)."""
    core = n // 3 if n % 3 == 0 else n
    return n > 0 and core & (core - 1) == 0


DEADLINE_COUNTS_MAX = 131_072
"""Largest GPU count a deadline search considers (`train --mfu predicted` for --days, `plan` for the
article's default week): the common cluster sizes up to it (range_counts), then the counts between the
two that bracket the answer (planner.plan.deadline_counts_between)."""


def power_counts(low: int, high: int) -> tuple[int, ...]:
    """GPU counts `plan --gpus low-high` searches: the powers of two in the range plus its two ends, so a range
    with no power of two in it (100-120) keeps both ends; 1-10,000,000: 1, 2, 4, ..., 8,388,608, 10,000,000
    (25 counts). Not range_counts' 1.5x sizes as well: they move `plan llama-3.1-405b --gpu h100 --gpus
    1-10000000` from 131,072 GPUs (2.06 days with failures) to 98,304 (2.45 days), which the slow end ranks
    first (docs/training.md), and a range names the counts its user means, 512-4096 its powers of two."""
    return tuple(sorted({2**k for k in range(high.bit_length()) if low <= 2**k <= high} | {low, high}))


def range_counts(low: int, high: int) -> tuple[int, ...]:
    """The common cluster sizes in [low, high] — powers of two and 1.5x powers of two (512, 768, 1024,
    1536, ...) — plus its two ends: the deadline search's first pass (jobs.plan.deadline.deadline_counts) and
    the smaller / larger counts planner.plan tries; a `--gpus` range searches power_counts instead."""
    threes = {3 * 2**k for k in range(high.bit_length()) if low <= 3 * 2**k <= high}
    return tuple(sorted(threes.union(power_counts(low, high))))
