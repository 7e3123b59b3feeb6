"""How the sizing's lines write a configuration and a TTFT (jobs/inference/sizing.py): placements, milliseconds
and the terms a p99 TTFT adds. Units: seconds in, text out."""

from __future__ import annotations

from gpuplan.core.hardware import Accelerator
from gpuplan.core.serving.load import queue_wait
from gpuplan.core.units import plural

POOL_SEARCH = "every catalog GPU type and TP in {1, 2, 4, 8} per pool, one node per instance"
"""How the disaggregated pools are searched (the formula of their lines)."""


def placement(count: int, tp: int, gpu: Accelerator, gpus: int) -> str:
    """'2 x (tp 4 on NVIDIA H100 80GB SXM5) = 8 GPUs': replicas or instances of one TP group."""
    return f"{count} x (tp {tp} on {gpu.name}) = {plural(gpus, 'GPU')}"


def ms_text(seconds: float) -> str:
    return f"{seconds * 1e3:,.0f} ms"


def ttft_terms(hold_s: float, prefill_s: float, rho: float, transfer_s: float = 0.0) -> str:
    """Every term a p99 TTFT adds (load.first_token_seconds), each in ms: 'server hold 2.0 ms + prefill 45.3 ms
    + M/M/1 queueing wait p99 111.3 ms' (+ the KV transfer where there is one); the terms sum to the number."""
    terms = [("server hold", hold_s), ("prefill", prefill_s), ("M/M/1 queueing wait p99", queue_wait(prefill_s, rho)[1])]
    if transfer_s:
        terms.append(("KV transfer", transfer_s))
    return " + ".join(f"{name} {seconds * 1e3:,.1f} ms" for name, seconds in terms)
