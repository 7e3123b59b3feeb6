"""The assumptions list of a serving report: every default the answer depends on, where it
comes from, and the flag that changes it."""

from __future__ import annotations

from gpuplan.core.serving import engines as E
from gpuplan.core.serving import first_token_path as FT
from gpuplan.core.serving import graph_floor as GF
from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving import layer_kernels as LK
from gpuplan.core.serving import marlin as MG
from gpuplan.core.serving import profile as P
from gpuplan.core.serving import prompt_tokenize as PT
from gpuplan.core.serving import request_path as RP
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import spec_runner as SR
from gpuplan.core.serving.releases import allreduce_dtype, reads_019_allreduce
from gpuplan.core.units import format_usd
from gpuplan.jobs.inference.inputs_graphs import launch_is_read
from gpuplan.jobs.inference.resolve import Plan
from gpuplan.jobs.inference.schema import InferenceInputs
from gpuplan.jobs.inference.serving import Serving, price_for
from gpuplan.report.model import Assumption


def assumptions(plan: Plan, inputs: InferenceInputs, serving: Serving) -> tuple[Assumption, ...]:
    e, fmt, u = plan.setup.efficiency, plan.setup.fmt, inputs.given
    price, source = price_for(plan.gpu.id, inputs.price)
    return (
        Assumption("quantization", "weight format", f"{fmt.name} ({fmt.bits_per_weight:.4g} bits/weight)",
                   fmt.source, "--quantization / --group-size", "quantization" in u),
        Assumption("kv_dtype", "KV-cache dtype", plan.kv_dtype, "vLLM --kv-cache-dtype auto = model dtype",
                   "--kv-dtype", "kv_dtype" in u),
        *_engine_assumptions(plan, inputs, serving),
        Assumption("block_size", "KV block size", inputs.block_size, "vLLM default 16 tokens (PagedAttention)",
                   "--block-size", "block_size" in u),
        *_speed_assumptions(plan, u, serving.tp, serving.pp, inputs.batch * R.decode_positions(plan.setup)),
        Assumption("allreduce_latency", "all-reduce latency", f"{e.latency(KR.collective_fabric(plan.gpu, plan.setup.runtime.p2p).scale_up_bandwidth) * 1e6:.0f} us",
                   "vLLM custom all-reduce on H100 (sgl-project/sglang#2904); x3 without NVLink",
                   "--allreduce-latency-us", "allreduce_latency_us" in u),
        Assumption("context", "context per sequence", plan.context, "default min(4096, the model's maximum; under "
                   "vLLM, the max_model_len it derives)",
                   "--context", "context" in u),
        Assumption("output_tokens", "output tokens per sequence", plan.output, "default min(256, context / 2); "
                   "TPOT is taken at prompt + output / 2 cached tokens", "--output-tokens", "output_tokens" in u),
        Assumption("price", "price per GPU-hour", "n/a" if price is None else format_usd(price, 2), source,
                   "--price", "price" in u),
    ) + _lora_assumptions(plan, u)


FITTED = "fitted on TensorRT-LLM v0.6.1's static-batch table (21 rows; docs/inference.md)"


def _marlin_clause(plan: Plan) -> str:
    """Where vLLM runs the int4 linears through Marlin (core/serving/marlin.py), the GEMM fraction the answer used
    in place of the 16-bit one, scaled from it (so a --compute-efficiency moves it too); else ''."""
    setup, moe = plan.setup, plan.spec.moe is not None
    fraction = [MG.gemm_fraction(setup, plan.gpu, c, moe) for c in setup.efficiency.compute]
    if fraction == list(setup.efficiency.compute):
        return ""
    arch = MG.marlin_arch(plan.gpu).capitalize()  # the row marlin_ratio reads: Ada or Ampere
    what = "FP8 weight-only" if setup.fmt.name.startswith(MG.FP8_MARLIN_FORMAT) else "vLLM int4"
    return (f"; {what} on sm8x runs Marlin: {fraction[0]:.2f} ({fraction[1]:.2f}-{fraction[2]:.2f}) = this x "
            f"{MG.marlin_ratio(plan.gpu):.3g} ({arch}; core/serving/marlin.py)")


def _speed_assumptions(plan: Plan, u, tp: int, pp: int = 1, tokens: float = 1.0) -> tuple[Assumption, ...]:
    """The kernel fractions of the roofline, the decode kernel and the host time per step; ``tokens``: the
    reported decode step's (batch x decode_positions)."""
    e, release = plan.setup.efficiency, plan.setup.runtime.release
    host = KR.host_step_seconds(release, 0)
    graph_max = R.graph_max_tokens_at(release, e.graph_max_tokens, plan.gpu, tp)
    eager_max = 0 if e.graph_max_tokens <= 0 else graph_max  # the graphs' reach as launch_is_read takes it (0: none)
    return (
        Assumption("bandwidth_efficiency", "HBM bandwidth fraction (weight GEMMs, elementwise)",
                   f"{e.bandwidth[0]:.2f} ({e.bandwidth[1]:.2f}-{e.bandwidth[2]:.2f})", FITTED,
                   "--bandwidth-efficiency", "bandwidth_efficiency" in u),
        Assumption("compute_efficiency", "16-bit GEMM fraction of the dense peak",
                   f"{e.compute[0]:.2f} ({e.compute[1]:.2f}-{e.compute[2]:.2f}); FP8/INT8/FP4 x "
                   f"{e.low_precision_gemm:g}" + _marlin_clause(plan), FITTED, "--compute-efficiency",
                   "compute_efficiency" in u),
        Assumption("kernel_efficiency", "decode KV read / prefill flash attention",
                   f"{e.kv:.2f} of bandwidth / {e.attention:.2f} of peak",
                   "KV read fitted as above; FlashAttention-2/3 forward 0.5-0.75 of peak (Dao 2023, Shah 2024)",
                   "--bandwidth-efficiency / --compute-efficiency", False),
        Assumption("decode_attention", "decode attention kernel on a GQA cache", plan.setup.decode_attention,
                   f"{release.label}'s kernel (core/serving/kernels.py)", "--decode-attention",
                   "decode_attention" in u),
        Assumption("host_time", "host time per step not hidden by the GPU",
                   ("scheduler: none (overlapped)" if host == 0 else f"scheduler: {host * 1e3:.1f} ms"
                    + (" + 0.1 ms a sequence" if KR.host_step_seconds(release, 1) > host else ""))
                   + ("; eager forwards: their issue time past the GPU work" if FT.runs_issue_bound(release, e.graph_max_tokens) else "")
                   + _runner_value(plan),
                   _scheduler_source(release) + _eager_steps(e, release, graph_max) + _proposer_launches(plan, eager_max)
                   + _runner_source(plan),
                   "--engine" + (" / --launch-layer-us" if launch_is_read(release, eager_max, _method(plan)) else ""),
                   "launch_layer_us" in u),
        _kernel_floor_assumption(plan, u, tp, tokens),
        Assumption("ttft_scope", "what the time to first token covers", "the engine's prefill step"
                   + (" (vLLM V1: its scheduler's chunks) + the server's 2 ms tokeniser batch window"
                      if RP.api_server_seconds(release) else "")
                   + (f" + {parse * 1e3:.0f} ms chat-template parse"
                      if (parse := RP.endpoint_parse_seconds(plan.setup.runtime)) else "")
                   + (f" + {tokenise * 1e3:.1f} ms tokenising the prompt (the server's tokenizer)"
                      if (tokenise := PT.tokenize_seconds(release, plan.prompt)) else "")
                   + f"; requests to the {plan.setup.runtime.endpoint} endpoint",
                   "not the rest of a server's request path (HTTP, the chat template's render, "
                   + ("" if tokenise else "tokenising, ") + "process "  # tokenise: bound in the value above
                   "hand-offs, streaming): 20 ms median on a 4-vCPU L4 node under vLLM 0.23, <= 1.8 ms on NIM 1.8 "
                   "(docs/inference.md sections 5e and 7); vLLM 0.11.0's chat endpoint re-parses its template per "
                   "request (11 ms, core/serving/request_path.py), costed with --endpoint chat",
                   "--endpoint (completions by default; add your server's own path)", "endpoint" in u),
        Assumption("small_gemm_exposure", "GEMMs of few tokens: share of the shorter bound not hidden",
                   f"{e.ridge_exposed:g} x min(1, {e.ridge_tile_tokens} / tokens)",
                   "fitted on TensorRT-LLM v0.5's first-token table (14 rows; docs/inference.md section 5)",
                   "none (model constant)", False),
        Assumption("kv_repeat_l2_hit", "repeated KV reads served by L2 (per-query-head decode kernels)",
                   f"{e.kv_repeat_l2_hit:.0%}", FITTED, "none (model constant)", False),
        _allreduce_assumption(plan, tp, pp),
    )


def _scheduler_source(release) -> str:
    """Where the scheduler's host time comes from, for ``release``'s engine only (kernels.host_step_seconds)."""
    if release.engine == "sglang":
        counts = "" if release.version >= (0, 5, 6) else (
            f"; {release.label} taken with 0.5.6's eager-path launches (core/serving/layer_kernels.py)")
        return (f"{release.label}'s scheduler: overlapped from 0.4 (its zero-overhead batch scheduler), 0.6 ms a "
                f"step before (core/serving/kernels.py){counts}; ")
    if release.engine == "vllm":
        return f"{release.label}'s scheduler (vllm#6854, #6913, PR 27614; core/serving/kernels.py); "
    return f"{release.label}'s scheduler (core/serving/kernels.py host_step_seconds); "


def _method(plan: Plan) -> str:
    """The speculative method the plan runs ('none' without speculation)."""
    return "none" if plan.setup.speculation is None else plan.setup.speculation.method


def _proposer_launches(plan: Plan, graph_max: int) -> str:
    """Where the scheduled steps' eager host time is their issue (first_token_path) but the proposer's unscheduled
    forwards pay a layer's launches (inputs_graphs.launch_is_read; core.serving.roofline.decode_step): say so, as
    the flag line names --launch-layer-us there. ``graph_max``: the graphs' reach, 0 without graphs. Else ''."""
    e, release, method = plan.setup.efficiency, plan.setup.runtime.release, _method(plan)
    if not FT.runs_issue_bound(release, graph_max) or not launch_is_read(release, graph_max, method):
        return ""
    where = "always (no CUDA graphs)" if graph_max <= 0 else f"those over {graph_max} sequences (past the graphs)"
    return (f"; the {method} proposer's forwards (not scheduled steps) launch layer by layer where they run eagerly, "
            f"{where}: {e.layer_launch_s * 1e6:.0f} us a layer (what --launch-layer-us sets)")


def _runner_value(plan: Plan) -> str:
    """The speculative runner's launches (core/serving/spec_runner.py), where counted: vLLM 0.8.x's eager EAGLE."""
    s = plan.setup.speculation
    ops = None if s is None else SR.runner_ops(plan.setup.runtime.release, s.method)
    if ops is None:
        return ""
    return (f"; speculative runner: {ops.per_verify - ops.behind_forward - ops.draft_segment} serial launches a verify "
            f"step + {SR.draft_launches(ops, s.tokens)} draft launches, {FT.EAGER_HOST_PER_LAUNCH_S * 1e6:.2f} us each")


def _runner_source(plan: Plan) -> str:
    s = plan.setup.speculation
    if not _runner_value(plan):
        return ""
    return (f"; the speculative runner's launches counted from {plan.setup.runtime.release.label}'s V1 runner and "
            f"{s.method} proposer (core/serving/spec_runner.py), each at the Python launch time (first_token_path; "
            "--launch-layer-us does not change them), the draft forwards max(issue, GPU)")


def _eager_steps(e, release, graph_max: int) -> str:
    """Which steps run eagerly (those past the largest graph, prefill where the release captures decode
    graphs only: kernels.prefill_graphs_of) and which host time each takes: the kernels' issue time
    (first_token_path, the per-launch time formatted from its constant; --launch-layer-us does not change
    it) or setup.Efficiency.layer_launch_s a layer (what --launch-layer-us sets)."""
    issue = (f"the kernels' issue time ({FT.EAGER_HOST_PER_LAUNCH_S * 1e6:.2f} us a launch, sglang PR 12160; "
             "launches counted in core/serving/layer_kernels.py" + (
                 f"; + {FT.eager_forward_host_seconds(release) * 1e3:.1f} ms a prefill forward outside the layers"
                 if FT.eager_forward_host_seconds(release) else "") +
             ") against the GPU work, max of the two (--launch-layer-us does not change it)")
    launches = (f"{e.layer_launch_s * 1e6:.0f} us a layer of launches (fitted on TensorRT engines without graphs; "
                "what --launch-layer-us sets)")
    if e.graph_max_tokens <= 0:
        return "every step runs eagerly (no CUDA graphs), its host time " + (
            issue if FT.runs_issue_bound(release, 0) else launches)
    if FT.runs_issue_bound(release, graph_max):  # with graphs: SGLang's eager steps (first_token_path)
        return (f"every prefill step, and decode steps of more than {graph_max} sequences (past cuda_graph_max_bs "
                f"on this GPU and TP), run eagerly, their host time {issue}")
    prefill = "" if KR.prefill_graphs_of(release) else "prefill steps and "
    return f"{prefill}steps over {graph_max} tokens run eagerly: {launches}"


def _kernel_floor_assumption(plan: Plan, u, tp: int, tokens: float = 1.0) -> Assumption:
    """A CUDA-graph step's small-kernel floor per layer (GPU time) at the reported decode step's ``tokens``
    (layer_kernels.graph_kernels counts SGLang's Qwen3 q copy from 2): the value, and which engine it was
    fitted on (core.serving.graph_floor.graph_layer_seconds_of)."""
    release = plan.setup.runtime.release
    value = R.graph_layer_seconds(plan.setup, plan.spec, plan.gpu, tp, tokens)
    kernels = LK.graph_kernels(plan.spec, release, plan.gpu, plan.setup.fmt.name, tp=tp, tokens=tokens)
    if "graph_layer_us" in u:
        source = "given"
    elif plan.setup.efficiency.graph_max_tokens <= 0:
        source = f"{release.label} as set up: every step runs eagerly (its launches: the host-time line)"
    elif value > 0:
        source = (f"{GF.GRAPH_KERNEL_S * 1e6:.3f} us a kernel, {kernels:g} kernels a layer here ({tokens:g}-token "
                  "step), and the engine's kernels outside the layers at that rate; fitted on vllm PR 23197's four "
                  f"Llama-3.1-8B TP 1 rows (vLLM V1: {GF.GRAPH_FIT_LAYER_S * 1e6:g} us a layer over {GF.GRAPH_FIT_LAYERS} x "
                  f"{GF.GRAPH_KERNELS_DENSE} layer + {GF.VLLM_OUTSIDE_KERNELS} outside kernels); held out: V0's decode "
                  "graphs (vllm PR 2192) and SGLang's "
                  "(its cookbook's concurrency-1 runs: same kernels a layer), docs/inference.md section 5")
    else:  # 0 for lack of data, not a measured difference: say what the batch-1 gap to vLLM owes to it
        layer_s = GF.GRAPH_KERNEL_S * GF.GRAPH_KERNELS_DENSE
        vllm = plan.spec.num_layers * layer_s + GF.VLLM_OUTSIDE_KERNELS * GF.GRAPH_KERNEL_S  # + vLLM's outside the layers
        per_layer = f"{layer_s * 1e6:.1f} us"
        source = (f"{release.label}: 0 for lack of data (no {release.engine} row measures it; vLLM's {per_layer} was "
                  f"fitted on vLLM V1 only): the engine gap to vLLM at batch 1 is unmeasured here, {vllm * 1e3:.1f} "
                  f"ms a decode step of it ({plan.spec.num_layers} layers x {per_layer} + {GF.VLLM_OUTSIDE_KERNELS} kernels "
                  f"outside them x {GF.GRAPH_KERNEL_S * 1e6:.2f} us) is this term alone")
    shown = "none (no CUDA graphs)" if plan.setup.efficiency.graph_max_tokens <= 0 else (
        f"{value * 1e6:.0f} us a layer" if value > 0 else "none (0 us a layer)")
    return Assumption("kernel_floor", "CUDA-graph step: small kernels' GPU time per layer beyond the roofline",
                      shown, source, "--graph-layer-us", "graph_layer_us" in u)


def _pcie_words(gpu) -> str:
    """What joins a TP group whose ring runs over PCIe (tp_span.on_pcie): PCIe alone on a PCIe-only part, PCIe
    between NVLink pairs on a host of several scale-up domains (the H100 NVL's server of 8, core.comm.host_tier)."""
    return "PCIe-only GPUs" if gpu is None or gpu.pcie_only else "GPUs past their NVLink pair (PCIe between pairs)"


def _allreduce_assumption(plan: Plan, tp: int, pp: int = 1) -> Assumption:
    """Which all-reduce the step time uses for this layout's TP messages: the same limit
    core.serving.roofline.step_time takes (kernels.custom_allreduce_limit: the release, tp, the
    fabric, a given workspace, the format's elements (releases.allreduce_dtype) and pp)."""
    release = plan.setup.runtime.release
    p2p = plan.setup.runtime.p2p
    ar_bytes, bf16 = allreduce_dtype(plan.setup.fmt.compute_dtype, plan.setup.fmt.name)
    limit = KR.custom_allreduce_limit(release, tp, plan.gpu, plan.setup.efficiency.custom_allreduce_bytes, p2p,
                                      plan.spec.hidden_size, dtype_bytes=ar_bytes, bf16=bf16, pp=pp)
    reads_tables = reads_019_allreduce(release, plan.gpu, p2p) and plan.setup.efficiency.custom_allreduce_bytes is None
    if tp <= 1:
        value = "none (tp 1)"
    elif not p2p:
        value = "NCCL at every size through host memory (no GPU P2P: the own kernel is off, NCCL over SHM)"
    elif limit > 0:
        strict = reads_tables and (limit + 16) % 2**20 == 0  # a strict '<' limit (vLLM's size < max); the fusion's is '<='
        value = (f"own kernels below {_size(limit + 16)} at tp {tp}, NCCL from there" if strict  # vLLM's size < max
                 else f"own kernel up to {_size(limit)} at tp {tp}, NCCL above")
    elif KR.on_pcie(plan.gpu, tp) and KR.custom_allreduce_bytes_of(release, tp) > 0:
        value = f"NCCL at every size (the own kernel is refused on {tp} {_pcie_words(plan.gpu)})"
    else:
        value = "NCCL at every size"
    fabric = KR.collective_fabric(plan.gpu, p2p)  # without P2P a PCIe-only part (kernels.host_path), whatever NVLink
    if tp > 1 and KR.on_pcie(fabric, tp):
        value += f"; NCCL's time x {KR.PCIE_NCCL_SLOWDOWN:g} on {_pcie_words(fabric)} (the ring through host memory)"
    tables = ("vLLM 0.19's fused all-reduce + RMSNorm, custom and symmetric-memory limits on sm90, the memory "
              "report's rule: releases.own_allreduce_max_bytes; " if reads_tables else "") + (
        "past one tray FlashInfer's fused all-reduce + RMSNorm over MNNVL, vLLM >= 0.19, PR #38136, timed as the own "
        "one-shot kernel: tp_span.mnnvl_fused_max_bytes; " if p2p and KR.mnnvl_fused_max_bytes(release, tp, plan.gpu, pp) else "")
    return Assumption("tp_allreduce", "TP all-reduce implementation", value,
                      f"{release.label} ({tables}vllm PR 2192; TensorRT-LLM PluginConfig use_custom_all_reduce, AUTO: 16 MB "
                      "workspace at tp <= 2, 8 MB above); NCCL costed by its tuner model (core/comm/collectives.py); "
                      "the PCIe slowdown fitted on TensorRT-LLM v0.9.0's L40S first-token rows (kernels.PCIE_NCCL_SLOWDOWN)",
                      "--engine", False)


def _size(nbytes: float) -> str:
    """'8 MiB' for a binary size (vLLM's 8192 x 1024), '16 MB' for a decimal one (TensorRT-LLM's)."""
    return f"{nbytes / 2**20:g} MiB" if nbytes % 2**16 == 0 else f"{nbytes / 1e6:g} MB"


def _lora_assumptions(plan: Plan, u) -> tuple[Assumption, ...]:
    lora = plan.setup.lora
    if lora is None:
        return ()
    return (
        Assumption("max_loras", "LoRA slots per GPU (adapters one batch mixes)", lora.max_loras,
                   "vLLM --max-loras default 1; SGLang --max-loras-per-batch default 8", "--max-loras",
                   "max_loras" in u),
        Assumption("max_lora_rank", "rank every slot is padded to", lora.rank,
                   "vLLM default 16; kernels read the padded rank (vLLM docs/features/lora.md)", "--max-lora-rank",
                   "max_lora_rank" in u),
        Assumption("lora_traffic", "distinct adapters per decode step", "min(batch, max_loras)",
                   "gpuplan assumption: requests spread over the adapters (most bytes read)", "--max-loras",
                   False),
    )




def _gib(value: float) -> str:
    return f"{value / 2**30:.2f} GiB"


def _graph_band(plan: Plan, tokens: int, seqs: int) -> str:
    """The estimate's page resolution where vLLM logs its extrapolation (0.19+) and gpuplan estimates it."""
    if plan.setup.runtime.cuda_graphs is not None or plan.setup.runtime.release.version < (0, 19, 0):
        return ""
    return (f", ± {_gib(P.graph_estimate_band(plan.spec, seqs, tokens))}: one 2 MiB page in a per-graph sample "
            "x the further sizes (core.serving.profile.graph_estimate_band)")


def _engine_assumptions(plan: Plan, inputs: InferenceInputs, serving: Serving) -> tuple[Assumption, ...]:
    """The engine, its release and the memory terms its profile counts (core/serving/releases.py)."""
    r, m, u = plan.setup.runtime, serving.memory, inputs.given
    release = r.release
    common = (
        Assumption("engine", "serving engine and release (memory rules)", release.label, release.described,
                   "--engine (e.g. vllm==0.19)", "engine" in u),
        Assumption("driver_reserved", "memory not visible to CUDA", _gib(r.driver_reserved),
                   "vLLM total_gpu_memory logs (vllm#10517: 23.58 of 24 GiB; 79.19 GiB on an H100)",
                   "--driver-reserved-gib", "driver_reserved_gib" in u),
        Assumption("non_torch", "non-torch memory the profile counts (one GPU)", _gib(m.non_torch),
                   "the release's logged figure (core/serving/releases.py)" if r.non_torch is None else "given",
                   "--non-torch-gib", "non_torch_gib" in u),
        Assumption("comm_buffers", "non-torch memory of the TP / PP groups", _gib(m.comm),
                   E.comm_basis(E.comm_rule(serving.gpus, r.comm_buffers, plan.gpu.scale_up_bandwidth, r.p2p), r.engine),
                   "--nccl-gib", "nccl_gib" in u),
    )
    if r.engine != "vllm":
        return common
    tokens, seqs = m.batch_limits
    rules = r.vllm_rules(plan.spec.moe is not None)
    return common + (
        Assumption("gpu_memory_utilization", "gpu_memory_utilization", m.fraction,
                   f"{release.label} default {rules.default_util}", "--gpu-memory-utilization",
                   "gpu_memory_utilization" in u),
        Assumption("cuda_graphs", "CUDA-graph memory", _gib(m.cuda_graphs),
                   ("counted before the KV cache (vLLM 0.21+)" if m.graphs_counted else
                    "captured after the KV cache is sized, out of the headroom")
                   + (" ; estimated per captured size and layer (core.serving.profile.graph_bytes)"
                      if r.cuda_graphs is None else "") + _graph_band(plan, tokens, seqs),
                   "--cuda-graph-gib", "cuda_graph_gib" in u),
        Assumption("prefill_tokens", "tokens of the profile forward (max_num_batched_tokens)", tokens,
                   f"vllm serve default of {release.label} on this GPU", "--prefill-tokens",
                   "prefill_tokens" in u),
        Assumption("max_num_seqs", "sequences of the profiled sampler step (max_num_seqs)", seqs,
                   f"vllm serve default of {release.label} on this GPU", "--max-num-seqs", "max_num_seqs" in u),
        Assumption("sampler", "sampler profile", r.sampler if r.sampler != "auto" else
                   f"auto: {m.sampler}, {rules.sampler_bytes:.0f} B per logit", "core/serving/releases.py (from the "
                   "sampler's code; vllm#21429 and llm-d-planner logs)", "--sampler", "sampler" in u),
        Assumption("attention_backend", "attention backend (the CUDA-graph estimate's)", m.attention_backend[0],
                   f"vLLM's selector on the model's properties: {m.attention_backend[1]} "
                   "(core/serving/attention_backend.py)", "none (from the model)"),
    )
