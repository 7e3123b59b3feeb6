"""How a communicator's members fall into scale-up domains: the split of its slowest group (issue 37, wave 17).

A layout's groups of one kind (every TP group, every data-parallel group) are ``ranks`` members ``stride`` ranks
apart in the rank order, tp innermost: Megatron-Core numbers a rank tp_rank + dp_rank x tp_size + ...
(megatron/core/parallel_state.py@core_v0.14.0 L219, generate_masked_orthogonal_rank_groups) and builds each group
as its members' ranks along the masked dimensions plus the group's offset along the others (L290-300), so a group's
members are base + i x stride, base = its offset. Ranks fill the scale-up domains in order (torchrun's node-major
global ranks): domain = rank // D.

Where D is a multiple of ranks x stride each group sits in one domain; where ranks x stride is a multiple of D and
stride divides D each domain holds D / stride members of each group it meets. Otherwise some groups straddle a
domain boundary with their members split unevenly (tp 4 on 6-GPU domains: ranks 4-7 are 2 + 2 over two domains),
and every layer waits for the slowest group. NCCL sizes a communicator's channels by its slowest domain: every rank
takes the minimum over all ranks of the graphs' nChannels, bwIntra and bwInter (src/init.cc @v2.26.2-1 L993-1000,
'Make sure we align all ranks so that the tuning is consistent'), so the domain holding the fewest members (the
fewest NICs) bounds the whole group. The split this module gives is that: the fewest members one domain holds of
the worst group (the NIC share core.comm.topology.Cluster.group gives it) and how many domains that group spans;
of two groups with the same fewest, the one over more domains (more network steps).

A scale-up domain of several hosts (GB200 / GB300 NVL72: 18 trays of 4 GPUs share NVLink; TPU pods of 4-chip
hosts; Cluster.host_gpus) is another case: the scheduler places the job, not rank order. For NVL72 the model takes
Slurm's topology/block plugin: a job that fits in one block (a rack) is placed in it (NVIDIA technical blog
'Achieving Peak System and Workload Efficiency on GB200 NVL72 with Slurm Block Scheduling'), and a larger one in
segments of whole trays, each inside one rack (--segment counts nodes, i.e. trays: NVIDIA recommends --segment 16
= 64 GPUs a rack for jobs of 128 GPUs or more, 'Unlock Exascale Performance on NVIDIA GB200 NVL72 with Slurm
Topology-Aware Job Scheduling'; CoreWeave SUNK 'Topology/Block Plugin' docs). So there a group that fits in a
segment stays in one rack (tp 16 on NVL72: 4 groups in a rack's 64, NVLink), and a larger one is spread evenly
over the fewest racks whose share divides it (an expert group of 128: 64 + 64). Not modelled: NVIDIA's own
--segment 4 (16 GPUs) for 32-64-GPU jobs and --segment 1 for smaller ones, which let such a job spread over
several racks; a job of up to 72 GPUs is taken as one rack's. TPU pods: a job runs on slices inside a pod (PaLM
Sec. 4: 2 pods of 3,072 v4 chips, model parallelism inside a pod), the same rule.

Counts only (integers). ``domain_split`` takes arrays (the planner's layouts) and computes each distinct
(ranks, stride, world) once; ``divides_evenly`` is the one even rule, for numbers and arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import frexp, gcd, lcm

import numpy as np


@dataclass(frozen=True)
class DomainSplit:
    """The worst group's place in the domains: ``fewest`` of its members in one domain (the NIC share the group
    gets there), ``domains`` it spans, ``members`` its members per domain in rank order where the groups do not
    divide the domains evenly and it straddles a boundary (the label's '2 + 2'), () otherwise."""

    fewest: int
    domains: int
    members: tuple[int, ...] = ()

    @property
    def straddles(self) -> bool:
        """Whether the worst group straddles a domain boundary the groups do not divide evenly (members named)."""
        return bool(self.members)


def divides_evenly(ranks, stride, domain: int):
    """Whether groups of ``ranks`` members ``stride`` apart divide domains of ``domain`` GPUs evenly (the link
    model's rule before wave 17: one member a domain, whole groups a domain, or domain / stride of each group a
    domain); integers or int64 arrays, broadcast (the one statement of the rule)."""
    block = ranks * stride
    return (ranks <= 1) | (stride >= domain) | (domain % block == 0) | ((block % domain == 0) & (domain % stride == 0))


def _even_split(ranks: int, stride: int, domain: int) -> DomainSplit:
    """The even rule's split where divides_evenly holds (its four cases in order)."""
    if ranks <= 1:
        return DomainSplit(1, 1)
    if stride >= domain:  # consecutive members at least a domain apart: one per domain
        return DomainSplit(1, ranks)
    if domain % (ranks * stride) == 0:  # whole groups per domain
        return DomainSplit(ranks, 1)
    return DomainSplit(domain // stride, ranks * stride // domain)  # domain / stride of each group it meets


def worst_split(ranks: int, stride: int, domain: int, whole_hosts: bool = False, world: int | None = None
                ) -> DomainSplit:
    """The worst group's split (module docstring) of groups of ``ranks`` members ``stride`` apart over domains of
    ``domain`` GPUs: ranks filling the domains in order, or, with ``whole_hosts`` (a domain of several hosts the
    scheduler fills in segments), groups kept whole where they fit and spread evenly otherwise. ``world``: the
    job's ranks (its groups are those that start below it); None = the one communicator is the job (a benchmark:
    its ranks * stride). The pattern repeats every lcm(ranks * stride, domain) ranks: a larger world is that.
    ``members`` is built here for the one group asked of (plan --explain's label, one number a domain it spans);
    the planner's arrays read _worst_shape, which holds no per-domain list."""
    fewest, spans, most, offset = _worst_shape(ranks, stride, domain, whole_hosts, _world(ranks, stride, domain, world))
    if offset < 0 or spans <= 1:
        return DomainSplit(fewest, spans)
    members = _members_in(offset, stride, ranks, domain, np.arange(spans))
    return DomainSplit(fewest, spans, tuple(int(c) for c in members))


def _world(ranks: int, stride: int, domain: int, world: int | None) -> int:
    """worst_split's world, cut to one period of the pattern: min(world, lcm(ranks * stride, domain))."""
    block = ranks * stride
    return min(block if world is None else world, lcm(block, domain))


def _members_in(offset, stride: int, ranks: int, domain: int, k):
    """Members of the group whose first rank sits ``offset`` into its domain (offset < domain; ``offset`` an array
    of one a row against ``k`` of one a column, or numbers) in its k-th domain from its first: of the members
    offset + i * stride (i < ranks), those in [k * domain, (k + 1) * domain), as the count of members below each
    bound, ceil((k * domain - offset) / stride) clipped to [0, ranks] (integers, exact)."""
    def below(domains):  # members below domains x domain: ceil((domains x domain - offset) / stride), clipped
        return np.clip(-((np.asarray(offset) - domains * domain) // stride), 0, ranks)
    return below(np.asarray(k) + 1) - below(np.asarray(k))


@lru_cache(maxsize=4096)
def _worst_shape(ranks: int, stride: int, domain: int, whole_hosts: bool, world: int) -> tuple[int, int, int, int]:
    """(fewest, domains, most, the worst group's offset into its first domain, -1 where no group straddles
    unevenly) of worst_split, with no array of a group's members or domains (issue 37's planner arrays: a data
    group of ~10^6 ranks beside tp 1 is ~1.3 x 10^5 domains, its list held in this cache per distinct job)."""
    if divides_evenly(ranks, stride, domain):
        found = _even_split(ranks, stride, domain)
        return found.fewest, found.domains, found.fewest, -1
    if world <= domain:  # the whole job sits in one domain
        return ranks, 1, ranks, -1
    if whole_hosts:
        cap = domain // stride  # members of one group a domain can hold
        if ranks <= cap:
            return ranks, 1, ranks, -1
        spans = next(k for k in range(2, ranks + 1) if ranks % k == 0 and ranks // k <= cap)
        return ranks // spans, spans, ranks // spans, -1
    block = ranks * stride
    # the groups' bases (outer x block + inner, inner < stride) below the world; a group's split depends only on
    # its base modulo the domain (a domain further on is the same split), so each distinct remainder once, in
    # the order the bases come (the first of equal splits names the members)
    bases = (np.arange(max(world // block, 1))[:, None] * block + np.arange(stride)[None, :]).ravel() % domain
    _, first = np.unique(bases, return_index=True)
    bases = bases[np.sort(first)]
    spans = (bases + (ranks - 1) * stride) // domain + 1  # consecutive domains from the first: stride < domain here
    # a domain strictly inside the span holds ceil(((k+1) D - o) / s) - ceil((k D - o) / s) members, which depends
    # only on (k D - o) mod s: its values repeat every s / gcd(D, s) domains, so the first and last domains and one
    # period of the inner ones give the same fewest and most as every domain (_members_in's count, exact)
    period = stride // gcd(domain, stride)
    inner = np.broadcast_to(np.arange(1, period + 1), (len(bases), period))
    k = np.concatenate([np.zeros((len(bases), 1), np.int64), inner, (spans - 1)[:, None]], axis=1)
    inside = k < spans[:, None]
    counts = _members_in(bases[:, None], stride, ranks, domain, k)
    fewest = np.where(inside, counts, ranks).min(axis=1)
    most = np.where(inside, counts, 0).max(axis=1)
    worst = int(np.lexsort((-spans, fewest))[0])  # fewest members, then most domains; the first of ties
    straddles = spans[worst] > 1
    return (int(fewest[worst]), int(spans[worst]), int(most[worst]) if straddles else int(fewest[worst]),
            int(bases[worst]) if straddles else -1)


def _is_whole(x):
    """Per element: a finite whole number (integer arrays: all)."""
    x = np.asarray(x)
    if x.dtype.kind in "iub":
        return True
    with np.errstate(invalid="ignore"):
        return np.isfinite(x) & (x == np.round(x))


_MANTISSA = (1 << 52) - 1
"""A float64's mantissa bits: zero in a power of two (IEEE 754 binary64)."""


def _powers_of_two(x) -> bool:
    """Whether every element is a power of two, 1 or more (integers, or floats read by their mantissa bits: one
    bitwise pass, the planner's arrays of 1,754 layouts in microseconds)."""
    x = np.asarray(x)
    if x.ndim == 0:
        value = float(x)
        return value >= 1 and frexp(value)[0] == 0.5
    if x.dtype.kind in "iu":
        return x.min() >= 1 and not np.bitwise_or.reduce(x & (x - 1), axis=None)
    x = np.ascontiguousarray(x, dtype=np.float64)
    return x.min() >= 1 and not np.bitwise_or.reduce(x.view(np.int64) & _MANTISSA, axis=None)


def domain_split(ranks, stride, domain: int, whole_hosts: bool = False, world=None):
    """(fewest members in one domain, domains spanned, most members in one domain, straddling mask) of the worst
    group for each (ranks, stride, world) (numbers or arrays, broadcast; ``world`` None = each group is the job),
    worst_split's; None where no row straddles: every group divides the domains evenly (divides_evenly: the caller's
    own rule gives the same) or the job sits in one domain. A row whose ranks, stride or world is not a whole number
    (a degree that does not divide) keeps the caller's rule (the mask False there), each row on its own."""
    r, s = np.asarray(ranks), np.maximum(np.asarray(stride), 1)
    if domain & (domain - 1) == 0 and _powers_of_two(r) and _powers_of_two(s):
        return None  # powers of two throughout (the planner's usual degrees on 8-GPU nodes): every group even
    w = r * s if world is None else np.asarray(world)
    # on the values as given: whole numbers' remainders are exact in floating point; other rows are masked off
    with np.errstate(invalid="ignore", divide="ignore"):
        straddle = (_is_whole(r) & _is_whole(s) & _is_whole(w) & (w > domain)
                    & ~divides_evenly(np.maximum(r, 1), s, domain))
    if not np.any(straddle):  # the common case, no per-layout work (the planner's arrays)
        return None
    if np.ndim(straddle) == 0:
        ranks, stride = max(int(r), 1), int(s)
        fewest, spans, most, _ = _worst_shape(ranks, stride, domain, whole_hosts, _world(ranks, stride, domain, int(w)))
        return np.int64(fewest), np.float64(spans), np.int64(most), straddle
    # each distinct (ranks, stride, world) once, on one packed int64 key (as core.row_groups packs its columns)
    rows = np.flatnonzero(straddle.ravel())
    cols = [np.broadcast_to(x, straddle.shape).ravel()[rows].astype(np.int64) for x in (np.maximum(r, 1), s, w)]
    widths = [int(col.max()) + 1 for col in cols[1:]]
    if int(cols[0].max()) * widths[0] * widths[1] < 2**62:
        key = (cols[0] * widths[0] + cols[1]) * widths[1] + cols[2]
        _, first, back = np.unique(key, return_index=True, return_inverse=True)
    else:  # a key past int64: the columns themselves
        _, first, back = np.unique(np.stack(cols, axis=1), axis=0, return_index=True, return_inverse=True)
    found = np.array([_worst_shape(ranks, stride, domain, whole_hosts, _world(ranks, stride, domain, world))[:3]
                      for ranks, stride, world in zip(*(col[first].tolist() for col in cols))], np.int64)
    fewest, most = np.zeros(straddle.shape, np.int64), np.zeros(straddle.shape, np.int64)
    spans = np.ones(straddle.shape)
    fewest.ravel()[rows] = found[:, 0][np.ravel(back)]
    spans.ravel()[rows] = found[:, 1].astype(float)[np.ravel(back)]
    most.ravel()[rows] = found[:, 2][np.ravel(back)]
    return fewest, spans, most, straddle


def split_label(ranks, stride, domain: int, whole_hosts: bool = False, world=None) -> str:
    """'over 6-GPU domains: 2 + 2' where a scalar group straddles domains unevenly (plan --explain's link column);
    on a domain of several hosts where the group is larger than a segment holds, the segments it is spread over
    ('as 64 + 64 over 72-GPU domains in whole-host segments'); '' otherwise or for arrays."""
    if np.ndim(ranks) or np.ndim(stride) or np.ndim(world):
        return ""
    if not (_is_whole(ranks) and _is_whole(stride) and (world is None or _is_whole(world))):
        return ""
    ranks, stride = max(int(ranks), 1), max(int(stride), 1)
    found = worst_split(ranks, stride, domain, whole_hosts, None if world is None else int(world))
    if whole_hosts and not divides_evenly(ranks, stride, domain) and found.domains > 1:
        share = " + ".join([str(found.fewest)] * found.domains)
        return f"as {share} over {domain}-GPU domains in whole-host segments"
    return f"over {domain}-GPU domains: {' + '.join(map(str, found.members))}" if found.straddles else ""
