"""The answer's per-step lines of an inference estimate: the parts of a step, its bound, the prefill's issue, the
request path, speculation and the runner's host time, and the small-kernel floor (moved out of estimate.py in wave
17, review w17 ME N6, to keep it under 420 lines). Units: seconds.
"""

from __future__ import annotations

from gpuplan.core.serving import first_token_path as FT
from gpuplan.core.serving import outside_layers as OL, prompt_tokenize as PT
from gpuplan.core.serving import request_path as RP
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import spec_runner as SR
from gpuplan.jobs.inference.resolve import Plan
from gpuplan.report.model import Line


def kernel_floor_line(plan: Plan, tp: int, pp: int, batch: int, tpot: R.StepTime) -> Line:
    """The small-kernel floor of a decode step: the layers' and, on a graphed step with a floor, the kernels outside
    the layers (outside_layers; none on an eager step or at --graph-layer-us 0: review w17 ME N1)."""
    setup = plan.setup
    tokens = batch * R.decode_positions(setup)
    floor = tpot.kernel_floor_s
    note = ""
    if floor > 0:  # kernel_floor_s is 0 on an eager step (roofline.step_time)
        # a decode step's rows of logits are its tokens (outside_layers.logits_rows)
        note = OL.floor_note(*OL.graph_step_outside(plan.spec, setup, plan.gpu, tp, pp, tokens, tokens))
    return Line("kernel_floor_per_step", "small-kernel floor per decode step (GPU time)", floor, "s",
                f"{floor * 1e3:,.2f} ms" if floor else "none (eager step, or 0 us a layer)",
                f"{plan.spec.num_layers} layers x {R.graph_layer_seconds(setup, plan.spec, plan.gpu, tp, tokens) * 1e6:.0f}"
                " us of a CUDA-graph step's small kernels (setup.Efficiency.graph_layer_s; not host time)" + note)


def request_path_lines(plan: Plan) -> tuple[Line, ...]:
    """The request path in the TTFT (core/serving/request_path.py): vLLM's tokeniser batch window (0.10 on),
    the server's tokenising of the prompt (SGLang and vLLM: prompt_tokenize) and the prefill chunks (a prompt past
    the budget)."""
    runtime, lines = plan.setup.runtime, []
    if hold := RP.server_hold_seconds(runtime, plan.prompt):
        parse = RP.endpoint_parse_seconds(runtime)
        tokenise = PT.tokenize_seconds(runtime.release, plan.prompt)
        window = hold - parse - tokenise
        what = " + ".join(part for part, seconds in (("tokeniser batch window", window), (
            f"{parse * 1e3:.0f} ms chat-template parse", parse), (
            f"tokenising the {plan.prompt:,}-token prompt", tokenise)) if seconds)
        if tokenise:  # the server's Hugging Face tokenizer call, before the engine sees the request
            source = (("SGLang's TokenizerManager tokenises the text before the scheduler sees it "
                       "(tokenizer_manager.py@v0.5.6:663)" if runtime.release.engine == "sglang" else
                       "vLLM's API server tokenises the text before the engine sees it (utils/async_utils.py@v0.23.0:"
                       "116-132; earlier releases: core/serving/prompt_tokenize.py)" + (
                           ", after its batch window (L36)" if window else ""))
                      + f", {PT.TOKENIZE_PER_TOKEN_S * 1e6:.1f} us a token timed on a 2-vCPU EPYC "
                      "(core/serving/prompt_tokenize.py)" + (
                          "; vLLM 0.11.0's chat endpoint parses the chat template again for every request "
                          "(entrypoints/chat_utils.py@v0.11.0:1575-1599)" if parse else "")
                      + "; HTTP, ZMQ hops and detokenising not costed")
        else:
            source = ("vLLM >= 0.10 AsyncMicrobatchTokenizer batch_wait_timeout_s (utils/async_utils.py@v0.23.0:36)" + (
                "; vLLM 0.11.0's chat endpoint parses the chat template again for every request "
                "(entrypoints/chat_utils.py@v0.11.0:1575-1599; core/serving/request_path.py)" if parse else "")
                + "; HTTP, ZMQ hops and detokenising not costed" + (
                ", nor the chat template's render (~0.05 ms)" if runtime.endpoint == "chat" else
                " (the completions endpoint renders no chat template; --endpoint chat)"))
        lines.append(Line("ttft_server_hold", "server hold before the engine (in TTFT)", hold, "s",
                          f"{hold * 1e3:,.1f} ms ({what})", source))
    budget = RP.split_budget(plan.setup, plan.gpu, plan.prompt)
    if budget is not None:
        steps = len(RP.prefill_chunks(plan.prompt, int(plan.setup.prefix_hit * plan.prompt), budget))
        lines.append(Line("ttft_prefill_chunks", "prefill engine steps (chunked prefill)", steps, "steps",
                          f"{steps} of <= {budget:,} tokens", (
                              "SGLang's chunked_prefill_size, its default for the GPU's memory (server_args.py@v0.5.6:"
                              "725-806; schedule_policy.py@v0.5.6:616-651 cuts the request to it, one extend forward "
                              "a chunk)" if plan.setup.runtime.release.engine == "sglang" else
                              "vLLM V1 scheduler: min(remaining, max_num_batched_tokens) a step (scheduler.py@v0.9.1:"
                              "396-406; the GPU's default or --prefill-tokens)")))
    return tuple(lines)


def bound_label(step: R.StepTime) -> str:
    """'compute-bound', 'memory-bound', 'attention-bound' or 'host-bound (eager issue)' (roofline.StepTime.bound)."""
    bound = step.bound
    return "host-bound (eager issue)" if bound == "host (eager issue)" else f"{bound}-bound"


def prefill_issue_lines(plan: Plan, ttft: R.StepTime) -> tuple[Line, ...]:
    """SGLang's eager prefill: the host time to issue its kernels, and the part of it past the GPU
    work that the first token waits for (core/serving/first_token_path.py); none elsewhere."""
    if not ttft.issue_s:
        return ()
    forward = ttft.issue_forward_s  # outside the layers (SGLang), before them: F + max(I, G)
    forwards = prefill_forwards(plan)  # a chunked prefill issues one eager forward a chunk
    kernels = (ttft.issue_s - forward) / (forwards * plan.spec.num_layers * FT.EAGER_HOST_PER_LAUNCH_S)  # a layer
    outside = (f" + {forward / forwards * 1e3:.1f} ms a forward outside the layers (23.1 ms graphed less the 6.5)"
               if forward else "")
    return (Line("ttft_host_issue", "prefill host issue time (eager forward)", ttft.issue_s, "s",
                 f"{ttft.issue_s * 1e3:,.1f} ms ({ttft.issue_exposed_s * 1e3:,.1f} ms past the GPU work)",
                 (f"{forwards} forwards (chunks) x " if forwards > 1 else "")
                 + f"{plan.spec.num_layers} layers x {kernels:.1f} launches (core/serving/layer_kernels.py) x "
                 f"{FT.EAGER_HOST_PER_LAUNCH_S * 1e6:.2f} us a launch{outside} (sglang PR 12160: DeepSeek-V3 "
                 "1-token prefill 82.6 ms eager vs 23.1 ms graphed, + 6.5 ms of its GPU work); the layers "
                 "end at max(their issue, GPU)" + (", after the forward's host work outside them" if forward else "")
                 + ": " + (
                     "SGLang runs prefill without CUDA graphs (piecewise graphs off by default)"
                     if plan.setup.runtime.release.engine == "sglang" else
                     "vLLM captures no CUDA graph under --enforce-eager (--cuda-graph-gib 0)")),)


def prefill_forwards(plan: Plan) -> int:
    """Forwards the prompt's prefill runs: its chunks where the server splits it (request_path.split_budget), else 1."""
    budget = RP.split_budget(plan.setup, plan.gpu, plan.prompt)
    return len(RP.prefill_chunks(plan.prompt, int(plan.setup.prefix_hit * plan.prompt), budget)) if budget else 1


def parts(step: R.StepTime) -> str:
    """A step's time by part, in ms: what a profiler trace of one step would show (the small-kernel
    floor is GPU time of a CUDA-graph step's small kernels, roofline.StepTime.kernel_floor_s; host is
    what the GPU waits for: eager launches, the scheduler)."""
    rows = (f" (of it SGLang's MoE per-expert rows, moe_combine, {step.moe_rows_s * 1e3:.2f} ms)"
            if round(step.moe_rows_s * 1e3, 2) > 0 else "")
    parts = (("GEMMs", step.gemm_s, ""), ("attention", step.attention_s, ""),
             ("elementwise", step.other_s, rows), ("small-kernel floor", step.kernel_floor_s, ""),
             ("host", step.host_s, ""), ("all-reduce", step.comm_s, ""))
    return ", ".join(f"{name} {seconds * 1e3:.2f} ms{note}" for name, seconds, note in parts if seconds > 0)


def speculation_lines(plan: Plan, tpot: R.StepTime) -> tuple[Line, ...]:
    spec = plan.setup.speculation
    if spec is None:
        return ()
    verify = tpot.verify_s
    return (Line("spec_accepted_length", f"tokens per verify step ({spec.method}, k = {spec.tokens}, "
                 f"acceptance {spec.acceptance:g})", spec.mean_accepted_length, "tokens",
                 f"{spec.mean_accepted_length:.2f}", f"(1 - a^(k+1)) / (1 - a), Leviathan et al. 2023 Eq. 1; "
                 f"acceptance: {spec.source}"),
            Line("spec_step", "verify step + draft steps", verify + tpot.draft_s, "s",
                 f"{verify * 1e3:,.2f} ms + {tpot.draft_s * 1e3:,.2f} ms",
                 "TPOT = (verify over k + 1 positions + k draft steps) / tokens per step")) + runner_host_lines(plan, tpot)


def runner_host_lines(plan: Plan, tpot: R.StepTime) -> tuple[Line, ...]:
    """The speculative runner's host time, where its launches were counted (vLLM 0.8.x's eager EAGLE
    drafters, core/serving/spec_runner.py): the serial launches inside the verify step and the draft
    forwards' issue, each at the Python launch time (--launch-layer-us does not change them)."""
    spec = plan.setup.speculation
    host = SR.runner_host(plan.setup.runtime.release, spec.method, spec.tokens, FT.EAGER_HOST_PER_LAUNCH_S,
                          tpot.draft_s)
    if host is None:
        return ()
    # the value is the host time the step adds: the draft issue only where it is the draft steps' time
    added = host.serial_s + (host.draft_issue_s if host.host_bound else 0.0)
    bound = "host-bound: the draft steps' time" if host.host_bound else "below the drafts' GPU work, hidden"
    text = (f"{host.serial_s * 1e3:,.2f} ms + {host.draft_issue_s * 1e3:,.2f} ms" if host.host_bound else
            f"{host.serial_s * 1e3:,.2f} ms (draft issue {host.draft_issue_s * 1e3:,.2f} ms hidden)")
    return (Line("spec_runner_host", "speculative runner host time (in the verify step; draft issue)",
                 added, "s", text,
                 f"{host.serial_launches} serial launches in the verify step + {host.draft_launches} draft launches "
                 f"({bound}), {host.launch_s * 1e6:.2f} us a Python launch (first_token_path; counts from "
                 f"{plan.setup.runtime.release.label}'s code, core/serving/spec_runner.py; --launch-layer-us does "
                 "not change it)"),)
