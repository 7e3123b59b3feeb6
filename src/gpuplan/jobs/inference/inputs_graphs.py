"""The per-layer host and graph timings of `infer` (--graph-layer-us, --launch-layer-us) and the CUDA-graph memory
(--cuda-graph-gib), refused where no step the answer times reads them (InferenceInputs' validator, so every door:
the CLI, plan files, the web API and the Python API).

Which step reads which (core.serving.roofline.step_time): a step that replays a CUDA graph pays graph_layer_s per
layer; an eager step pays layer_launch_s per layer, except where core.serving.first_token_path.runs_issue_bound
times it by its Python issue time instead -- every eager SGLang step, and every step of vLLM V1 (0.8+) run eagerly
(--cuda-graph-gib 0 = --enforce-eager). A proposer's forwards (a draft model, or the EAGLE / EAGLE-3 / MTP head:
core.serving.roofline.decode_step's ``s.draft``) are not scheduled steps (scheduled=False) and pay layer_launch_s
wherever they run eagerly, except where core.serving.spec_runner.runner_ops counted their launches (vLLM 0.8.x's
EAGLE / EAGLE-3: the drafts' host time is their issue there), so --speculative draft / eagle / eagle3 / mtp keep the
flag (launch_is_read)."""

from __future__ import annotations

from gpuplan.errors import InputError

GRAPHS = "vLLM >= 0.2.6, SGLang, TensorRT-LLM >= 1.0"
"""The releases that capture CUDA graphs (core.serving.kernels.graph_max_tokens_of)."""


PROPOSER_FORWARDS = ("draft", "eagle", "eagle3", "mtp")
"""Speculative methods whose proposer runs a forward of its own (core.serving.speculative.speculation gives them a
``draft`` shape: the draft model, or one target-shaped layer); n-gram looks its tokens up in the prompt, no forward."""


def launch_is_read(release, graph_max_tokens: int, method: str = "none") -> bool:
    """Whether --launch-layer-us (setup.Efficiency.layer_launch_s) moves an answer on ``release`` with
    ``graph_max_tokens`` (0: --cuda-graph-gib 0) and speculative ``method``, as core.serving.roofline prices it: a
    scheduled eager step pays it unless first_token_path.runs_issue_bound times it by its issue (step_time); a
    proposer's forwards (PROPOSER_FORWARDS, run unscheduled) pay it wherever they run eagerly, unless
    spec_runner.runner_ops counted their launches (decode_step subtracts their host time then). Under SGLang with
    graphs the proposer's forward is eager past the graphs' batch only; taken as read (the batch may be searched).
    The one rule behind the flag's refusal (check_graph_timings) and the host-time assumption's flag line
    (jobs.inference.assumptions)."""
    from gpuplan.core.serving import first_token_path as FT
    from gpuplan.core.serving import spec_runner as SR

    if not FT.runs_issue_bound(release, graph_max_tokens):
        return True
    return method in PROPOSER_FORWARDS and SR.runner_ops(release, method) is None


def check_graph_timings(inputs, graph_max_tokens: int) -> None:
    """--graph-layer-us times CUDA-graph steps, --cuda-graph-gib > 0 sizes their memory: refused where none runs (the
    first changed no number; the second took GiB from a TensorRT-LLM 0.9 KV cache, wave 16 X4). --launch-layer-us
    times the eager steps that launch layer by layer: refused where none does (wave 17: `--engine sglang
    --launch-layer-us 500` and `--cuda-graph-gib 0 --launch-layer-us 500` on vLLM 0.8+ answered byte-identically
    to the asks without it). ``graph_max_tokens``: InferenceInputs._graph_max_tokens()."""
    release = inputs.release
    launch_read = launch_is_read(release, graph_max_tokens, inputs.speculative)
    field = "graph_layer_us" if inputs.graph_layer_us is not None else "cuda_graph_gib" if inputs.cuda_graph_gib else ""
    if field == "graph_layer_us" and inputs.cuda_graph_gib == 0:
        raise InputError("graph_layer_us", inputs.graph_layer_us, "times CUDA-graph steps, and --cuda-graph-gib 0 "
                         "runs every step eagerly: drop one of the two" + (" (--launch-layer-us sets an eager step's)"
                                                                           if launch_read else ""))
    if field and graph_max_tokens <= 0:
        what = "times CUDA-graph steps" if field == "graph_layer_us" else "sizes CUDA-graph memory"
        raise InputError(field, getattr(inputs, field), f"{what}, and {release.label} captures none (every step "
                         f"eager): drop it, or give a release with graphs ({GRAPHS})")
    if inputs.launch_layer_us is not None and not launch_read and not _is_default_launch(inputs.launch_layer_us):
        how = ("runs every eager step from Python, timed by its issue time (core.serving.first_token_path), and "
               "replays CUDA graphs otherwise" if release.engine == "sglang" else "with --cuda-graph-gib 0 "
               "(--enforce-eager) runs every step from Python, timed by its issue time (core.serving.first_token_path)")
        counted = (f" (its {inputs.speculative} drafts' launches counted one by one, core.serving.spec_runner)"
                   if inputs.speculative in PROPOSER_FORWARDS else "")
        raise InputError("launch_layer_us", inputs.launch_layer_us, f"times an eager step launched layer by layer; "
                         f"{release.label} {how}{counted}: no step reads it, leave it out")


def _is_default_launch(launch_layer_us: float) -> bool:
    """--launch-layer-us restating the default, setup.Efficiency.layer_launch_s (80 us): answered where nothing reads
    it, as a stated default is (the lead's rule, review w16 R5 S3); another value there is refused."""
    import math

    from gpuplan.core.serving.setup import Efficiency

    return math.isclose(launch_layer_us * 1e-6, Efficiency().layer_launch_s, rel_tol=1e-9)
