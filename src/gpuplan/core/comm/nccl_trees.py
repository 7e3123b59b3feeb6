"""NCCL's double binary tree across scale-up domains (src/graph/trees.cc): what its busiest domain carries.
Pure functions of the domain count; values may be numbers or numpy arrays."""

from __future__ import annotations

import numpy as np


def tree_busiest_domain_load(nodes):
    """Bytes per payload byte the busiest domain's NICs send (and receive) in NCCL's double binary tree
    all-reduce across ``nodes`` domains: 1 on two, 1.5 on three, 2 from four (1 on one: unused).

    NCCL splits the payload between two trees over all domains (src/graph/trees.cc @v2.27.7-1
    ncclGetDtree: the first a binary tree rooted at domain 0, ncclGetBtree, the second its mirror for an
    even count or the first shifted by one for an odd count), and every channel of a tree uses the same
    tree (connect.cc lines 145-168). Per tree (S / 2) a domain with c children and p parents (0 or 1)
    sends and receives (c + p) x S / 2: children's partial sums up and the result down. A domain inside
    one tree (a parent and two children, 1.5 S) is a leaf of the other (0.5 S): 2 S from four domains (4
    domains: loads S, 2 S, 2 S, S); three domains are two chains, 1.5 S at most; two, S. The pipelined
    tree runs at its busiest domain's rate, so the mean, 2 S (k - 1)/k, overstates its rate k / (k - 1)
    times from four domains (4: 1.33x). NCCL's tuner's 2 S beyond two domains (tuning.cc 'bwInter / 2' via
    the tree's ratio .5) is exact from four and conservative on three."""
    k = np.asarray(nodes, dtype=float)
    return np.where(k <= 2, 1.0, np.where(k <= 3, 1.5, 2.0))
