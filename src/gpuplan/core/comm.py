"""Collective communication: volumes and alpha-beta times on a two-level topology.

Ring algorithms (Thakur et al. 2005; NCCL's busbw convention, nccl-tests PERFORMANCE.md):
  all-reduce      moves 2(n-1)/n x S bytes per GPU in 2(n-1) steps
  reduce-scatter  moves  (n-1)/n x S bytes per GPU in  (n-1) steps (S = the full buffer)
  all-gather      moves  (n-1)/n x S bytes per GPU in  (n-1) steps
  all-to-all      moves  (n-1)/n x S bytes per GPU
time = steps x latency + bytes moved / achievable bandwidth per GPU per direction.
Functions accept Python numbers or numpy arrays (the planner evaluates layouts in bulk).
"""

from __future__ import annotations


def _ring_fraction(n):
    """(n-1)/n, 0 for a group of one; works elementwise on arrays."""
    return (n - 1) / n


def all_reduce_time(size_bytes, n, bandwidth, latency=0.0):
    """Ring all-reduce of a ``size_bytes`` buffer over ``n`` GPUs (0 when n == 1)."""
    return 2 * _ring_fraction(n) * size_bytes / bandwidth + 2 * (n - 1) * latency


def reduce_scatter_time(size_bytes, n, bandwidth, latency=0.0):
    """Ring reduce-scatter of a ``size_bytes`` buffer (each GPU keeps 1/n)."""
    return _ring_fraction(n) * size_bytes / bandwidth + (n - 1) * latency


def all_gather_time(size_bytes, n, bandwidth, latency=0.0):
    """Ring all-gather producing a ``size_bytes`` buffer on every GPU."""
    return _ring_fraction(n) * size_bytes / bandwidth + (n - 1) * latency


def all_to_all_time(size_bytes, n, bandwidth, latency=0.0):
    """All-to-all where each GPU sends ``size_bytes`` in total, (n-1)/n of it to peers."""
    return _ring_fraction(n) * size_bytes / bandwidth + (n - 1) * latency


def p2p_time(size_bytes, bandwidth, latency=0.0):
    """One point-to-point send (pipeline stage boundary)."""
    return size_bytes / bandwidth + latency


def exposed(comm_time, window, overlap):
    """Communication left on the critical path: at least ``(1 - overlap)`` of it (the part no
    bucketing/prefetch hides, e.g. the last gradient bucket), and all that does not fit in the
    compute ``window`` it overlaps with."""
    hidden_cap = overlap * comm_time
    return comm_time - _minimum(hidden_cap, window)


def _minimum(a, b):
    try:
        return min(a, b)
    except (ValueError, TypeError):  # numpy arrays
        return a - (a - b) * (a > b)
