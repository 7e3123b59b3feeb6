"""Hostile inputs, wave 20 (2026-12-07, helper H1): wave 19's leftovers checked one by one, then the serving, profile,
catalog and web inputs probed again (extremes, NaN / inf, huge ints, empty strings, unicode, plan files and web
bodies).

Found, each fixed where every door passes (one line naming the field, exit 2):

(1) `infer --engine vllm==0.2.4 --sampler triton` (or flashinfer, logits) was answered with a sampler that release
    did not have: the Triton sampler's 14 B a logit on a 0.2.x profile (schema/serving_rules.SAMPLER_SINCE);
(2) `infer --endpoint chat` changed nothing outside vLLM 0.11.0 (the answer byte for byte the completions one): now
    refused there, naming the one release where it is costed (schema/serving_rules.check_endpoint);
(3) `infer --prefix-hit 0.99 --prompt 1` cached floor(0.99 x 1) = 0 tokens and changed only a label
    (schema/serving_rules.check_prefix_hit, from jobs/inference/resolve.py where the prompt is known);
(4) a name or filter holding a bidirectional override (U+202E), a zero-width space or a C1 control passed the ASCII
    control test (`catalog --filter 'llama\\u202e'`: 0 models, exit 0; the web's ?filter= alike): schema/types.name;
(5) CUDA-only training options on Intel Gaudi and Huawei Ascend parts (CUDA graphs, DeepEP / HybridEP, Transformer
    Engine's te-ce and offloading, and qlora on Ascend) were answered, exit 0, where a TPU refuses them
    (schema/vendor_rules.py); MI300X (ROCm) keeps them; `memory --gpu h100 --compare h100,tpu-v5p --loss te-ce`
    (or a Gaudi / Ascend part) sized the compared row as if it ran them: now refused naming compare;
(6) `profile --sweep --sweep-budget 10` ran its base run whatever the budget (224 s of pythia-70m on the CPU, then
    'runs measured 1 of 4', exit 0): the base run now stops at the first step past the budget and the sweep is
    refused naming sweep_budget, nothing written (profile/trial.py PastDeadline, profile/sweep.py);
(7) speculative decoding beside --pp (every SGLang build with PP) or LoRA (SGLang 0.5.6, but ngram) was answered
    where SGLang's server_args.check_server_args refuses the pair (schema/serving_rules.check_speculative_pairs);
    vLLM 0.29 runs both (config/vllm.py falls back to the V1 runner) and stays answered;
(8) `infer --decode-attention` on a multi-head (llama-2-7b) or MLA (deepseek-v2-lite) model changed nothing under
    any engine (core/serving/roofline.kv_reads_per_step reads the cache once a KV head either way): refused
    (schema/serving_rules.check_decode_attention, from jobs/inference/resolve.py where the model is known).
"""

import pytest
from helpers import field_refusal, four_door_refusal, web_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

INFER = {"model": "llama-3-8b", "gpu": "h100"}


# ---- (1) a sampler the vLLM release predates ---------------------------------------------------------------------

@pytest.mark.parametrize("sampler, since", [("triton", "0.17.0"), ("flashinfer", "0.8.0"), ("logits", "0.28.0")])
def test_1_a_sampler_the_release_predates_is_refused_at_every_door(run_cli, client, tmp_path, sampler, since):
    """Before: vllm==0.2.4 with --sampler triton / flashinfer / logits answered, exit 0 (the profile's sampler line
    at 14 / 14 / 2 B a logit, where 0.2.x ran PyTorch's sort: core/serving/releases.py VLLM_RULES)."""
    four_door_refusal(run_cli, client, tmp_path, "infer", "inference",
                      {**INFER, "engine": "vllm==0.2.4", "sampler": sampler}, "sampler",
                      "vllm==0.2.4 predates ")
    err = field_refusal(run_cli("infer", "--model", "llama-3-8b", "--engine", "vllm==0.2.4", "--sampler", sampler),
                        "sampler")
    assert f"which vLLM runs from {since}" in err and f"--engine vllm=={since} or later" in err


@pytest.mark.parametrize("engine, sampler", [("vllm==0.2.4", "torch-sort"), ("vllm==0.2.4", "auto"),
                                             ("vllm==0.17", "triton"), ("vllm==0.8", "flashinfer"),
                                             ("vllm==0.28", "logits"), ("vllm", "triton")])
def test_1_a_sampler_the_release_has_is_answered(run_cli, engine, sampler):
    code, out, err = run_cli("infer", "--model", "llama-3-8b", "--gpu", "h100", "--no-search", "--engine", engine,
                             "--sampler", sampler)
    assert code == 0 and "error" not in err, err


def test_1_the_sampler_moves_the_profile_where_it_is_answered(run_json):
    """The check is not a refusal of a field that changes nothing: where the release has the sampler, the triton
    step differs from the sort's (releases.py: SORT 38 B, TRITON 14 B a logit)."""
    sort = run_json("infer", "--model", "llama-3-8b", "--gpu", "h100", "--no-search", "--engine", "vllm==0.17",
                    "--sampler", "torch-sort")
    triton = run_json("infer", "--model", "llama-3-8b", "--gpu", "h100", "--no-search", "--engine", "vllm==0.17",
                      "--sampler", "triton")
    assert sort["results"] != triton["results"]


# ---- (2) --endpoint chat where it changes nothing -------------------------------------------------------------------

@pytest.mark.parametrize("engine", ["vllm", "vllm==0.11.1", "vllm==0.10.2", "sglang", "trtllm"])
def test_2_endpoint_chat_where_it_is_timed_as_completions_is_refused(run_cli, client, tmp_path, engine):
    """Before: the answer equal to the completions one, exit 0 (core/serving/request_path.chat_template_seconds is 0
    outside vLLM 0.11.0)."""
    msg = four_door_refusal(run_cli, client, tmp_path, "infer", "inference",
                            {**INFER, "engine": engine, "endpoint": "chat"}, "endpoint", "changes nothing under ")
    assert "--engine vllm==0.11.0" in msg


def test_2_endpoint_chat_under_vllm_0_11_0_and_completions_anywhere_are_answered(run_cli):
    for args in (("--engine", "vllm==0.11.0", "--endpoint", "chat"), ("--endpoint", "completions"),
                 ("--engine", "sglang", "--endpoint", "completions")):
        code, out, err = run_cli("infer", "--model", "llama-3-8b", "--gpu", "h100", "--no-search", *args)
        assert code == 0 and "error" not in err, (args, err)


# ---- (3) a prefix hit that caches no token --------------------------------------------------------------------------

@pytest.mark.parametrize("extra, fragment", [({"prompt": 1}, "1-token prompt (floor(0.99 x 1) = 0): give a prompt of "
                                              "at least 2 tokens, or leave it out"),
                                             ({"prompt": 3, "prefix_hit": 0.2}, "a --prefix-hit of at least 0.34"),
                                             ({"context": 8, "prefix_hit": 0.2}, "4-token prompt")])
def test_3_a_prefix_hit_caching_no_token_is_refused_at_every_door(run_cli, client, tmp_path, extra, fragment):
    """Before: `--prefix-hit 0.99 --prompt 1` answered, only the TTFT label changed ('99% of it cached'); the
    context's default output (min(256, context / 2) = 4 of 8) leaves a 4-token prompt."""
    four_door_refusal(run_cli, client, tmp_path, "infer", "inference", {**INFER, "prefix_hit": 0.99, **extra},
                      "prefix_hit", fragment)


@pytest.mark.parametrize("hit, prompt", [(0.5, 2), (0.34, 3), (0.99, 2), (0.01, 100)])
def test_3_a_prefix_hit_caching_one_token_is_answered(run_cli, hit, prompt):
    code, out, err = run_cli("infer", "--model", "llama-3-8b", "--gpu", "h100", "--no-search", "--prefix-hit",
                             str(hit), "--prompt", str(prompt), "--output-tokens", "4")
    assert code == 0 and "error" not in err, err


# ---- (4) unseen characters in names and filters ---------------------------------------------------------------------

UNSEEN = ["llama\u202e", "\u2066llama", "lla\u200bma", "lla\u0085ma", "llama\ufeff", "lla\u2028ma"]
"""A right-to-left override, a left-to-right isolate, a zero-width space, NEL (C1), a BOM, a line separator."""


@pytest.mark.parametrize("text", UNSEEN)
def test_4_a_catalog_filter_with_an_unseen_character_is_refused_cli_and_web(run_cli, client, text):
    """Before: `catalog models --filter 'llama\\u202e'` printed 'Model catalog (0 models)', exit 0."""
    cli = field_refusal(run_cli("catalog", "models", "--filter", text), "filter", "bidirectional override")
    assert ascii(text)[1:-1] in cli  # quoted escaped, never as the raw character
    web = web_refusal(client.get("/api/catalog/models", params={"filter": text}), "filter", "bidirectional override")
    assert cli.strip() == f"error: {web}"


@pytest.mark.parametrize("text", UNSEEN[:3])
def test_4_a_model_name_with_an_unseen_character_is_refused_at_every_door(run_cli, client, tmp_path, text):
    four_door_refusal(run_cli, client, tmp_path, "infer", "inference", {**INFER, "model": text}, "model",
                      "bidirectional override")


def test_4_plain_unicode_names_still_reach_the_catalog_lookup(run_cli):
    """Printable non-ASCII text is not refused as unseen (it is looked up, and refused as an unknown name)."""
    code, out, err = run_cli("catalog", "models", "--filter", "llamá")
    assert code == 0, err
    code, out, err = run_cli("infer", "--model", "llamá-3", "--no-search")
    assert code == 2 and "bidirectional" not in err


# ---- (5) CUDA-only training options on Gaudi / Ascend -------------------------------------------------------------

MOE = {"model": "mixtral-8x7b", "gpus": 512}
OFF_CUDA = [("gaudi3", {"cuda_graph_scope": "moe-router"}, "cuda_graph_scope", "CUDA graphs"),
            ("gaudi2", {"full_iteration_graph": True}, "full_iteration_graph", "one CUDA graph"),
            ("ascend-910b", {"ep_dispatcher": "flex"}, "ep_dispatcher", "give alltoall"),
            ("ascend-910c", {"loss": "te-ce"}, "loss", "Transformer Engine"),
            ("gaudi3", {"offload_layers": 2}, "offload_layers", "Transformer Engine's offload context")]


@pytest.mark.parametrize("job, route, gpu, option, field, fragment",
                         [(job, route, *case) for job, route in (("train", "training"), ("memory", "memory"),
                                                                 ("plan", "plan"))
                          for case in OFF_CUDA if not (job == "memory" and "graph" in case[2])])
def test_5_cuda_only_options_on_gaudi_and_ascend_are_refused_at_every_door(run_cli, client, tmp_path, job, route, gpu,
                                                                           option, field, fragment):
    """Before: each answered, exit 0 (train mixtral-8x7b on 512 of them; qlora moved GPU-days 13,976 -> 2,554-like
    layouts as on a CUDA part). memory takes no CUDA-graph options."""
    msg = four_door_refusal(run_cli, client, tmp_path, job, route, {**MOE, "gpu": gpu, **option}, field, fragment)
    assert "not CUDA or ROCm" in msg and ("torch_npu" in msg) == gpu.startswith("ascend")


@pytest.mark.parametrize("gpu, option", [("gaudi3", ("--finetune", "qlora")), ("gaudi3", ("--allocator", "expandable")),
                                         ("ascend-910b", ("--finetune", "qlora")),  # bitsandbytes' npu path (review M3)
                                         ("ascend-910b", ("--cuda-graph-scope", "none")),
                                         ("gaudi3", ("--offload-layers", "0")), ("mi300x", ("--loss", "te-ce")),
                                         ("mi300x", ("--ep-dispatcher", "flex")), ("mi300x", ("--full-iteration-graph",))])
def test_5_what_those_parts_run_and_rocm_parts_stay_answered(run_cli, gpu, option):
    """bitsandbytes has a Gaudi backend; torch_npu / Gaudi allocators; stated defaults; ROCm runs the CUDA code."""
    code, out, err = run_cli("train", "--model", "mixtral-8x7b", "--gpus", "512", "--gpu", gpu, *option)
    assert code == 0 and "error" not in err, err


# ---- (6) the sweep's base run and its budget ------------------------------------------------------------------------

def test_6_a_trial_stops_at_its_deadline_with_nothing_written(tmp_path):
    """A real CPU trial (torchtitan's debugmodel, one layer) given a deadline already past stops after its first
    step (of 5): PastDeadline(1, 5), no measurement file."""
    pytest.importorskip("torch")
    import time

    from helpers import debugmodel_config

    from gpuplan.profile.trial import PastDeadline, run_trial
    from gpuplan.profile.trial_plan import TrialSettings

    out = tmp_path / "m.json"
    settings = TrialSettings(model=debugmodel_config(tmp_path), layers=1, micro_batch=1, seq_len=64, steps=4,
                             warmup=1, device="cpu")
    with pytest.raises(PastDeadline) as past:
        run_trial(settings, out, deadline=time.perf_counter())
    assert (past.value.done, past.value.total) == (1, 5) and past.value.step_s > 0 and not out.exists()


def test_6_a_sweep_whose_base_run_passes_the_budget_is_refused(run_cli, tmp_path, monkeypatch):
    """The sweep hands the base run (and only it) the deadline start + budget; a base run past it ends the sweep on
    one line naming sweep_budget, with what the base run took and would need (2 of 13 steps in 4 s: 4 + 11 x 2 s)."""
    from gpuplan.profile.trial import PastDeadline

    deadlines = []

    def base_past_budget(settings, out, deadline=None):
        deadlines.append(deadline)
        raise PastDeadline(2, 13, 2.0)

    from gpuplan.profile import sweep as SW
    from gpuplan.profile.trial_plan import TrialSettings

    monkeypatch.setattr("gpuplan.profile.trial.run_trial", base_past_budget)
    clock = iter([0.0, 0.0, 0.0])  # the sweep's start, its budget left, the run's start; then 4 s later
    monkeypatch.setattr(SW.time, "perf_counter", lambda: next(clock, 4.0))
    with pytest.raises(Exception) as refused:
        SW.run_sweep(TrialSettings(model="m", micro_batch=1, seq_len=64), tmp_path / "s", budget_s=10.0)
    assert getattr(refused.value, "field", None) == "sweep_budget" and len(deadlines) == 1
    assert deadlines[0] == 10.0  # start 0 + budget
    assert "2 of 13 steps (warm-up included) in 4 s, nothing written; give at least ~26 s" in str(refused.value)


# ---- (7) speculative decoding beside PP or LoRA where SGLang refuses it --------------------------------------------

@pytest.mark.parametrize("engine, speculative", [
    ("sglang", {"speculative": "eagle"}), ("sglang", {"speculative": "ngram", "spec_acceptance": 0.5}),
    ("sglang==0.5.5", {"speculative": "draft", "draft_model": "llama-3.2-1b"}),
    ("sglang==0.4.6.post2", {"speculative": "eagle"})])  # ngram from 0.5.3, draft from 0.5.2 (inputs_releases)
def test_7_speculative_with_pipeline_parallelism_under_sglang_is_refused(run_cli, client, tmp_path, engine,
                                                                        speculative):
    """server_args.py check_server_args asserts speculative_algorithm is None with pp_size > 1 in every build with
    --pp-size (0.4.6.post2 L1274-1281 ... 0.5.6 L3977-3982). Before: answered, exit 0."""
    four_door_refusal(run_cli, client, tmp_path, "infer", "inference",
                      {"model": "llama-3.1-8b", "gpu": "h100", "engine": engine, "pp": 2, "gpus": 2, **speculative},
                      "speculative", "refuses speculative decoding with pipeline parallelism")


@pytest.mark.parametrize("speculative", [{"speculative": "eagle"}, {"speculative": "draft",
                                                                     "draft_model": "llama-3.2-1b"}])
@pytest.mark.parametrize("lora", [{"enable_lora": True}, {"max_loras": 2}])
def test_7_lora_beside_a_model_drafter_under_sglang_0_5_6_is_refused(run_cli, client, tmp_path, speculative, lora):
    """server_args.py@0.5.6 L4141-4146: 'Currently LoRA is only compatible with NGRAM speculative decoding.'"""
    four_door_refusal(run_cli, client, tmp_path, "infer", "inference",
                      {"model": "llama-3.1-8b", "gpu": "h100", "engine": "sglang", **lora, **speculative},
                      "speculative", "refuses LoRA beside ")


@pytest.mark.parametrize("args", [("--engine", "sglang", "--enable-lora", "--speculative", "ngram", "--spec-acceptance",
                                   "0.5"),
                                  ("--engine", "sglang==0.5.5", "--enable-lora", "--speculative", "eagle"),
                                  ("--engine", "vllm", "--enable-lora", "--speculative", "eagle"),
                                  ("--engine", "vllm", "--pp", "2", "--gpus", "2", "--speculative", "eagle3"),
                                  ("--engine", "sglang", "--pp", "2", "--gpus", "2")])
def test_7_the_pairs_the_engines_run_stay_answered(run_cli, args):
    code, out, err = run_cli("infer", "--model", "llama-3.1-8b", "--gpu", "h100", "--no-search", *args)
    assert code == 0 and "error" not in err, err


# ---- (8) --decode-attention where both kernels read the cache alike --------------------------------------------------

@pytest.mark.parametrize("model, value, fragment", [("llama-2-7b", "grouped", "as many KV heads as query heads (32)"),
                                                    ("llama-2-7b", "per-query-head", "as many KV heads"),
                                                    ("deepseek-v2-lite", "per-query-head", "MLA model's latent cache")])
def test_8_decode_attention_on_mha_or_mla_is_refused_at_every_door(run_cli, client, tmp_path, model, value, fragment):
    """Before: the answer identical with grouped and per-query-head (vLLM 0.29, vLLM 0.2.4, TensorRT-LLM; batch 1 and
    64), exit 0."""
    four_door_refusal(run_cli, client, tmp_path, "infer", "inference",
                      {"model": model, "gpu": "h100", "decode_attention": value}, "decode_attention", fragment)


def test_8_decode_attention_moves_a_gqa_answer(run_json):
    """On a GQA model (llama-3-8b: 8 KV heads for 32 query heads) the per-query-head kernel reads the cache 4x."""
    args = ("infer", "--model", "llama-3-8b", "--gpu", "h100", "--no-search", "--batch", "64")
    grouped = run_json(*args, "--decode-attention", "grouped")["results"]["tpot"]
    per_head = run_json(*args, "--decode-attention", "per-query-head")["results"]["tpot"]
    assert per_head > grouped



@pytest.mark.parametrize("part, option", [("tpu-v5p", {"loss": "te-ce"}), ("tpu-v5p", {"finetune": "qlora"}),
                                          ("gaudi3", {"offload_layers": 2})])
def test_5_a_compared_part_that_does_not_run_the_option_is_refused(run_cli, client, tmp_path, part, option):
    """Before: the compared row printed, sized as if Transformer Engine / bitsandbytes ran there (as wave 18 refused
    a compared part with no path for the recipe's dtype, jobs.memory.schema._check_compared_recipe)."""
    (field, value), = option.items()
    four_door_refusal(run_cli, client, tmp_path, "memory", "memory",
                      {"model": "mixtral-8x7b", "gpu": "h100", "compare": f"h100,{part}", **option}, "compare",
                      f"does not run --{field.replace('_', '-')} {value} (")


@pytest.mark.parametrize("part, option", [("gaudi3", ("--finetune", "qlora")), ("ascend-910b", ("--finetune", "qlora")),
                                          ("mi300x", ("--loss", "te-ce")),
                                          ("tpu-v5p", ("--cuda-context-gib", "1"))])
def test_5_compared_parts_that_run_it_or_ignore_it_stay_answered(run_cli, part, option):
    code, out, err = run_cli("memory", "--model", "mixtral-8x7b", "--gpu", "h100", "--compare", f"h100,{part}",
                             *option)
    assert code == 0 and part in out, err
