"""The waiting-time tail of an M/D/1 queue: Poisson arrivals, every job the same service time D (every prompt the
same length, as a sizing's inputs state it). The sizing itself keeps M/M/1's tail (core/serving/load.queue_wait, the
safe side); this one is what its note compares against (jobs/inference/sizing_md1.py).

Exact distribution (Erlang 1909, 'The theory of probabilities and telephone conversations', Nyt Tidsskrift for
Matematik B 20; Crommelin 1932, P.O. Electr. Engr. J. 25; Franx 2001, 'A simple solution for the M/D/c waiting time
distribution', Oper. Res. Lett. 29(5), its c = 1 case), at load rho = lambda D, for t >= 0:

  P(W <= t) = (1 - rho) sum_{k=0}^{floor(t/D)} (-x_k)^k / k! e^{x_k},   x_k = lambda (t - k D) >= 0

so P(W > 0) = rho (an arrival waits iff it finds the server busy, PASTA) and, for 0 <= t < D, P(W > t) = 1 - (1 - rho)
e^{rho t / D}. The sum alternates and its terms grow like e^{lambda t}: it is summed exactly (math.fsum) while the sum
of its terms' magnitudes stays below STABLE_MAGNITUDE, and past that the Cramer-Lundberg asymptote of an M/G/1 wait
with a light-tailed service time (Tijms, A First Course in Stochastic Models, Wiley 2003, the M/G/1 queue's waiting-time
tail) is used, which the exact sum meets to within 1e-3 (relative) from t = 3 D and 2e-5 from t = 8 D at rho >= 0.3 (the further roots of the
characteristic equation decay far faster than theta; tests/test_queue_tail_s24.py):

  P(W > t) ~ C e^{-theta t},  rho (e^{theta D} - 1) = theta D,  C = (1 - rho) / (rho e^{theta D} - 1)

Units: seconds (D, t), dimensionless rho and probabilities.
"""

from __future__ import annotations

import math

STABLE_MAGNITUDE = 1e6
"""The exact sum is used while sum |term| < this: math.fsum adds exactly, each term carries a relative error ~1e-15
(exp of an argument up to ~lambda t), so P(W <= t) is then within ~1e-9 absolute, 1e-7 of a 1% tail. Past it the
asymptote holds to far better (tests/test_queue_tail_s24.py compares both where both are computed)."""


def _exact(t_over_d: float, rho: float) -> tuple[float, float]:
    """(P(W > t), sum of the terms' magnitudes) by the exact alternating sum; t in units of D."""
    terms = []
    for k in range(int(math.floor(t_over_d)) + 1):
        x = rho * (t_over_d - k)  # lambda (t - k D)
        if k == 0:
            log_mag = x
        elif x <= 0:
            continue  # t = k D exactly: x^k = 0
        else:
            log_mag = k * math.log(x) - math.lgamma(k + 1) + x
        if log_mag > 700:  # e^700 ~ 1e304: far past STABLE_MAGNITUDE, and exp would overflow
            return math.nan, math.inf
        terms.append((-1.0) ** k * math.exp(log_mag))
    below = (1 - rho) * math.fsum(terms)
    return 1.0 - below, (1 - rho) * sum(abs(term) for term in terms)


def decay_root(rho: float) -> float:
    """theta D, the positive root u of rho (e^u - 1) = u (0 < rho < 1), by bisection: f(u) = rho (e^u - 1) - u is
    negative just above 0 (f'(0) = rho - 1 < 0) and convex, so it has one positive root."""
    lo, hi = 0.0, 1.0
    while rho * math.expm1(hi) - hi <= 0:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if rho * math.expm1(mid) - mid <= 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    return (lo + hi) / 2


def _asymptote_terms(rho: float) -> tuple[float, float]:
    """(theta D, C) of the Cramer-Lundberg asymptote C e^{-theta t} (module docstring)."""
    u = decay_root(rho)
    return u, (1 - rho) / (rho * math.exp(u) - 1)


def asymptote(t_over_d: float, rho: float) -> float:
    """The Cramer-Lundberg approximation C e^{-theta t} of P(W > t), t in units of D."""
    u, c = _asymptote_terms(rho)
    return c * math.exp(-u * t_over_d)


def md1_wait_tail(t: float, service_s: float, rho: float) -> float:
    """P(W > t) of an M/D/1 queue with service time ``service_s`` (seconds) at load ``rho`` (0 <= rho < 1), t in
    seconds: the exact sum where it is stable, the asymptote past it (module docstring)."""
    if rho <= 0:
        return 0.0
    if t < 0:
        return 1.0
    if service_s <= 0:
        return 0.0
    tail, magnitude = _exact(t / service_s, rho) if t / service_s < 1e4 else (0.0, math.inf)
    if magnitude < STABLE_MAGNITUDE:
        return min(1.0, max(0.0, tail))
    return asymptote(t / service_s, rho)


def md1_wait_p99(service_s: float, rho: float, quantile: float = 0.99) -> float:
    """The ``quantile`` of an M/D/1 wait, seconds: 0 where rho <= 1 - quantile (P(W > 0) = rho); where the exact sum
    is not stable at the asymptote's quantile, that quantile (ln(C / (1 - quantile)) / theta); else the t with
    P(W > t) = 1 - quantile by bisection on the exact sum (the tail falls in t), within 1e-12 of D."""
    beyond = 1 - quantile
    if rho <= beyond:
        return 0.0
    if rho >= 1:
        return math.inf
    u, c = _asymptote_terms(rho)
    far = math.log(c / beyond) / u  # in units of D
    if far >= 1e4 or _exact(far, rho)[1] >= STABLE_MAGNITUDE:
        return far * service_s
    lo, hi = 0.0, 1.0
    while md1_wait_tail(hi * service_s, service_s, rho) > beyond:
        lo, hi = hi, hi * 2
    for _ in range(100):
        mid = (lo + hi) / 2
        if md1_wait_tail(mid * service_s, service_s, rho) > beyond:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
    return hi * service_s
