"""Enumerate every valid layout for a model on a GPU type and evaluate them in bulk.

A layout = (GPUs, dp, tp, pp, vpp, cp, ep, ZeRO stage, micro-batch, recompute). The grid is
built with numpy, invalid combinations are masked out (tp must divide the attention and K/V
heads and fit in a node, pp·vpp <= layers, dp·tp·pp·cp = GPUs, the global batch must split into
whole micro-batches, ep divides the experts and dp·cp), then the same core formulas as the
single estimate (core.step.step_time, core.memory.peak_allocated) run on whole arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuplan.core import memory as M
from gpuplan.core.model import ModelSpec
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.step import StepSettings, model_flops_per_token, step_time
from gpuplan.core.topology import Cluster

RECOMPUTE_MODES = ("none", "selective", "full")


@dataclass(frozen=True)
class SearchSpace:
    """What to enumerate. Batch sizes in sequences."""

    gpu_counts: tuple[int, ...]
    global_batch: int
    seq_len: int
    tp: tuple[int, ...] = (1, 2, 4, 8)
    pp: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    vpp: tuple[int, ...] = (1, 2, 4)
    cp: tuple[int, ...] = (1, 2, 4, 8)
    ep: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    zero: tuple[int, ...] = (0, 1, 2, 3)
    micro_batch: tuple[int, ...] = (1, 2, 4, 8, 16)
    recompute: tuple[str, ...] = RECOMPUTE_MODES


@dataclass(frozen=True)
class LayoutTable:
    """Evaluated layouts as parallel numpy arrays (one entry per layout)."""

    columns: dict

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def take(self, index) -> "LayoutTable":
        return LayoutTable({k: v[index] for k, v in self.columns.items()})


def _grid(space: SearchSpace, spec: ModelSpec, cluster: Cluster, recompute: str) -> dict:
    ep_values = [e for e in space.ep if spec.moe is not None and spec.moe.num_experts % e == 0] or [1]
    axes = np.meshgrid(np.array(space.gpu_counts), np.array(space.tp), np.array(space.pp), np.array(space.vpp),
                       np.array(space.cp), np.array(ep_values), np.array(space.zero), np.array(space.micro_batch),
                       indexing="ij")
    names = ("gpus", "tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch")
    g = {n: a.ravel() for n, a in zip(names, axes)}
    a = spec.attention
    kv = a.num_heads if a.is_mla else a.num_kv_heads
    per_replica = g["tp"] * g["pp"] * g["cp"]
    ok = (g["gpus"] % per_replica == 0) & (a.num_heads % g["tp"] == 0) & (kv % g["tp"] == 0)
    ok &= g["tp"] <= cluster.gpus_per_node
    ok &= g["pp"] * g["vpp"] <= spec.num_layers
    ok &= (g["vpp"] == 1) | ((g["pp"] > 1) & (spec.num_layers % np.maximum(g["pp"] * g["vpp"], 1) == 0))
    ok &= space.seq_len % g["cp"] == 0
    dp = np.where(ok, g["gpus"] // np.maximum(per_replica, 1), 0)
    ok &= dp >= 1
    ok &= ((dp * g["cp"]) % g["ep"] == 0) & (g["ep"] <= dp * g["cp"])
    ok &= (g["zero"] == 0) | (dp * g["cp"] > 1)
    ok &= space.global_batch % np.maximum(g["micro_batch"] * dp, 1) == 0
    g = {k: v[ok] for k, v in g.items()}
    g["dp"] = dp[ok]
    g["micro_batches"] = space.global_batch // (g["micro_batch"] * g["dp"])
    g["recompute"] = np.full(len(g["dp"]), RECOMPUTE_MODES.index(recompute))
    return g


MAX_CANDIDATES = 6_000_000
"""Candidate layouts (before masking) one search may enumerate: bounds its time (~3 s) and memory
(~0.5 GB of transient arrays). More GPU counts than that allows are refused, naming the limit."""


def candidate_count(spec: ModelSpec, space: SearchSpace) -> int:
    """Size of the grid ``evaluate_layouts`` would build (all recompute modes)."""
    ep = len([e for e in space.ep if spec.moe is not None and spec.moe.num_experts % e == 0] or [1])
    return (len(space.gpu_counts) * len(space.tp) * len(space.pp) * len(space.vpp) * len(space.cp) * ep
            * len(space.zero) * len(space.micro_batch) * len(space.recompute))


def evaluate_layouts(spec: ModelSpec, cluster: Cluster, space: SearchSpace, memory: M.MemorySettings,
                     step: StepSettings, overheads: M.Overheads, progress=None) -> LayoutTable:
    """Every valid layout with its step time, memory, MFU and whether it fits. ``progress`` is
    called as progress(done, total) before each chunk (one per recompute mode)."""
    from dataclasses import replace

    parts = []
    for done, mode in enumerate(space.recompute):
        if progress is not None:
            progress(done, len(space.recompute))
        g = _grid(space, spec, cluster, mode)
        if not len(g["dp"]):
            continue
        f = {k: g[k].astype(float) for k in ("dp", "tp", "pp", "vpp", "cp", "ep", "micro_batch", "micro_batches")}
        t = step_time(spec, cluster, replace(step, seq_len=space.seq_len, recompute=mode), dp=f["dp"], tp=f["tp"],
                      pp=f["pp"], vpp=f["vpp"], cp=f["cp"], ep=f["ep"], zero=g["zero"], micro_batch=f["micro_batch"],
                      micro_batches=f["micro_batches"])
        layout = ParallelLayout(dp=g["dp"], tp=g["tp"], pp=g["pp"], vpp=g["vpp"], cp=g["cp"], ep=g["ep"],
                                zero=g["zero"], micro_batch=g["micro_batch"],
                                global_batch=g["micro_batch"] * g["dp"] * g["micro_batches"])
        peak = M.peak_allocated(spec, layout, replace(memory, seq_len=space.seq_len, recompute=mode))
        fixed = overheads.fixed_bytes(layout)
        budget = cluster.gpu.memory_bytes * (1 - overheads.margin)
        g.update(step_seconds=t.total, compute_seconds=t.compute, bubble_seconds=t.bubble,
                 exposed_comm_seconds=t.exposed_comm, comm_seconds=t.comm_total * np.ones_like(t.total),
                 peak_bytes=peak, total_bytes=peak + fixed, fits=(peak + fixed) <= budget)
        parts.append(g)
    columns = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}
    if columns:
        tokens_per_step = space.global_batch * space.seq_len
        flops = model_flops_per_token(spec, space.seq_len) * tokens_per_step
        columns["mfu"] = flops / (columns["step_seconds"] * columns["gpus"] * cluster.gpu.peak(step.dtype))
        # HFU adds the recomputed forward: layers' matmuls + attention (full), attention (selective)
        from gpuplan.core.flops import training_flops_per_token

        hw_ratio = np.array([training_flops_per_token(spec, space.seq_len, "full", mode).hardware
                             / training_flops_per_token(spec, space.seq_len, "full", mode).model
                             for mode in RECOMPUTE_MODES])
        columns["hfu"] = columns["mfu"] * hw_ratio[columns["recompute"]]
        columns["tokens_per_second"] = tokens_per_step / columns["step_seconds"]
    return LayoutTable(columns)


def pareto_front(table: LayoutTable, objectives: tuple[str, ...]) -> np.ndarray:
    """Indices of layouts no other layout beats on every objective (all minimised), in
    lexicographic order of the objectives; among layouts with identical objective values the
    first is kept. Two or three objectives, vectorised: a sweep over the first objective's
    distinct values against the staircase (the 2-D front of the other two) of the points so far."""
    values = np.stack([np.asarray(table[o], dtype=float) for o in objectives], axis=1)
    if not len(values):
        return np.zeros(0, dtype=int)
    if values.shape[1] not in (2, 3):
        raise ValueError("pareto_front takes two or three objectives")
    order = np.lexsort(values.T[::-1])
    v = values[order]
    if v.shape[1] == 2:  # sorted by (o1, o2): kept iff o2 beats every earlier point's o2
        earlier = np.concatenate(([np.inf], np.minimum.accumulate(v[:-1, 1])))
        return order[v[:, 1] < earlier]
    keep = np.zeros(len(v), dtype=bool)
    stair_b = stair_c = np.zeros(0)
    starts = np.flatnonzero(np.concatenate(([True], v[1:, 0] != v[:-1, 0])))
    for start, stop in zip(starts, np.append(starts[1:], len(v))):
        b, c = v[start:stop, 1], v[start:stop, 2]  # one value of o1, sorted by (o2, o3)
        alive = c < np.concatenate(([np.inf], np.minimum.accumulate(c[:-1])))  # within the group
        if len(stair_b):  # dominated by an earlier group: the staircase point at or left of b
            at = np.searchsorted(stair_b, b, side="right") - 1
            alive &= ~((at >= 0) & (stair_c[np.maximum(at, 0)] <= c))
        keep[start:stop] = alive
        if alive.any():
            stair_b, stair_c = _staircase(np.concatenate((stair_b, b[alive])), np.concatenate((stair_c, c[alive])))
    return order[keep]


def _staircase(b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 2-D front of points (b, c): b ascending, c strictly descending."""
    order = np.lexsort((c, b))
    b, c = b[order], c[order]
    best = np.concatenate(([np.inf], np.minimum.accumulate(c[:-1])))
    keep = c < best
    return b[keep], c[keep]
