"""Inference kinds of ``gpuplan validate``: the serving estimate against published engine logs
and measurements (catalog/reference/inference_measurements.yaml, every entry quoting its source).

``inference_validation_cases()`` returns (case id, kind, measured, predicted, basis, note) tuples;
error = (predicted - measured) / measured, as for the training kinds. Each case is predicted with
the same core functions ``gpuplan infer`` uses, with the engine release and settings the source
states and the defaults for everything else (core.serving.setup.Efficiency; the engines outside
vLLM, SGLang and TensorRT-LLM: setup.OTHER_ENGINES).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from dataclasses import replace

from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving import request_path as RP
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import setup as SU
from gpuplan.core.serving.releases import parse_release
from gpuplan.core.serving import weights as W
from gpuplan.core.serving import kv_cache as K
from gpuplan.errors import InputError

GiB = 2**30
KIND_KV = "inference: KV tokens in the logged KV memory"
KIND_WEIGHTS = "inference: weights per GPU (bytes)"
KIND_DECODE = "inference: batch-1 decode tokens/s, llama.cpp / MLC / ExLlama (their own prior)"
KIND_LATENCY = "inference: batch latency (s), prefill + decode, vLLM (held out)"
KIND_LATENCY_GPU_UNSTATED = ("inference: batch latency (s), prefill + decode, vLLM (held out; H100 form factor not "
                             "stated: SXM taken)")
KIND_LATENCY_FITTED = ("inference: batch latency (s), prefill + decode, vLLM (fitted: vllm PR 23197's Llama-3.1-8B "
                       "rows set the per-layer time of a CUDA-graph step; H100 form factor not stated: SXM taken)")
KIND_SPECULATIVE = "inference: speculative-decoding speedup at batch 1, vLLM (held out)"
KIND_THROUGHPUT = "inference: static-batch throughput (output tokens/s per GPU), TensorRT-LLM (held out)"
KIND_THROUGHPUT_FITTED = ("inference: static-batch throughput (output tokens/s per GPU), TensorRT-LLM (fitted: "
                          "v0.6.1 set the kernel efficiencies)")
KIND_THROUGHPUT_FITTED_DIE = ("inference: static-batch throughput (output tokens/s per GPU), TensorRT-LLM (fitted: "
                              "v0.9.0's Falcon-180B L40S rows set the L40S's masked-MHA die rate)")
KIND_THROUGHPUT_UNSTATED = ("inference: static-batch throughput (output tokens/s per GPU), TensorRT-LLM (held out; "
                            "build not stated: Mistral-7B, decode kernel taken as the release's)")
KIND_TTFT = "inference: time to first token (s) at batch 1, TensorRT-LLM (held out)"
KIND_TTFT_FITTED = ("inference: time to first token (s) at batch 1, TensorRT-LLM (fitted: v0.5 set the small-GEMM "
                    "exposure)")
KIND_TTFT_FITTED_PCIE = ("inference: time to first token (s) at batch 1, TensorRT-LLM (fitted: v0.9.0's L40S rows at "
                         "tp 4 / 8 set NCCL's PCIe slowdown)")
KIND_ONLINE_TTFT = ("inference: time to first token (s) at concurrency 1, NIM 1.8 on TensorRT-LLM (held out; engine "
                    "release not stated: a TensorRT engine before 1.0)")
KIND_ONLINE_TPOT = ("inference: time per output token (s) at concurrency 1, NIM 1.8 on TensorRT-LLM (held out; engine "
                    "release not stated: a TensorRT engine before 1.0)")
KIND_ONLINE_TTFT_VLLM = "inference: time to first token (s) at concurrency 1, vLLM (held out)"
KIND_ONLINE_TPOT_VLLM = "inference: time per output token (s) at concurrency 1, vLLM (held out)"
KIND_ONLINE_TTFT_SGLANG = ("inference: time to first token (s) at concurrency 1, SGLang (held out; the client's mean "
                           "over the run's requests)")
KIND_ONLINE_TPOT_SGLANG = ("inference: time per output token (s) at concurrency 1, SGLang (held out; the client's mean "
                           "over the run's requests)")
_A100_UNSTATED = "; A100 memory not stated: SXM4 80 GB taken)"
KIND_ONLINE_TTFT_SGLANG_A100 = KIND_ONLINE_TTFT_SGLANG[:-1] + _A100_UNSTATED
KIND_ONLINE_TPOT_SGLANG_A100 = KIND_ONLINE_TPOT_SGLANG[:-1] + _A100_UNSTATED
Case = tuple[str, str, float, float, str, str]


@cache
def reference_measurements() -> dict[str, Any]:
    """The packaged inference reference set (parsed YAML)."""
    from gpuplan.catalog import reference_yaml

    data = reference_yaml("inference_measurements.yaml")
    if not isinstance(data, dict) or "kv_tokens" not in data:
        raise InputError("reference", "inference_measurements.yaml", "expected a mapping with 'kv_tokens'")
    return data


def _model(name: str):
    from gpuplan.catalog import load_model

    return load_model(name)


def _model_of(entry: dict[str, Any]):
    """The case's model: its catalog entry, or the Hugging Face config the case quotes
    (``model_config``, with ``model_config_source``) for a model the catalog does not hold."""
    if "model_config" in entry:
        from gpuplan.adapters.hf_config import model_spec_from_hf_config

        return model_spec_from_hf_config(entry["model_config"], name=entry["model"])
    return _model(entry["model"])


def _gpu(name: str):
    from gpuplan.catalog import load_accelerator

    return load_accelerator(name)


def _format(entry: dict[str, Any]) -> W.WeightFormat:
    if entry["quantization"] == "mxfp4":  # gpt-oss checkpoints: MXFP4 experts only (jobs/inference/quant_config)
        return replace(W.MXFP4, quantized="experts")
    return W.weight_format(entry["quantization"], entry.get("group_size", 128), entry.get("zero_point", True))


def _kv_case(e: dict[str, Any]) -> Case:
    spec = _model(e["model"])
    layout = K.kv_layout(spec, K.KV_DTYPE_BYTES[e["kv_dtype"]], e["tp"], 1, e["block_size"])
    predicted = K.tokens_in(layout, e["logged_kv_gib"] * GiB)
    basis = f"{e['logged_kv_gib']} GiB / {layout.bytes_per_token:,.0f} B per token per GPU, blocks of {e['block_size']}"
    return e["id"], KIND_KV, float(e["measured_tokens"]), float(predicted), basis, e.get("engine", "")


def _weights_case(e: dict[str, Any]) -> Case:
    spec = _model(e["model"])
    fmt = _format(e)
    predicted = W.weight_bytes_per_gpu(W.param_groups(spec), fmt, spec.num_layers, e["tp"], 1)
    basis = f"{fmt.name}, tp {e['tp']}: layers x {fmt.bits_per_weight:g} bits + 16-bit embeddings, / tp"
    return e["id"], KIND_WEIGHTS, e["measured_gib"] * GiB, predicted, basis, ""


def _decode_case(e: dict[str, Any]) -> Case:
    """Batch-1 decode of an engine outside vLLM / SGLang / TensorRT-LLM (llama.cpp, MLC, ExLlama):
    their own prior (setup.OTHER_ENGINES)."""
    spec, gpu, fmt = _model(e["model"]), _gpu(e["gpu"]), _format(e)
    setup = SU.ServingSetup(fmt, K.KV_DTYPE_BYTES["fp16"], efficiency=SU.OTHER_ENGINES)
    layout = K.kv_layout(spec, setup.kv_bytes, 1, 1, 16)
    step = R.decode_step(spec, W.param_groups(spec), setup, layout.bytes_per_sequence(e["context"]), tp=1, pp=1,
                         batch=1, context=e["context"], **R.gpu_keywords(gpu, setup))
    predicted = 1.0 / step.total
    implied = setup.efficiency.bandwidth[0] * e["measured_tokens_per_s"] / predicted
    basis = (f"{fmt.name} ({fmt.bits_per_weight:g} bits) on {gpu.id} at {gpu.memory_bandwidth / 1e12:g} TB/s x 0.65; "
             f"implied bandwidth efficiency {implied:.2f}")
    return e["id"], KIND_DECODE, float(e["measured_tokens_per_s"]), predicted, basis, e.get("engine", "")


def _setup_of(e: dict[str, Any], fmt: W.WeightFormat) -> SU.ServingSetup:
    """The row's engine release decides its decode kernel and host time (core/serving/kernels.py);
    a row may state the decode kernel its run used (decode_attention). The CUDA-graph sizes follow
    the engine's max_num_seqs (a row may state it; else 256), not the row's batch: benchmark_latency
    and a served run at concurrency 1 leave it at the engine default (V1: 256 or 1,024, both
    capturing up to 512 tokens); ``enforce_eager: true`` (vLLM --enforce-eager) captures none."""
    release = parse_release(e["release"])
    graphs = 0 if e.get("enforce_eager") else KR.graph_max_tokens_of(release, e.get("max_num_seqs", 256),
                                                                       _gpu(e["gpu"]), e.get("tp", 1))
    eff = replace(SU.Efficiency(), graph_max_tokens=graphs,  # --enforce-eager: no CUDA graphs (setup.py)
                  custom_allreduce_bytes=e.get("custom_allreduce_bytes"))
    attention = e.get("decode_attention", KR.decode_attention_of(release))
    runtime = _runtime_of(e)
    return SU.ServingSetup(fmt, K.KV_DTYPE_BYTES[e.get("kv_dtype", "fp16")], runtime=runtime, efficiency=eff,
                           decode_attention=attention)


def _static_batch(e: dict[str, Any], cached: int = 0) -> tuple[R.StepTime, R.StepTime]:
    """(prefill of the whole batch, one decode step at the mean context) for a static batch: the
    prompts of ``batch`` sequences in one forward (weights read once), then decode steps at
    prompt + output / 2 cached tokens. ``cached``: prompt tokens the prefill finds in the prefix cache."""
    spec, gpu, fmt = _model_of(e), _gpu(e["gpu"]), _format(e)
    setup = _setup_of(e, fmt)
    if cached:  # half a token up, so prefill_step's floor lands on ``cached`` (as request_path.chunked_prefill)
        setup = replace(setup, prefix_hit=(cached + 0.5) / e["prompt_tokens"])
    tp, batch = e["tp"], e["batch"]
    groups = W.param_groups(spec)
    common = dict(tp=tp, pp=1, **R.gpu_keywords(gpu, setup))
    prompt, output = e["prompt_tokens"], e["output_tokens"]
    prefill = R.prefill_step(spec, groups, setup, prompt=prompt, batch=batch, **common)
    context = prompt + output / 2
    kv_seq = K.kv_layout(spec, setup.kv_bytes, tp, 1, 16).bytes_per_sequence(context)
    decode = R.decode_step(spec, groups, setup, kv_seq, batch=batch, context=context, **common)
    return prefill, decode


def _ttft_case(e: dict[str, Any]) -> Case:
    """Time to first token of one prompt: a static batch of one with one output token."""
    prefill, _ = _static_batch({**e, "batch": 1, "output_tokens": 1})
    fitted = e.get("fitted")
    kind = KIND_TTFT_FITTED_PCIE if fitted == "pcie_allreduce" else KIND_TTFT_FITTED if fitted else KIND_TTFT
    return e["id"], kind, e["measured_ms"] / 1e3, prefill.total, _prefill_basis(e, prefill), e.get("engine", "")


def _prefill_basis(e: dict[str, Any], prefill) -> str:
    """How one prompt's prefill (a roofline.StepTime) adds up, in ms, for a first-token row's basis."""
    return (f"{e['prompt_tokens']} tokens: GEMMs {prefill.gemm_s * 1e3:.1f} ms "
            f"+ attention {prefill.attention_s * 1e3:.1f} + elementwise {prefill.other_s * 1e3:.1f} + "
            f"small-kernel floor {prefill.kernel_floor_s * 1e3:.1f} + host {prefill.host_s * 1e3:.1f} + all-reduce "
            f"{prefill.comm_s * 1e3:.1f} ms" + (f" (host: eager issue {prefill.issue_s * 1e3:.1f} ms less the GPU work; "
                                               "first_token_path)" if prefill.issue_s else "")
            + f"; bound: {prefill.bound}")  # the step's bound, not the GEMMs' (final read 8)


def _latency_case(e: dict[str, Any]) -> Case:
    prefill, decode = _static_batch(e)
    output = e["output_tokens"]
    predicted = prefill.total + (output - 1) * decode.total
    basis = (f"prefill {prefill.total:.2f} s ({prefill.bound}) + {output - 1} x {decode.total * 1e3:.1f} ms "
             f"({decode.bound}, all-reduce {decode.comm_s * 1e3:.1f} ms)")
    kind = KIND_LATENCY_GPU_UNSTATED if e.get("gpu_stated") is False else KIND_LATENCY
    kind = KIND_LATENCY_FITTED if e.get("fitted") == "graph_layer_s" else kind
    return e["id"], kind, float(e["measured_seconds"]), predicted, basis, e.get("engine", "")


def _throughput_case(e: dict[str, Any]) -> Case:
    prefill, decode = _static_batch(e)
    batch, output, tp = e["batch"], e["output_tokens"], e["tp"]
    seconds = prefill.total + output * decode.total
    predicted = batch * output / seconds / tp
    basis = (f"{batch} x {output} tokens / (prefill {prefill.total:.2f} s {prefill.bound} + {output} x "
             f"{decode.total * 1e3:.1f} ms {decode.bound}) / tp {tp}")
    fitted = e.get("fitted")
    kind = KIND_THROUGHPUT_FITTED if fitted else KIND_THROUGHPUT
    kind = KIND_THROUGHPUT_FITTED_DIE if fitted == "masked_mha_die" else kind
    kind = KIND_THROUGHPUT_UNSTATED if e.get("build_stated") is False else kind
    return e["id"], kind, float(e["measured_tokens_per_s_per_gpu"]), predicted, basis, e.get("engine", "")


def _online_kinds(e: dict[str, Any]) -> tuple[str, str]:
    """(TTFT kind, TPOT kind) of a served row: the engine names the kind (issue 38: per engine); an
    SGLang row on an A100 whose memory the source leaves out has its own kind."""
    engine = parse_release(e["release"]).engine
    if engine == "vllm":
        return KIND_ONLINE_TTFT_VLLM, KIND_ONLINE_TPOT_VLLM
    if engine == "sglang":
        unstated = e.get("gpu_stated") is False
        return ((KIND_ONLINE_TTFT_SGLANG_A100, KIND_ONLINE_TPOT_SGLANG_A100) if unstated
                else (KIND_ONLINE_TTFT_SGLANG, KIND_ONLINE_TPOT_SGLANG))
    return KIND_ONLINE_TTFT, KIND_ONLINE_TPOT


ONLINE_CLIENTS = ("sglang.bench_serving", "vllm bench serve", "benchmark_serving", "aiperf")
"""The clients an online row's ``client`` field may name: SGLang's python -m sglang.bench_serving, ``vllm bench
serve``, vLLM's benchmarks/benchmark_serving.py, NVIDIA AIPerf."""
ENGINE_CLIENTS = ONLINE_CLIENTS[:3]
"""The engines' own benchmark clients: each sends the run's first prompt once before its clock starts
(bench_serving.py@v0.5.6:1886-1940; benchmark_serving.py@v0.9.1:299-327; vllm/benchmarks/serve.py@v0.11.0:
508-547), so the server's prefix cache holds the first measured request (request_path.warm_first_request_cached).
AIPerf is not read here and is taken to send none."""


def _online_field(e: dict[str, Any], field: str, values: tuple[str, ...], default: str | None = None) -> str:
    """A structured online-row field (``client``, ``endpoint``), refused in one line naming the row, the field
    and the values allowed when missing (no default) or not among them."""
    value = e.get(field, default)
    if value not in values:
        raise InputError("reference", e.get("id"), f"{field}: got {value!r}; must be one of {', '.join(values)}")
    return value


def _warm_first(e: dict[str, Any]) -> bool:
    """Whether the row's first listed request was sent once before the clock (its ``client`` is an engine's own,
    ENGINE_CLIENTS) and the row gives its requests in the client's order (``requests``, or ``num_requests`` of one
    length), so that request is known."""
    client = _online_field(e, "client", ONLINE_CLIENTS)  # every online row names its client
    return bool(e.get("requests") or e.get("num_requests")) and client in ENGINE_CLIENTS


def _request_pairs(e: dict[str, Any]) -> list[tuple[int, int]]:
    """The row's requests in the client's order, (prompt, output) each: its ``requests`` list, else
    ``num_requests`` copies of (prompt_tokens, output_tokens) (a run of fixed lengths, e.g. vllm#20469's 30 of
    16,000 / 200: every request is known, the first included), else one request of the row's lengths."""
    if e.get("requests"):
        return [(int(p), int(o)) for p, o in e["requests"]]
    count = e.get("num_requests", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise InputError("reference", e.get("id"), f"num_requests: got {count!r}; must be a whole number >= 1")
    return [(e["prompt_tokens"], e["output_tokens"])] * count


def _runtime_of(e: dict[str, Any]) -> SU.Runtime:
    """The row's engine release, at the endpoint its client sent the requests to (``endpoint``: SU.ENDPOINTS;
    absent = completions, a text prompt: OpenAI /v1/completions or SGLang's native /generate, which
    bench_serving --backend sglang posts to, bench_serving.py@v0.5.6:835, 2367-2369). The same Runtime field
    ``gpuplan infer --endpoint`` sets, so validate and every door read one server hold
    (request_path.server_hold_seconds)."""
    release = parse_release(e["release"])
    return SU.Runtime(engine=release.engine, version=release.version,
                      endpoint=_online_field(e, "endpoint", SU.ENDPOINTS, "completions"))


def _served_request(e: dict[str, Any], prompt: int, output: int, *, warm: bool = False) -> tuple[R.StepTime, R.StepTime]:
    """One request of a concurrency-1 run: (its prefill, one batch-1 decode step at prompt +
    output / 2 cached tokens): one static batch of one (its prefill reads the prompt only), the
    prefill as the server holds it (request_path.served: vLLM's tokeniser batch window, and vLLM 0.11.0's
    per-request chat-template parse where the row's ``endpoint`` is chat). ``warm``: the
    client sent this prompt before the clock, so the prefill computes only what the prefix cache lacks
    (request_path.warm_first_request_cached)."""
    release = parse_release(e["release"])
    cached = RP.warm_first_request_cached(release, prompt) if warm else 0
    prefill, decode = _static_batch({**e, "batch": 1, "prompt_tokens": prompt, "output_tokens": output}, cached)
    return RP.served(prefill, _runtime_of(e), prompt), decode


def _online_cases(e: dict[str, Any]) -> list[Case]:
    """A served run at concurrency 1 (one request in flight, as AIPerf / genai-perf / the engines'
    bench clients drive it): its TTFT is one prefill of the prompt, its inter-token latency one
    decode step at batch 1 (context prompt + output / 2). A row whose requests differ in length
    (``requests``: [prompt, output] pairs, as SGLang's bench_serving draws them from its seed) is
    scored on the means its client prints: the mean of the requests' prefills and of their decode
    steps (bench_serving's TPOT is a per-request mean, averaged over requests); its request 1, which the
    engine's own client sent once before the clock (_warm_first), prefills only what the prefix cache
    lacks (request_path.warm_first_request_cached). Higher concurrencies
    mix prefills into decode steps and are not rows here (core/serving/load.py models a Poisson
    load, not a closed loop)."""
    if e.get("concurrency") != 1:
        raise InputError("reference", e["id"], "online rows must be at concurrency 1")
    pairs = _request_pairs(e)
    warm = _warm_first(e)  # the client's warm-up left request 1's prompt in the prefix cache
    steps = [_served_request(e, prompt, output, warm=warm and i == 0) for i, (prompt, output) in enumerate(pairs)]
    ttft = sum(prefill.total for prefill, _ in steps) / len(steps)
    # bench_serving averages TPOT over the requests with more than one output token only
    # (sglang 0.5.3 bench_serving.py L1538-1539: if output_len > 1)
    decodes = [decode.total for (_, decode), (_, output) in zip(steps, pairs) if output > 1]
    tpot = sum(decodes) / len(decodes) if decodes else 0.0
    prefill, decode = steps[-1]
    last = f"request {len(steps)} of {len(steps)}: " if len(steps) > 1 else ""
    tpot_basis = (f"{last}batch 1 at {pairs[-1][0] + pairs[-1][1] // 2} cached tokens: GEMMs "
                  f"{decode.gemm_s * 1e3:.2f} ms + KV {decode.attention_s * 1e3:.2f} + small-kernel floor "
                  f"{decode.kernel_floor_s * 1e3:.2f} + host {decode.host_s * 1e3:.2f} + all-reduce "
                  f"{decode.comm_s * 1e3:.2f} ms; bound: {decode.bound}")
    note, ttft_basis = e.get("engine", ""), last + _prefill_basis({**e, "prompt_tokens": pairs[-1][0]}, prefill)
    if parse := RP.endpoint_parse_seconds(_runtime_of(e)):
        ttft_basis += f" (host: {parse * 1e3:.1f} ms of it the chat template parsed again; request_path)"
    if len(steps) > 1:
        ttft_basis, tpot_basis = (f"mean of {len(steps)} requests ({ttft * 1e3:.1f} ms); " + ttft_basis,
                                  f"mean of {len(steps)} requests ({tpot * 1e3:.2f} ms); " + tpot_basis)
    ttft_kind, tpot_kind = _online_kinds(e)
    return [(e["id"] + "-ttft", ttft_kind, e["measured_ttft_ms"] / 1e3, ttft, ttft_basis, note),
            (e["id"] + "-tpot", tpot_kind, e["measured_tpot_ms"] / 1e3, tpot, tpot_basis, note)]


def acceptance_for_length(length: float, tokens: int) -> float:
    """The per-token acceptance rate whose mean accepted length (Leviathan et al. Eq. 1) is
    ``length`` at ``tokens`` proposed per step (bisection; the length grows with the rate)."""
    from gpuplan.core.serving.speculative import Speculation

    lo, hi = 0.0, 0.999999
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if Speculation("x", tokens, mid, "").mean_accepted_length < length else (lo, mid)
    return (lo + hi) / 2


def _speculative_case(e: dict[str, Any]) -> Case:
    from dataclasses import replace

    from gpuplan.core.serving.speculative import speculation

    spec, gpu = _model(e["model"]), _gpu(e["gpu"])
    alpha = acceptance_for_length(e["accepted_length"], e["spec_tokens"])
    release = parse_release(e.get("release", "vllm"))  # the release decides the scheduler's host time
    runtime = SU.Runtime(engine=release.engine, version=release.version)
    plain = SU.ServingSetup(W.FORMATS["bf16"], K.KV_DTYPE_BYTES["bf16"], runtime=runtime)
    spec_setup = replace(plain, speculation=speculation(e["method"], e["spec_tokens"], alpha, spec))
    groups, context = W.param_groups(spec), 512
    kv_seq = K.kv_layout(spec, plain.kv_bytes, 1, 1, 16).bytes_per_sequence(context)
    common = dict(tp=1, pp=1, batch=1, context=context, **R.gpu_keywords(gpu, plain))  # plain: bf16
    base = R.decode_step(spec, groups, plain, kv_seq, **common)
    fast = R.decode_step(spec, groups, spec_setup, kv_seq, **common)
    basis = (f"{e['method']} k={e['spec_tokens']}, logged length {e['accepted_length']} (alpha {alpha:.3f}): "
             f"{base.total * 1e3:.2f} ms / (({fast.total * fast.tokens_per_step * 1e3:.2f} ms verify + draft) / "
             f"{fast.tokens_per_step:.2f})")
    return e["id"], KIND_SPECULATIVE, float(e["measured_speedup"]), base.total / fast.total, basis, e.get("engine", "")


_BUILDERS = {"kv_tokens": _kv_case, "weights": _weights_case,
             "decode": _decode_case, "latency": _latency_case,
             "speculative": _speculative_case, "throughput": _throughput_case, "ttft": _ttft_case}


def inference_validation_cases() -> list[Case]:
    """Every inference reference case as (id, kind, measured, predicted, basis, note)."""
    data = reference_measurements()
    from gpuplan.jobs.validation.serving_memory import serving_memory_cases

    cases = [build(entry) for section, build in _BUILDERS.items() for entry in data.get(section, [])]
    cases += [case for entry in data.get("online", []) for case in _online_cases(entry)]
    return cases + serving_memory_cases()


def inference_excluded() -> list[tuple[str, str]]:
    """(id, reason) of reference entries kept out of the summary."""
    from gpuplan.jobs.validation.serving_memory import serving_memory_excluded

    return [(e["id"], e["reason"]) for e in reference_measurements().get("excluded", [])] + serving_memory_excluded()
