"""One serving replica under a steady request load: how many requests per second it sustains
while meeting a p99 time-to-first-token and a time-per-output-token target, and what it then
holds in flight.

The replica is one engine instance (tp x pp GPUs) doing continuous batching with chunked
prefill (vLLM's default scheduler, SGLang's too): every step decodes one token for each running
sequence and spends the rest of its budget on waiting prompts. So

  prefill utilisation  rho   = rate x t_prefill                  (share of GPU time on prompts)
  time per output token TPOT = t_decode(B) / (1 - rho)            (decode gets the rest)
  requests in flight    B    = rate x (TTFT_mean + output x TPOT) (Little's law)
  TTFT                       = t_prefill + queueing wait, the wait from an M/M/1 queue of
                               prompts (Kleinrock 1975, Queueing Systems I, Ch. 3, M/M/1:
                               P(W > t) = rho exp(-(1 - rho) t / t_prefill)), so
                               W_mean = rho t_prefill / (1 - rho),
                               W_p99  = t_prefill ln(100 rho) / (1 - rho)   (0 when rho <= 0.01)

Exponential service overstates the spread of same-length prompts, so the p99 is on the safe
side. ``queue="M/D/1"`` swaps in the exact tail of equal service times (core/serving/queue_tail.py, mean wait
Pollaczek-Khinchine's rho t_prefill / (2 (1 - rho))): only the sizing's note reads it (jobs/inference/sizing_md1.py).
t_prefill and t_decode come from core/serving/roofline.py (roofline with efficiency factors).
Units: seconds, requests per second, sequences.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from gpuplan.core.serving.queue_tail import md1_wait_p99

P99_LN = math.log(100.0)


@dataclass(frozen=True)
class LoadTarget:
    """What the service must meet: p99 TTFT and TPOT (seconds), and the aggregate request rate."""

    ttft_p99: float
    tpot: float
    requests_per_s: float


@dataclass(frozen=True)
class ReplicaLoad:
    """One replica at ``rate`` requests/s."""

    rate: float
    prefill_utilisation: float
    ttft_mean: float
    ttft_p99: float
    tpot: float
    in_flight: float

    def meets(self, target: LoadTarget) -> bool:
        return within(self.ttft_p99, target.ttft_p99) and within(self.tpot, target.tpot)


def within(seconds: float, limit: float) -> bool:
    """``seconds`` meets ``limit`` up to a relative 1e-9 (floating-point noise of the fixed point)."""
    return seconds <= limit * (1 + 1e-9)


MM1, MD1 = "M/M/1", "M/D/1"
"""The queues a prompt's wait is read from: M/M/1 (the answer's, the safe side) and M/D/1 (equal prompts, the note)."""


def queue_wait(prefill_s: float, rho: float, queue: str = MM1) -> tuple[float, float]:
    """(mean, p99) wait of a prompt before its prefill, M/M/1 (or ``queue`` M/D/1) at utilisation ``rho``."""
    if rho <= 0:
        return 0.0, 0.0
    if queue == MD1:  # Pollaczek-Khinchine mean lambda E[S^2] / (2 (1 - rho)), S = D (Kleinrock 1975, ch. 5)
        return rho * prefill_s / (2 * (1 - rho)), md1_wait_p99(prefill_s, rho)
    mean = rho * prefill_s / (1 - rho)
    p99 = prefill_s * math.log(100 * rho) / (1 - rho) if rho > 0.01 else 0.0
    return mean, p99


def first_token_seconds(prefill_s: float, rho: float, path_s: float = 0.0,
                        transfer_s: float = 0.0, queue: str = MM1) -> tuple[float, float]:
    """(mean, p99) TTFT of a request, seconds: the server's hold before the engine sees it (``path_s``,
    request_path.api_server_seconds: vLLM's tokeniser batch window), the prefill, the M/M/1 wait at prefill
    utilisation ``rho`` (queue_wait) and, for a disaggregated prefill instance, the KV transfer to the
    decode instance (``transfer_s``). The one rule a colocated replica (replica_at) and a prefill pool
    (prefill_pool_rate, jobs/inference/sizing's pool TTFT) read."""
    wait_mean, wait_p99 = queue_wait(prefill_s, rho, queue)
    fixed = path_s + prefill_s + transfer_s
    return fixed + wait_mean, fixed + wait_p99


def replica_at(rate: float, prefill_s: float, decode_s: Callable[[int], float], output: int,
               max_in_flight: float = math.inf, path_s: float = 0.0, queue: str = MM1) -> ReplicaLoad | None:
    """The steady state of one replica at ``rate`` requests/s (None when prompts alone saturate
    it, or once the sequences in flight pass ``max_in_flight``: the fixed point only grows from
    there, as a decode step never gets faster with more sequences). ``decode_s(batch)``: seconds
    of one decode step at that many sequences. ``path_s``: seconds the server holds a request before
    the engine sees it (request_path.api_server_seconds): in its TTFT, not the GPU's busy time."""
    rho = rate * prefill_s
    if rho >= 1:
        return None
    ttft_mean, ttft_p99 = first_token_seconds(prefill_s, rho, path_s, queue=queue)
    in_flight = rate * (ttft_mean + output * decode_s(1) / (1 - rho))
    for _ in range(50):  # fixed point: more sequences in flight, slower steps, more in flight
        tpot = decode_s(max(1, math.ceil(in_flight))) / (1 - rho)
        new = rate * (ttft_mean + output * tpot)
        if new > max_in_flight:
            return None
        if abs(new - in_flight) < 1e-6 * max(1.0, new):
            break
        in_flight = new
    tpot = decode_s(max(1, math.ceil(in_flight))) / (1 - rho)
    return ReplicaLoad(rate, rho, ttft_mean, ttft_p99, tpot, in_flight)


def max_rate(target: LoadTarget, prefill_s: float, decode_s: Callable[[int], float], output: int,
             max_sequences: int, path_s: float = 0.0,
             useless: Callable[[float], bool] | None = None, queue: str = MM1) -> ReplicaLoad | None:
    """The highest rate one replica sustains within the target and its KV capacity
    (``max_sequences`` in flight); None when even a trickle misses the target. ``useless(hi)``: True where the caller
    has no use for any rate below ``hi`` (it must hold for every lower rate when it holds at hi): None as soon as it
    holds at the search's upper end, above every rate the search could still return (its lower end only rises, below
    the upper end), so no more steps are timed (jobs/inference/sizing.size_for_target: a TP that cannot take fewer
    GPUs than a smaller one kept). ``queue``: the prompts' queue (queue_wait), M/M/1 but for the sizing's note."""
    def ok(rate: float) -> ReplicaLoad | None:
        # the TTFT p99 reads no decode step (replica_at's, as ReplicaLoad.meets compares it): a rate it rules out
        # times none (508 of the README sizing's 2,089 probes; docs/performance.md, 'Serving sizing')
        rho = rate * prefill_s
        if rho < 1 and not within(first_token_seconds(prefill_s, rho, path_s, queue=queue)[1], target.ttft_p99):
            return None
        load = replica_at(rate, prefill_s, decode_s, output, max_sequences, path_s, queue)
        return load if load and load.meets(target) and load.in_flight <= max_sequences else None

    lo, hi = 1e-6, 1.0 / prefill_s
    # an infinite prefill makes hi 0, where useless (replicas at that rate) would divide by it: the search answers
    # as without ``useless`` there (review R1, s23: a ZeroDivisionError through the Python API's size_for_target)
    if (useless is not None and hi > 0 and useless(hi)) or (best := ok(1e-6)) is None:
        return None
    while hi - lo > 1e-4 * lo:  # feasibility is monotone in the rate; 0.01% is plenty
        if useless is not None and useless(hi):
            return None
        mid = (lo + hi) / 2
        if (found := ok(mid)) is not None:
            lo, best = mid, found  # kept: ok(lo) again re-ran replica_at's fixed point (final read, s24)
        else:
            hi = mid
    return best


def replicas_for(target: LoadTarget, per_replica: ReplicaLoad) -> int:
    """Replicas needed for the aggregate rate (each at most ``per_replica.rate``)."""
    return max(1, math.ceil(target.requests_per_s / per_replica.rate - 1e-9))


CLEAR = (1 + 1e-9) * (1 + 1e-6)
"""rate_ceiling's margin over ``within``'s tolerance: a p99 past target x CLEAR is past it at every higher rate although
each float step rounds: fl(rate x prefill) is monotone in the rate, 1 - rho is exact from rho = 0.5 (Sterbenz) and
the p99 as computed is within ~1e-15 relative of its exact value at that rho."""


def rate_ceiling(ttft_p99: float, prefill_s: float, path_s: float = 0.0) -> float:
    """A rate (requests/s) above every rate max_rate can return: max_rate keeps a rate only where the prefill
    utilisation rho = rate x prefill_s is below 1 and the TTFT p99 (first_token_seconds) is within ``ttft_p99``, and
    that p99 never falls as the rate grows (M/M/1's ln(100 rho) / (1 - rho), 0 up to rho = 0.01). Found by bisection,
    no decode step read: the lowest rate seen where rho >= 1 or the p99 is past ``ttft_p99`` x CLEAR."""
    def past(rate: float) -> bool:
        rho = rate * prefill_s
        return rho >= 1 or first_token_seconds(prefill_s, rho, path_s)[1] > ttft_p99 * CLEAR

    lo, hi = 0.0, 2.0 / prefill_s  # rho ~2 at hi: past
    for _ in range(64):
        mid = (lo + hi) / 2
        if past(mid):
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-9 * hi:
            break
    return hi


def fewest_replicas(target: LoadTarget, prefill_s: float, path_s: float = 0.0) -> int:
    """No more than replicas_for of any replica max_rate returns (its rate is below rate_ceiling, and fl(a / b) and
    ceil only grow as b falls): the sizing skips a (GPU type, TP) that cannot take fewer GPUs than one it kept."""
    if not 0 < prefill_s < math.inf:
        return 1
    need = target.requests_per_s / rate_ceiling(target.ttft_p99, prefill_s, path_s) - 1e-9
    return max(1, math.ceil(need)) if need < 1e18 else 10**18


# Disaggregated serving (DistServe, Zhong et al. OSDI 2024; Splitwise, Patel et al. ISCA 2024):
# prompts run on prefill-only instances, which send each prompt's KV cache to decode-only
# instances. Prefill then queues alone (TTFT = prefill + M/M/1 wait + KV transfer) and decode
# steps are never interrupted by prompts (TPOT = t_decode(B), no 1 / (1 - rho) stretch).


def prefill_pool_rate(ttft_p99: float, prefill_s: float, transfer_s: float, path_s: float = 0.0) -> float | None:
    """The highest rate (requests/s) one prefill-only instance takes with its p99 TTFT (first_token_seconds:
    the server's hold ``path_s`` + prefill + queueing wait p99 + KV transfer) within ``ttft_p99``; None when
    an idle one misses it."""
    def p99(rate: float) -> float:
        return first_token_seconds(prefill_s, rate * prefill_s, path_s, transfer_s)[1]

    if p99(0.0) > ttft_p99 * (1 + 1e-9):
        return None
    lo, hi = 0.0, 1.0 / prefill_s
    while hi - lo > 1e-4 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if p99(mid) <= ttft_p99 else (lo, mid)
    return lo if lo > 0 else None


def decode_pool_rate(tpot: float, decode_s: Callable[[int], float], output: int,
                     max_sequences: int) -> tuple[float, float, float] | None:
    """(rate, sequences in flight, TPOT) of one decode-only instance at the highest rate whose
    step at the batch in flight (Little's law: B = rate x output x TPOT) meets ``tpot`` within
    its KV capacity; None when even batch 1 misses it."""
    if decode_s(1) > tpot * (1 + 1e-9) or max_sequences < 1:
        return None
    # the batch is what limits: the largest B whose step meets the target, then rate = B / (output x step)
    lo, hi = 1, max_sequences
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if decode_s(mid) <= tpot * (1 + 1e-9) else (lo, mid - 1)
    step = decode_s(lo)
    return lo / (output * step), float(lo), step
