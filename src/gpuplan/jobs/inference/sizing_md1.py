"""The sizing's one note on its queueing model and its line (docs/inference.md §5b): where the chosen configuration's
rate is held down by the TTFT p99 target at a low prefill share, what equal-length prompts (M/D/1, the inputs as
stated) would need on the same (GPU type, TP): its rate search run once more with M/D/1's tail
(core/serving/queue_tail.py) swapped in, nothing else searched. The answer keeps M/M/1. Units: requests/s, GPUs,
shares of GPU time."""

from __future__ import annotations

import math

from gpuplan.core.serving import request_path as RP
from gpuplan.core.serving.load import MD1, LoadTarget, max_rate, rate_ceiling, replicas_for
from gpuplan.jobs.inference.sizing_text import placement, rate_text
from gpuplan.report.model import Line

LOW_SHARE = 0.2
"""The note is said below this prefill share of a replica. Where M/M/1's tail allows a share rho_M at a target wait
w = ln(100 rho_M) / (1 - rho_M) prefills, M/D/1 allows rho_D with its p99 wait = w (queue_tail.md1_wait_p99), and a
TTFT-bound sizing needs rho_D / rho_M times fewer replicas: 5.1 at rho_M 0.027 (w 1.02), 3.5 at 0.13, 2.65 at 0.205,
2.0 at 0.31, 1.34 at 0.59, 1.14 at 0.78. Below 0.2 the two readings differ by more than 2.5x, more than the
roofline's efficiency ranges move the answer; above it the gap falls toward the size of those ranges."""

BOUND = 1e-3
"""A rate within this share of the TTFT's own ceiling (load.rate_ceiling) is bound by the TTFT: max_rate bisects to
1e-4 of the rate, so a TTFT-bound search ends within 1e-4 of it, one bound by TPOT, KV or max_num_seqs below."""

KEEPS_MM1 = ("the answer keeps M/M/1's tail, the safe side: engines add step boundaries, decode steps between prefill "
             "chunks and prompts of varying length")

MD1_KEY = "sized_config_md1"
"""The line's key: its value is {gpu, tp, replicas, rate_per_replica (requests/s), prefill_share (of GPU time)}, the
JSON's results.sized_config_md1; in the sizing section after the answer's lines, not among the headline's."""


def md1_told(plan, target: LoadTarget, best) -> tuple[tuple[Line, ...], tuple[str, ...]]:
    """The line and the note (or neither) on ``best``, the configuration the sizing answers (sizing.chosen_config):
    said where its TTFT p99 binds its rate (within BOUND of load.rate_ceiling) at a prefill share below LOW_SHARE;
    they give the replicas, GPUs and prefill share of the same (GPU type, TP) with M/D/1's tail."""
    if best is None or best.steps is None or not math.isfinite(target.ttft_p99):
        return (), ()
    prefill, decode, cap = best.steps
    hold, share = RP.server_hold_seconds(plan.setup.runtime, plan.prompt), best.replica.prefill_utilisation
    if share >= LOW_SHARE or best.replica.rate < rate_ceiling(target.ttft_p99, prefill, hold) * (1 - BOUND):
        return (), ()
    equal = max_rate(target, prefill, decode, plan.output, cap, hold, queue=MD1)
    if equal is None:
        return (), ()
    replicas = replicas_for(target, equal)
    placed = placement(replicas, best.tp, best.gpu, replicas * best.tp)
    value = {"gpu": best.gpu.id, "tp": best.tp, "replicas": replicas, "rate_per_replica": equal.rate,
             "prefill_share": equal.prefill_utilisation}
    line = Line(MD1_KEY, "with every prompt the same length (M/D/1)", value,
                text=f"{placed}, {rate_text(equal.rate)} requests/s each, prefill {equal.prefill_utilisation:.1%} of "
                     "GPU time",
                formula="the same rate search with M/D/1's queueing wait (Erlang 1909, Crommelin 1932) in place of "
                        "M/M/1's; the answer keeps M/M/1 (docs/inference.md §5b)")
    return (line,), (f"the TTFT p99 target holds each replica to prefill {share:.1%} of its GPU time (M/M/1 queueing "
                     f"wait); with every prompt the same length, as asked (M/D/1: Erlang 1909, Crommelin 1932), "
                     f"{placed} would do, {rate_text(equal.rate)} requests/s each at "
                     f"{equal.prefill_utilisation:.1%}; {KEEPS_MM1} (docs/inference.md §5b)",)
