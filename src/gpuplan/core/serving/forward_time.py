"""One forward step's time by part (StepTime), the value core.serving.roofline computes and
core.serving.request_path sums over a request's chunks; a module of its own so both can name it.

Units: seconds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StepTime:
    """One forward step on one GPU, seconds: the weight GEMMs (streaming their weights or bound by
    their FLOPs), attention (the decode KV read or the prefill flash attention), elementwise
    traffic, a graph step's small-kernel floor, host time, and the TP all-reduces; kernels run one
    after another."""

    memory_s: float
    """GEMMs streaming their weights from HBM."""
    compute_s: float
    """GEMMs bound by their FLOPs."""
    comm_s: float
    draft_s: float = 0.0
    """Speculative decoding: the proposer's k draft steps before this (verify) step."""
    tokens_per_step: float = 1.0
    """Output tokens the step yields per sequence (speculative decoding: the mean accepted length)."""
    attention_s: float = 0.0
    other_s: float = 0.0
    """Elementwise kernels (norms, RoPE, activations), SGLang's MoE per-expert rows included."""
    moe_rows_s: float = 0.0
    """Of other_s: SGLang's MoE kernel writing and summing its per-expert output rows (moe_combine), named
    apart in the answers' by-part lines."""
    host_s: float = 0.0
    """Host time the GPU waits for: kernel launches of an eager step, the scheduler between steps."""
    kernel_floor_s: float = 0.0
    """GPU time of a CUDA-graph step's small kernels beyond their roofline (setup.Efficiency.
    graph_layer_s a layer: norms, RoPE, cache write, short attention, activation)."""
    issue_s: float = 0.0
    """An eager forward launched from Python (SGLang's eager steps, vLLM V1 --enforce-eager): host seconds
    to issue its kernels (first_token_path), of which host_s holds the part past the GPU work; 0 elsewhere."""
    issue_forward_s: float = 0.0
    """The part of issue_s outside the layers (SGLang's prefill: first_token_path.eager_forward_host_seconds),
    run before the layers are queued, so never hidden by the GPU work; 0 elsewhere."""
    issue_exposed_s: float = 0.0
    """The part of issue_s past the GPU work (first_token_path.eager_exposed_seconds: issue_forward_s + the
    layers' issue time past their GPU work), held in host_s beside the scheduler's time (kernels.
    host_step_seconds) and any server hold; 0 where there is no per-forward part and the GPU hides the issue."""
    exposed: float = 0.0
    """Share of the shorter GEMM bound (streaming or math) the kernels do not hide behind the longer
    one (setup.Efficiency.ridge_exposed: GEMMs of few tokens)."""

    @property
    def gemm_s(self) -> float:
        """The weight GEMMs: the longer of streaming and math, plus the exposed share of the shorter."""
        return max(self.memory_s, self.compute_s) + self.exposed * min(self.memory_s, self.compute_s)

    @property
    def verify_s(self) -> float:
        """The step itself (a speculative verify step), without the draft steps."""
        return self.gemm_s + self.attention_s + self.other_s + self.kernel_floor_s + self.host_s + self.comm_s

    @property
    def total(self) -> float:
        """Seconds per output token."""
        return (self.verify_s + self.draft_s) / self.tokens_per_step

    @property
    def bound(self) -> str:
        """What bounds the step: 'host (eager issue)' where an eager forward's layer issue time exceeds their GPU
        work (issue_exposed_s above its per-forward part), else 'attention', 'memory' or 'compute' (the larger
        GPU term)."""
        if self.issue_exposed_s > self.issue_forward_s:
            return "host (eager issue)"
        if self.attention_s > self.gemm_s:
            return "attention"
        return "memory" if self.memory_s >= self.compute_s else "compute"
