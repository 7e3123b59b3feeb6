"""Hostile inputs, wave 9 (2026-12-06): what a fresh sweep of the doors found (each refusal one line naming the
field and what is valid, exit status 2, 422 on the web, no traceback, no hang), and a pin that the web API parses
a request body once. The invariant sweep over valid inputs is tests/test_invariants_wave9.py.
"""

import time
from pathlib import Path

import pytest
from helpers import field_refusal, web_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite
ROOT = Path(__file__).resolve().parents[1]


# ---- the body is parsed once: web/routes.py hands read_body's dict to FastAPI (routes.CheckedBody.json) ------

def test_a_request_body_is_parsed_once(client, monkeypatch):
    """routes.StrictBodyRoute hands FastAPI a CheckedBody whose json() (which FastAPI calls to validate the body)
    answers the dict read_body parsed (it set Starlette's private ``request._json`` before the ninth session). A
    second parse (json.loads once in read_body, once in Request.json) is counted here."""
    import json as json_module

    body = b'{"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8}'
    original, texts = json_module.loads, []

    def counted(text, *args, **kwargs):
        texts.append(text)
        return original(text, *args, **kwargs)

    monkeypatch.setattr(json_module, "loads", counted)
    response = client.post("/api/memory", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text[:300]
    assert sum(1 for text in texts if text in (body, body.decode())) == 1, texts


def test_fastapi_validates_the_dict_read_body_returned(client, monkeypatch):
    """The same pin by what is validated, whatever parser Starlette uses: read_body's dict (here with the GPU
    count the text lacks) is what FastAPI checks; a second parse of the text would see 'gpus': 'eight' and 422."""
    import gpuplan.web.routes as routes

    original = routes.read_body  # the stub passes read_body's arguments on, whatever they are (a7815d8 added `known`)
    monkeypatch.setattr(routes, "read_body", lambda *args: original(*args) | {"gpus": 8})
    response = client.post("/api/memory", content=b'{"model": "llama-3.1-8b", "gpu": "h100", "gpus": [[]]}',
                           headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text[:300]


# ---- found by the sweep: a refusal that formatted a GPU count nobody gave --------------------------------

# --failure-rate 3e-5 (inside the default's cited range, 1.22e-5..3.39e-5): since the experts are split by expert TP
# (etp = tp under Megatron-Core, core.expert_layout) the 768-GPU step is 36 days, no longer past the default rate's cut
DEEPSEEK_1E12 = ("deepseek-v3", "--recipe", "article", "--tp", "8", "--failure-rate", "3e-5", "--global-batch-tokens",
                 "1e12")


@pytest.mark.parametrize("command", ["train", "budget", "plan"])
@pytest.mark.parametrize("gpus", [(), ("--gpus", "768")])
def test_a_step_longer_than_the_failures_names_the_batch_on_both_doors(run_cli, command, gpus):
    """`train deepseek-v3 --tp 8 --global-batch-tokens 1e12`: a 46-day step (one step floors the checkpoint
    interval) against an MTBI of days at 768 GPUs; with a fixed batch the step and the MTBI both scale as 1/GPUs,
    so no count completes. Wave 9 first formatted a --gpus nobody gave (TypeError), then named `gpus`, quoted the
    searched span as given and advised 'fewer GPUs' (768 is the smallest count that fits); with --gpus 768 train
    answered 92.89 days and budget 119,729,289 days with failures. Both doors now refuse by one test
    (jobs.plan.completes) naming the batch, with the largest step that completes (exp(50) x MTBI less the stall,
    at the layouts' throughput: ~9.8e11-9.95e11 tokens) and without 'fewer GPUs'. Review w10 r4 M1: that bound's
    batch answered ~e^50 x its failure-free time; the batch offered is now held within twice it (6.6816e10 on
    768 GPUs), or none is offered where no re-run answers within twice (the searched span)."""
    if command == "plan" and not gpus:
        pytest.skip("plan's default search is train's (jobs.training.layout.layout_for_deadline)")
    line = field_refusal(run_cli(command, *DEEPSEEK_1E12, *gpus), "global_batch_tokens", "completes with failures")
    assert "fewer GPUs" not in line and "at most 9." not in line, line
    assert ("tokens a step, the largest batch whose expected time with failures is at most twice the failure-free "
            "time" in line or "no offer: " in line and "did not complete within twice" in line), line


@pytest.mark.parametrize("command", ["train", "budget"])
def test_a_batch_under_the_bound_answers(run_json, command):
    """The remedy the refusal offers is one that answers: 1e11 tokens a step (under the ~9.9e11 bound)."""
    data = run_json(command, *DEEPSEEK_1E12[:-1], "1e11")
    assert 0 < data["results"]["gpus"] <= 131_072


def test_a_count_range_is_told_fewer_gpus_and_named(run_cli):
    """Where the user chose the counts (plan --gpus 8,388,608-10,000,000 of llama-3.1-405b: the restart outlasts the
    MTBI, no step does), `gpus` is named as given and fewer GPUs can help."""
    line = field_refusal(run_cli("plan", "llama-3.1-405b", "--gpu", "h100", "--gpus", "8388608-10000000"), "gpus",
                         "completes with failures")
    assert "got '8,388,608-10,000,000'" in line and "fewer GPUs" in line, line


@pytest.mark.parametrize("gpus", [{}, {"gpus": 768}])
def test_a_step_longer_than_the_failures_is_a_422_naming_the_batch(client, gpus):
    # /api/budget: the job that takes --failure-rate (DEEPSEEK_1E12's 3e-5); train's default rate completes now
    response = client.post("/api/budget", json={"model": "deepseek-v3", "recipe": "article", "tp": 8,
                                                "failure_rate": 3e-5, "global_batch_tokens": 1e12, **gpus})
    web_refusal(response, "global_batch_tokens", "completes with failures")


@pytest.mark.parametrize("command", ["train", "budget"])
@pytest.mark.parametrize("gpus, days", [("8", "0.001"), ("1000", "1min")])
def test_a_deadline_of_seconds_on_given_gpus_is_the_mfu_refusal(run_cli, command, gpus, days):
    """GPUs and days given: the MFU refusal offers the GPUs that would do (timing.gpus_within, from the proportional
    guess gpus x MFU / ceiling). For 86 s on 8 A100s that guess is ~10^20 GPUs, handed to the planner: 'internal
    error: OverflowError: Python int too large to convert to C long' (exit 70). Now a count past the 10,000,000
    --gpus takes is not laid out, and the line says no count up to it does."""
    line = field_refusal(run_cli(command, "llama-2-7b", "--gpus", gpus, "--days", days), "gpus/days",
                         "no GPU count up to 10,000,000")
    assert "above" in line and "MFU" in line, line


# ---- found by the sweep: a prefill split into millions of chunks (a hang) --------------------------------

def test_a_prefill_of_millions_of_chunks_is_refused_at_once(run_cli):
    """`infer --context 16M --prefill-tokens 1 --max-num-seqs 1 --no-search` (valid to vLLM: a 1-token budget) timed
    16,777,216 prefill chunks, one roofline step each (~20 us): past 2 minutes on one setup, hours with the search.
    Now at most 8,192 chunks (2^24 / vLLM's smallest default budget, 2,048: every default passes), the budget that
    would do named."""
    line = field_refusal(run_cli("infer", "pythia-70m", "--gpu", "h200", "--context", "16M", "--max-num-seqs", "1",
                                 "--prefill-tokens", "1", "--no-search"), "prefill_tokens", "at least 2,048 tokens")
    assert "more than 8,192 prefill chunks" in line, line


def test_a_prefill_at_the_chunk_bound_is_answered(run_json):
    answer = run_json("infer", "pythia-70m", "--gpu", "h200", "--context", "4M", "--prefill-tokens", "512",
                      "--no-search", "--engine", "trtllm")  # vLLM refuses a context past pythia's 2,048
    assert answer["results"]["ttft"] > 0


def test_a_prefill_of_millions_of_chunks_is_a_422(client):
    response = client.post("/api/inference", json={"model": "pythia-70m", "gpu": "h200", "context": "16M",
                                                   "max_num_seqs": 1, "prefill_tokens": 1})
    web_refusal(response, "prefill_tokens", "prefill chunks")


# ---- a YAML merge key names itself -------------------------------------------------------------------------

@pytest.mark.parametrize("merge", ["<<: {gpus: 8}", "<<: [{gpus: 8}, {days: 30}]"])
def test_a_yaml_merge_key_is_named(run_cli, tmp_path, merge):
    """YAML's merge key (no anchor needed: `<<: {gpus: 8}`) was refused in PyYAML's words, 'could not determine a
    constructor for the tag tag:yaml.org,2002:merge'; now the line names the key and what to do."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"model: llama-3.1-8b\n{merge}\n")
    line = field_refusal(run_cli("train", str(plan)), "plan file", "the merge key '<<' is not accepted")
    assert "line 2" in line and "constructor" not in line, line


def test_a_plan_written_as_json_is_told_apart_from_a_model_config(run_cli, tmp_path):
    """`gpuplan train plan.json` with {"model": ..., "gpus": 8}: a .json target is a model's config.json, and this one
    was refused as 'config.json: model_type: got no value; supported: dbrx, ...' (22 model types), which says nothing
    of the plan the user wrote. Now the line says it holds gpuplan's fields and that a plan file is YAML or TOML."""
    plan = tmp_path / "plan.json"
    plan.write_text('{"model": "llama-3.1-8b", "gpus": 8}')
    line = field_refusal(run_cli("train", str(plan)), f"{plan}: model_type", "gpuplan's fields (model, gpus)")
    assert ".yaml, .yml, .toml" in line and "dbrx" not in line, line


def test_a_slow_inference_is_told_what_narrows_it(client, monkeypatch):
    """Past the web's time budget an estimate is answered 503 with what would narrow it: an inference request (no
    GPU counts, no top) was told 'fewer GPU counts, a smaller top'. Here the budget is cut to 1 ms."""
    import gpuplan.web.limits as limits
    import gpuplan.web.service as service

    monkeypatch.setattr(limits, "REQUEST_SECONDS", 0.001)
    # an empty result cache: under xdist another test on this worker may have asked the same (answered 200 from the
    # cache at once, whatever the budget; CI stop 55 on a 4-worker host)
    monkeypatch.setattr(service, "_CACHE", service._LRU(service.CACHE_SIZE))
    # and an estimate that surely outlasts the budget: on a loaded host the worker thread could finish before the
    # event loop ran the 1 ms timeout, and Python 3.11's asyncio.wait_for then returns the finished result (200)
    estimate = service.estimate
    monkeypatch.setattr(service, "estimate", lambda *args: (time.sleep(0.2), estimate(*args))[1])
    response = client.post("/api/inference", json={"model": "pythia-70m", "gpu": "h200", "context": "64K"})
    assert response.status_code == 503, response.text[:300]
    message = response.json()["message"]
    assert '"search": false' in message and "GPU counts" not in message, message


def test_the_serving_search_times_only_the_setups_it_keeps(monkeypatch):
    """jobs.inference.serving.search_configurations timed every (GPU, TP) tried and dropped those whose KV cache does
    not hold the batch: at a 16M-token context (~8,000 prefill chunks a setup) pythia-70m took 31.5 s, 71 of its 99
    setups timed for nothing (now 6.3 s). Here (2M, int4) every setup timed is one the search keeps."""
    import gpuplan.jobs.inference.serving as serving
    from gpuplan import estimate_inference

    timed, original = [], serving.evaluate

    def spied(plan, gpu, tp, pp, batch):
        result = original(plan, gpu, tp, pp, batch)
        timed.append(result.max_sequences >= batch)
        return result

    monkeypatch.setattr(serving, "evaluate", spied)
    estimate_inference({"model": "llama-3.1-8b", "quantization": "int4", "context": "2M", "engine": "sglang"})  # vLLM: <= 128K
    assert len(timed) > 10 and all(timed), timed  # > 10: the spy saw the search (not vacuous over an empty list)


def test_the_sizing_search_times_no_replica_twice(monkeypatch):
    """jobs.inference.sizing._tp_steps called evaluate() for a replica's KV capacity, which timed three prefills it
    never read (_step_times times the one used): `--prompt 8M --disaggregate` took 40.9 s (now 1.95 s). The sizing
    reads serving.max_sequences_at; evaluate() is left to the answer's search (35 calls here, 298 before)."""
    import gpuplan.jobs.inference.serving as serving
    import gpuplan.jobs.inference.sizing as sizing
    from gpuplan import estimate_inference

    calls, original = [], serving.evaluate

    def counted(*args, **kwargs):
        calls.append(args[2])
        return original(*args, **kwargs)

    monkeypatch.setattr(serving, "evaluate", counted)
    if hasattr(sizing, "evaluate"):  # the parent's sizing imported it by name
        monkeypatch.setattr(sizing, "evaluate", counted)
    estimate_inference({"model": "llama-3.1-8b", "rps": 20, "ttft_p99": "500ms", "tpot": "50ms", "prompt": "2K",
                        "output_tokens": 512, "disaggregate": True})
    assert 0 < len(calls) <= 60, len(calls)  # 35 counted now: 60 leaves room for a new setup, far under the 298


def test_a_full_depth_measurement_of_thousands_of_layers_is_refused_at_once(run_cli, tmp_path):
    """`gpuplan measure config.json` of a valid config with 10,000 layers (config.json's bound) builds and runs every
    layer under fake tensors, ~0.2 s a layer: past 30 minutes and 1.5 GB. Now at most 256 layers in full (twice the
    deepest catalog model, 126), and the line offers --depths to extrapolate."""
    import json

    config = json.loads((ROOT / "examples" / "llama-2-7b" / "config.json").read_text()) | {"num_hidden_layers": 10000}
    (tmp_path / "config.json").write_text(json.dumps(config))
    line = field_refusal(run_cli("measure", str(tmp_path / "config.json")), "depths", "give --depths, e.g. 2,4")
    assert "10,000 layers" in line, line


@pytest.mark.parametrize("job, body", [("training", {"model": "llama-3.1-8b"}), ("budget", {"model": "llama-3.1-8b"}),
                                       ("memory", {"model": "llama-3.1-8b", "gpus": 8})])
def test_a_slow_training_budget_or_memory_is_told_its_own_fields(client, monkeypatch, job, body):
    """Review w9 S2: only inference had its own hint; training, budget and memory were told 'fewer GPU counts, a
    smaller top' (plan's fields). Every job now has an entry (a KeyError, not a silent fallback, for a new one)."""
    import gpuplan.web.limits as limits
    from gpuplan.jobs import JOBS

    import time

    import gpuplan.web.service as service

    assert set(limits.NARROWER) == set(JOBS)
    monkeypatch.setattr(limits, "REQUEST_SECONDS", 0.05)
    monkeypatch.setattr(service, "estimate", lambda *args: time.sleep(0.5))  # memory answers in < 1 ms once warm
    monkeypatch.setattr(service, "cached", lambda key: None)  # an earlier test's answer is kept (web/routes.py)
    response = client.post(f"/api/{job}", json={**body, "gpu": "h100"})
    assert response.status_code == 503, response.text[:300]
    message = response.json()["message"]
    assert limits.NARROWER[job] in message and "top" not in message, message


def test_a_tuple_layer_types_is_refused_after_its_list_was_built():
    """Review w9 S1: spec_of_config's cache key was the config's JSON text, which a tuple shares with its list: a
    Gemma 2 config with layer_types as a list was built and kept, and the same config with a tuple (refused cold:
    'must be a list of 42 layer types') was then served from the cache. A config that is not JSON-native is now
    built each time, so the tuple is refused whatever came before."""
    from gpuplan.adapters import resolve as R
    from gpuplan.catalog import model_entry
    from gpuplan.errors import InputError

    config = dict(model_entry("gemma-2-9b")["config"])
    kinds = ["sliding_attention", "full_attention"] * (config["num_hidden_layers"] // 2)
    R._kept_spec.cache_clear()
    listed = R.spec_of_config({**config, "layer_types": list(kinds)}, "gemma-2 listed")
    # the spec names a kind without config.json's '_attention' suffix ('sliding', 'full'), so the first half of the
    # old `== tuple(kinds) or len(...)` could never hold; the list is read in order, one kind a layer
    assert len(listed.layer_types) == len(kinds)
    assert listed.layer_types == tuple(kind.removesuffix("_attention") for kind in kinds), listed.layer_types[:4]
    with pytest.raises(InputError) as refused:
        R.spec_of_config({**config, "layer_types": tuple(kinds)}, "gemma-2 listed")
    assert "layer_types" in str(refused.value) and "list" in str(refused.value), str(refused.value)
    R.spec_of_config({1: 0, **config}, "gemma-2 int key")  # a non-text key: built, never kept
    assert R._kept_spec.cache_info().currsize == 1


def test_a_deadline_no_count_meets_is_refused_without_a_diverged_count(run_cli):
    """Review w9 S3: `train llama-3.1-405b --gpu h100 --tokens 15T --days D` printed the failure loop's diverging
    iterate as 'the budget needs N GPUs': 15,482,691 for 2 days, 22,307,644,047,868 for 3, 41,363,034 for 10, while
    30 days answered 58,368. A count is now printed only as the failure-free need (proportional to 1/days: --days
    0.001 and 0.002 need 1,281,879,766 and 640,939,883, twice as many for half the time); where failures make every
    count miss, the line says no count up to 10,000,000 does, with the fastest (~17.6 days on settle's guessed
    layout), and a deadline past it answers."""
    import re

    needs = {}
    for days in ("0.001", "0.002", "2", "3", "10", "17"):
        line = field_refusal(run_cli("train", "llama-3.1-405b", "--gpu", "h100", "--tokens", "15T", "--days", days),
                             "days")
        counts = re.findall(r"needs ([\d,]+) GPUs at 40% MFU before failures", line)
        if counts:
            needs[float(days)] = int(counts[0].replace(",", ""))
        else:
            assert "no GPU count up to 10,000,000 meets it" in line and "fastest is about 17." in line, line
    assert sorted(needs) == [0.001, 0.002] and needs[0.001] >= 2 * needs[0.002] - 1, needs
    code, out, err = run_cli("train", "llama-3.1-405b", "--gpu", "h100", "--tokens", "15T", "--days", "20")
    assert code == 0, err


@pytest.mark.parametrize("context, refused", [("4194304", False), ("4194816", True)])
def test_the_prefill_chunk_bound_is_8192_exactly(run_cli, context, refused):
    """Review w9 N1: the bound's only test was 16M / 1. At 512 tokens a step, 4,194,304 = 8,192 x 512 tokens is
    answered and 4,194,816 = 8,193 x 512 refused, naming 513 tokens a step (ceil(4,194,816 / 8,192))."""
    args = ("infer", "pythia-70m", "--gpu", "h100", "--context", context, "--prefill-tokens", "512", "--no-search",
            "--engine", "trtllm")  # vLLM refuses a context past pythia's 2,048 (test_hostile_w25)
    if refused:
        line = field_refusal(run_cli(*args), "prefill_tokens", "more than 8,192 prefill chunks")
        assert "at least 513 tokens per step" in line, line
    else:
        code, _, err = run_cli(*args)
        assert code == 0, err
