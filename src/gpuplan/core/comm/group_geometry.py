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

A scale-up domain of several hosts (GB200 / GB300 NVL72: 18 trays of 4 GPUs share NVLink; Cluster.host_gpus) is
another case: the scheduler places a job's hosts in segments each inside one domain (Slurm's topology/block plugin
and --segment; NVIDIA's recommendation for GB200 NVL72 is segments of 16 trays for large jobs and 4 for 32-64-GPU
jobs, both 64 of a rack's 72 GPUs: NVIDIA technical blog 'Unlock Exascale Performance on NVIDIA GB200 NVL72 with
Slurm Topology-Aware Job Scheduling'; CoreWeave SUNK 'Topology/Block Plugin' docs). So there a group that fits in a
domain stays in one (tp 16 on NVL72: 4 groups in a rack's 64, NVLink), and a larger one is spread evenly over the
fewest domains whose share divides it (an expert group of 128: 64 + 64).

Counts only (integers). ``domain_split`` takes arrays (the planner's layouts) and computes each distinct
(ranks, stride) once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import lcm

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


def _even(ranks: int, stride: int, domain: int) -> DomainSplit | None:
    """The split where the groups divide the domains evenly (the link model's rule before wave 17), else None."""
    if ranks <= 1:
        return DomainSplit(1, 1)
    if stride >= domain:  # consecutive members at least a domain apart: one per domain
        return DomainSplit(1, ranks)
    block = ranks * stride
    if domain % block == 0:  # whole groups per domain
        return DomainSplit(ranks, 1)
    if block % domain == 0 and domain % stride == 0:  # each domain holds domain / stride of each group it meets
        return DomainSplit(domain // stride, block // domain)
    return None


@lru_cache(maxsize=4096)
def worst_split(ranks: int, stride: int, domain: int, whole_hosts: bool = False, world: int | None = None
                ) -> DomainSplit:
    """The worst group's split (module docstring) of groups of ``ranks`` members ``stride`` apart over domains of
    ``domain`` GPUs: ranks filling the domains in order, or, with ``whole_hosts`` (a domain of several hosts the
    scheduler fills in segments), groups kept whole where they fit and spread evenly otherwise. ``world``: the
    job's ranks (its groups are those that start below it); None = the one communicator is the job (a benchmark:
    its ranks * stride)."""
    block = ranks * stride
    world = block if world is None else world
    even = _even(ranks, stride, domain)
    if even is not None:
        return even
    if world <= domain:  # the whole job sits in one domain
        return DomainSplit(ranks, 1)
    if whole_hosts:
        cap = domain // stride  # members of one group a domain can hold
        if ranks <= cap:
            return DomainSplit(ranks, 1)
        spans = next(k for k in range(2, ranks + 1) if ranks % k == 0 and ranks // k <= cap)
        return DomainSplit(ranks // spans, spans)
    offsets = np.arange(ranks) * stride
    worst, members = None, ()
    blocks = max(min(lcm(block, domain), world) // block, 1)  # the pattern repeats every lcm(block, domain) ranks
    for base in (outer * block + inner for outer in range(blocks) for inner in range(stride)):
        where = (base + offsets) // domain
        counts = np.bincount(where - where[0])  # consecutive domains: stride < domain here
        key = (int(counts.min()), -len(counts))
        if worst is None or key < worst:
            worst, members = key, tuple(int(c) for c in counts)
    return DomainSplit(worst[0], -worst[1], members if len(members) > 1 else ())


def _whole(x) -> bool:
    return bool(np.all(np.asarray(x) == np.round(np.asarray(x))))


def domain_split(ranks, stride, domain: int, whole_hosts: bool = False, world=None):
    """(fewest members in one domain, domains spanned) of the worst group for each (ranks, stride, world) (numbers
    or arrays, broadcast; ``world`` None = each group is the job), worst_split's; None where every group divides the
    domains evenly or the job sits in one domain (_even: the caller's own rule gives the same), or a ranks, stride
    or world is not a whole number (a degree that does not divide: the caller keeps its own rule)."""
    r, s = np.broadcast_arrays(np.asarray(ranks), np.maximum(np.asarray(stride), 1))
    block = np.maximum(r, 1) * s
    w = block if world is None else np.broadcast_to(np.asarray(world), block.shape)
    if not (_whole(r) and _whole(s) and _whole(w)):
        return None
    block, w = block.astype(np.int64), w.astype(np.int64)
    even = (r <= 1) | (s >= domain) | (domain % block == 0) | ((block % domain == 0) & (domain % s == 0))
    if np.all(even | (w <= domain)):  # the common case, no per-layout work (the planner's arrays)
        return None
    triples = np.stack([np.maximum(r, 1).ravel(), s.ravel(), w.ravel()]).astype(np.int64)
    unique, back = np.unique(triples, axis=1, return_inverse=True)
    found = [worst_split(int(n), int(k), domain, whole_hosts, None if world is None else int(g))
             for n, k, g in unique.T]
    fewest = np.array([f.fewest for f in found])[np.ravel(back)].reshape(r.shape)
    spans = np.array([f.domains for f in found])[np.ravel(back)].reshape(r.shape)
    return fewest, spans


def split_label(ranks, stride, domain: int, whole_hosts: bool = False, world=None) -> str:
    """'over 6-GPU domains: 2 + 2' where a scalar group straddles domains unevenly (plan --explain's link column),
    '' otherwise or for arrays."""
    if np.ndim(ranks) or np.ndim(stride) or np.ndim(world) or not (_whole(ranks) and _whole(stride)):
        return ""
    if world is not None and not _whole(world):
        return ""
    found = worst_split(max(int(ranks), 1), max(int(stride), 1), domain, whole_hosts,
                        None if world is None else int(world))
    return f"over {domain}-GPU domains: {' + '.join(map(str, found.members))}" if found.straddles else ""
