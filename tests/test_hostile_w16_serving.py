"""Hostile inputs, wave 16 (2026-12-06, helper X4): the serving doors (`infer`, its --rps sizing, POST
/api/inference, gpuplan.estimate_inference) swept by scripts outside the suite: in-process `gpuplan.cli.main` under a
SIGALRM time box and the web app through its TestClient. About 300 CLI asks (every infer option at 0 / negative / inf
/ nan / 1e308 / fractional / fullwidth / look-alike values, engine releases from vllm==0.0.1 to ==99 with the features
the release gates cover, pairs that cannot go together, GB200 / GB300 tp 8 / 16 / 64 / 72), 59 web bodies (wrong
types, extra and misspelt keys, duplicate keys, NaN / Infinity / 1e999, non-object JSON) and 266 asks through all four
doors (flags, plan file, web, API: 29 numeric options x 9 edge values, and release pairs), every pair of doors giving
the same line or both answering. No traceback, hang or refusal over one line; the slowest ask took 2.2 s (four doors).

Found, each answered with exit status 0 before: an engine release given a feature its wheel shows it lacks -- (a) --pp
> 1 on vLLM before 0.5.1 and SGLang before 0.4.6.post2 (`--engine vllm==0.5.0 --pp 2` put 8.03 GB of llama-3-8b's
weights on each of two stages); (b) --prefix-hit > 0 on vLLM before 0.4.0 (no --enable-prefix-caching: --prefix-hit
0.5 cut the TTFT 90.4 -> 51.4 ms for a cache the server does not have); (c) --prefill-tokens below the context on vLLM
before 0.4.1 (no chunked prefill: SchedulerConfig refuses max_num_batched_tokens < max_model_len); (d) an MXFP4
(gpt-oss) checkpoint on SGLang before 0.5.0rc0, ModelOpt NVFP4 before 0.4.5.post1; (e) LoRA on SGLang 0.3.0; (f)
--cuda-graph-gib > 0 on a release timed eagerly throughout (trtllm==0.9: 5 GiB off the KV cache); (g) --disaggregate
on vLLM before 0.6.5 and SGLang before 0.4.4.post2. Each is gated in jobs/inference/inputs_releases.py (and
InferenceInputs._check_graph_layer for (f)). And (h) --rps priced every catalog GPU type at the one --price given.
"""

import pytest
from helpers import field_refusal, four_door_refusal, web_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

ASK = {"model": "llama-3-8b", "gpu": "h100"}


# ---- (a) pipeline parallelism on a release without it ---------------------------------------------------------------

@pytest.mark.parametrize("release, first", [("vllm==0.5.0", "0.5.1"), ("vllm==0.2.7", "0.5.1"),
                                            ("sglang==0.4.6.post1", "0.4.6.post2"), ("sglang==0.3.0", "0.4.6.post2")])
def test_a_pipeline_on_a_release_without_one_is_refused_at_every_door(run_cli, client, tmp_path, release, first):
    """config.py@v0.5.0.post1 L629-631: ParallelConfig raises NotImplementedError('Pipeline parallelism is not
    supported yet.') for pipeline_parallel_size > 1; @v0.5.1 L268-274 takes it. SGLang's server_args.py has no
    pp_size in the 0.4.6.post1 wheel, and L81 / L655-658 of the 0.4.6.post2 one. Both were answered with 2 stages
    (8.03 GB of weights a stage)."""
    web = four_door_refusal(run_cli, client, tmp_path, "infer", "inference",
                            {**ASK, "engine": release, "pp": 2}, "pp",
                            "has no pipeline parallelism")
    assert web.endswith(f"give --engine {release.split('==')[0]}=={first} or later, or --tp instead of --pp")


@pytest.mark.parametrize("release", ["vllm==0.5.1", "vllm", "sglang==0.4.6.post2", "sglang", "trtllm==0.5", "trtllm"])
def test_a_pipeline_on_the_first_release_with_one_or_on_tensorrt_llm_answers(release):
    """TensorRT-LLM's pp_size is in every release modelled (0.5.0 on), so it is not gated."""
    from gpuplan import InferenceInputs, estimate_inference

    report = estimate_inference(InferenceInputs(**ASK, engine=release, pp=2, search=False))
    assert report.value("weights_per_gpu") > 0


def test_one_stage_on_the_oldest_release_answers():
    from gpuplan import InferenceInputs

    assert InferenceInputs(**ASK, engine="vllm==0.2.0", pp=1).pp_degree == 1


# ---- (b) a prefix-cache hit on a vLLM release without a prefix cache ------------------------------------------------

@pytest.mark.parametrize("release", ["vllm==0.3.3", "vllm==0.2.0"])
def test_a_prefix_hit_on_a_vllm_release_without_a_prefix_cache_is_refused_at_every_door(run_cli, client, tmp_path,
                                                                                        release):
    """--enable-prefix-caching is first in engine/arg_utils.py@v0.4.0 L199; 0.3.3's prefix_pos is LLM.generate's
    (offline) only, absent from its OpenAI server. --prefix-hit 0.5 cut the TTFT 90.4 -> 51.4 ms (llama-3-8b, H100)."""
    web = four_door_refusal(run_cli, client, tmp_path, "infer", "inference",
                            {**ASK, "engine": release, "prefix_hit": 0.5}, "prefix_hit",
                            "has no prefix cache")
    assert web.endswith("give --engine vllm==0.4.0 or later, or --prefix-hit 0")


@pytest.mark.parametrize("release, hit", [("vllm==0.4.0", 0.5), ("vllm==0.2.0", 0), ("sglang==0.3.0", 0.5)])
def test_a_prefix_hit_with_a_prefix_cache_or_none_claimed_answers(release, hit):
    """SGLang's RadixAttention is in every release modelled; a hit of 0 claims no cache."""
    from gpuplan import InferenceInputs, estimate_inference

    assert estimate_inference(InferenceInputs(**ASK, engine=release, prefix_hit=hit, search=False))


# ---- (c) a token budget below the context on a vLLM release without chunked prefill ---------------------------------

def test_prefill_tokens_below_the_context_without_chunked_prefill_is_refused_at_every_door(run_cli, client, tmp_path):
    """SchedulerConfig._verify_args raises 'max_num_batched_tokens (512) is smaller than max_model_len (4096)' at
    config.py@v0.4.0 L563-570 whatever --enable-chunked-prefill says; @v0.4.1 L596-597 lifts it under chunked
    prefill. vllm==0.4.0 --prefill-tokens 512 answered (exit status 0) a setup its server refuses to start."""
    web = four_door_refusal(run_cli, client, tmp_path, "infer", "inference",
                            {**ASK, "engine": "vllm==0.4.0", "prefill_tokens": 512},
                            "prefill_tokens", "is below the context (4,096 tokens, max_model_len)")
    assert web.endswith("give --prefill-tokens 4096 or more, or --engine vllm==0.4.1 or later")


def test_the_sizing_door_refuses_it_too(client):
    """--rps sizes over the catalog through the same resolve: the same line."""
    body = {**ASK, "engine": "vllm==0.2.0", "prefill_tokens": 512, "rps": 1, "ttft_p99": "500ms", "tpot": "50ms"}
    body.pop("gpu")
    web_refusal(client.post("/api/inference", json=body), "prefill_tokens", "has no chunked prefill")


@pytest.mark.parametrize("release, ask", [("vllm==0.4.1", {"prefill_tokens": 512}),
                                          ("vllm==0.4.0", {"prefill_tokens": 4096}),
                                          ("vllm==0.4.0", {"prefill_tokens": 512, "context": 512})])
def test_a_budget_at_the_context_or_on_a_release_with_chunked_prefill_answers(release, ask):
    from gpuplan import InferenceInputs, estimate_inference

    assert estimate_inference(InferenceInputs(**ASK, engine=release, search=False, **ask))


# ---- (d) a checkpoint format an SGLang release cannot load ---------------------------------------------------------

@pytest.mark.parametrize("release", ["sglang==0.4.10.post2", "sglang==0.3.0"])
def test_gpt_oss_mxfp4_on_an_sglang_release_without_mxfp4_is_refused_at_every_door(run_cli, client, tmp_path, release):
    """No quantization/mxfp4.py nor models/gpt_oss.py in the 0.4.10.post2 wheel; '"mxfp4": Mxfp4Config' at
    quantization/__init__.py@0.5.0rc0 L100. gpt-oss-120b on sglang==0.3.0 was answered (exit status 0) as MXFP4."""
    web = four_door_refusal(run_cli, client, tmp_path, "infer", "inference",
                            {"model": "gpt-oss-120b", "gpu": "h100", "engine": release},
                            "quantization", "cannot load a mxfp4 checkpoint: SGLang loads them from 0.5.0rc0")
    assert web.startswith("quantization: got 'mxfp4'; ")


@pytest.mark.parametrize("older, first", [("sglang==0.4.5", "sglang==0.4.5.post1")])
def test_an_nvfp4_checkpoint_is_refused_before_sglangs_first_build_with_it(run_cli, tmp_path, older, first):
    """ModelOptFp4Config is absent from modelopt_quant.py in the 0.4.5 wheel and at L224 of 0.4.5.post1's
    ('"modelopt_fp4": ModelOptFp4Config', quantization/__init__.py@0.4.5.post1 L75)."""
    import json

    from gpuplan.catalog.paths import CATALOG

    config = json.loads((CATALOG / "models" / "llama-3-8b.json").read_text())["config"]
    config["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    ask = ("infer", "--model", str(tmp_path / "config.json"), "--gpu", "b200", "--engine")
    field_refusal(run_cli(*ask, older), "quantization", "cannot load a nvfp4 checkpoint: SGLang loads them from "
                  "0.4.5.post1")
    assert run_cli(*ask, first)[0] == 0


@pytest.mark.parametrize("release", ["sglang==0.5.0rc0", "sglang==0.5.1", "sglang"])
def test_gpt_oss_on_the_first_sglang_build_with_mxfp4_answers(release):
    from gpuplan import InferenceInputs, estimate_inference

    report = estimate_inference(InferenceInputs(model="gpt-oss-120b", gpu="h100", engine=release, search=False))
    assert report.value("weights_per_gpu") > 0


# ---- (e) LoRA adapters on the SGLang release before its LoRA ------------------------------------------------------

@pytest.mark.parametrize("field, value", [("enable_lora", True), ("max_loras", 4)])
def test_lora_on_sglang_0_3_0_is_refused_at_every_door(run_cli, client, tmp_path, field, value):
    """The 0.3.0 wheel's server_args.py has no --lora-paths / --max-loras-per-batch and it ships no srt/lora/; both
    are at server_args.py@0.3.1 L531 / L538. `--engine sglang==0.3.0 --enable-lora` sized adapter slots, exit 0."""
    from gpuplan import InferenceInputs, InputError, estimate_inference

    ask = {**ASK, "engine": "sglang==0.3.0", field: value}

    flag = field_refusal(run_cli("infer", "--model", "llama-3-8b", "--gpu", "h100", "--engine", "sglang==0.3.0",
                                 *(["--enable-lora"] if field == "enable_lora" else ["--max-loras", str(value)])),
                         field, "serves no LoRA adapters: SGLang has them from 0.3.1")
    web = web_refusal(client.post("/api/inference", json=ask), field)
    with pytest.raises(InputError) as api:
        estimate_inference(InferenceInputs(**ask))
    assert flag.strip() == f"error: {web}" == f"error: {api.value}"
    assert web.endswith("give --engine sglang==0.3.1 or later")


def test_lora_on_sglang_0_3_1_answers():
    from gpuplan import InferenceInputs, estimate_inference

    assert estimate_inference(InferenceInputs(**ASK, engine="sglang==0.3.1", enable_lora=True, search=False))


# ---- (f) CUDA-graph memory on a release that captures no graph ----------------------------------------------------

@pytest.mark.parametrize("release", ["trtllm==0.9", "vllm==0.2.0"])
def test_cuda_graph_memory_on_a_release_without_graphs_is_refused_at_every_door(run_cli, client, tmp_path, release):
    """gpuplan times every step of TensorRT-LLM before 1.0 and of vLLM before 0.2.6 eagerly (kernels.graph_max_tokens_of
    is 0; --graph-layer-us is refused there). --cuda-graph-gib 5 on trtllm==0.9 still took 5 GiB from
    llama-3-8b's KV cache on one H100 (113 -> 104 sequences at 4,096 tokens); on vllm==0.2.0 it changed only the
    logged graph size."""
    web = four_door_refusal(run_cli, client, tmp_path, "infer", "inference",
                            {**ASK, "engine": release, "cuda_graph_gib": 5}, "cuda_graph_gib",
                            "sizes CUDA-graph memory, and ")
    assert "captures none (every step eager): drop it, or give a release with graphs" in web


@pytest.mark.parametrize("release, gib", [("trtllm==0.9", 0), ("trtllm==1.0", 5), ("vllm==0.2.6", 5)])
def test_cuda_graph_memory_of_zero_or_on_a_release_with_graphs_answers(release, gib):
    from gpuplan import InferenceInputs, estimate_inference

    assert estimate_inference(InferenceInputs(**ASK, engine=release, cuda_graph_gib=gib, search=False))


# ---- (g) disaggregated prefill / decode on a release without it ---------------------------------------------------

@pytest.mark.parametrize("release, first", [("vllm==0.6.4", "0.6.5"), ("sglang==0.4.4.post1", "0.4.4.post2")])
def test_disaggregation_on_a_release_without_it_is_refused_at_every_door(run_cli, client, tmp_path, release, first):
    """vLLM's --kv-transfer-config (the prefill / decode connector) is first at engine/arg_utils.py@v0.6.5 L931 with
    distributed/kv_transfer/, absent from the 0.6.4.post1 wheel; SGLang's --disaggregation-mode at
    server_args.py@0.4.4.post2 L1089 with srt/disaggregation/, absent from 0.4.4.post1's. Both sized two pools."""
    from gpuplan import InferenceInputs, InputError, estimate_inference

    ask = {"model": "llama-3-8b", "rps": 1, "ttft_p99": "1s", "tpot": "100ms", "disaggregate": True,
           "engine": release}

    flag = field_refusal(run_cli("infer", "--model", "llama-3-8b", "--rps", "1", "--ttft-p99", "1s", "--tpot", "100ms",
                                 "--disaggregate", "--engine", release), "disaggregate", f"has it from {first}")
    web = web_refusal(client.post("/api/inference", json=ask), "disaggregate")
    with pytest.raises(InputError) as api:
        estimate_inference(InferenceInputs(**ask))
    assert flag.strip() == f"error: {web}" == f"error: {api.value}"
    assert web.endswith(f"give --engine {release.split('==')[0]}=={first} or later, or --no-disaggregate")


@pytest.mark.parametrize("release", ["vllm==0.6.5", "sglang==0.4.4.post2", "trtllm==0.9"])
def test_disaggregation_from_the_first_release_with_it_answers(release):
    """TensorRT-LLM's first release with disaggregated serving was not read: not gated."""
    from gpuplan import InferenceInputs

    assert InferenceInputs(model="llama-3-8b", rps=1, ttft_p99="1s", tpot="100ms", disaggregate=True,
                           engine=release).disaggregate


# ---- (h) --price under --rps: the GPU asked's, not every catalog type's --------------------------------------------

@pytest.mark.parametrize("gpu, priced_id", [("h100", "h100-sxm"), (None, "a100-sxm4-80gb")])
def test_the_price_given_prices_the_gpu_asked_only(gpu, priced_id):
    """`infer --rps 1 --gpu h100 --price 2` answered 'cheapest on any GPU type: 1 x (tp 1 on NVIDIA A100 40GB PCIe)
    = 1 GPU, $2.00/h': the H100's price on every type. Now the other types keep the price catalog's: the H100
    replica costs 2 x its GPUs, and every other type's row is priced as without --price. With --gpu left out the
    price is the default GPU type's (the A100 80GB the answer names), as for `infer --price 2` without --rps (review
    w15 R5 S1: X4 had refused that ask while `--gpu a100 --price 2`, the same GPU typed, answered)."""
    from gpuplan import InferenceInputs
    from gpuplan.core.serving.load import LoadTarget
    from gpuplan.jobs.inference import sizing
    from gpuplan.jobs.inference.resolve import resolve_plan

    inputs = InferenceInputs(model="llama-3-8b", rps=1, price=2, search=False, **({"gpu": gpu} if gpu else {}))
    plan = resolve_plan(inputs)
    target = LoadTarget(float("inf"), float("inf"), 1.0)  # as jobs.inference.estimate builds it: no latency target
    steps = sizing.replica_steps_by_gpu(plan)
    priced = {(c.gpu.id, c.tp): c for c in sizing.size_for_target(plan, target, 2.0, timed=steps)}
    catalog = {(c.gpu.id, c.tp): c for c in sizing.size_for_target(plan, target, None, timed=steps)}
    assert priced[(priced_id, 1)].cost_per_hour == 2.0 * priced[(priced_id, 1)].gpus
    others = [key for key in priced if key[0] != priced_id]
    assert len(others) > 10
    assert all(priced[key].cost_per_hour == catalog[key].cost_per_hour for key in others)
