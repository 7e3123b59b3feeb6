"""Hostile inputs, wave 9 (2026-12-06): what a fresh sweep of the doors found (each refusal one line naming the
field and what is valid, exit status 2, 422 on the web, no traceback, no hang), and a pin that the web API parses
a request body once. The invariant sweep over valid inputs is tests/test_invariants_wave9.py.
"""

from pathlib import Path

import pytest
from helpers import field_refusal, web_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite
ROOT = Path(__file__).resolve().parents[1]


# ---- the body is parsed once: web/routes.py hands read_body's dict to Starlette's private Request._json ------

def test_a_request_body_is_parsed_once(client, monkeypatch):
    """routes.StrictBodyRoute sets ``request._json`` so that Starlette's Request.json() (which FastAPI calls to
    validate the body) answers the dict read_body parsed. Should a Starlette release rename ``_json``, the body
    would silently be parsed twice (json.loads once in read_body, once in Request.json): counted here."""
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

    original = routes.read_body
    monkeypatch.setattr(routes, "read_body", lambda raw, kind: original(raw, kind) | {"gpus": 8})
    response = client.post("/api/memory", content=b'{"model": "llama-3.1-8b", "gpu": "h100", "gpus": [[]]}',
                           headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text[:300]


# ---- found by the sweep: a refusal that formatted a GPU count nobody gave --------------------------------

@pytest.mark.parametrize("command", ["train", "budget"])
def test_no_completing_count_without_gpus_is_one_line(run_cli, command):
    """`train deepseek-v3 --tp 8 --global-batch-tokens 1e12` (no --gpus): a step of 244M sequences outlasts the
    time between failures on every count searched; jobs.plan.completes._asked formatted the --gpus not given
    ('internal error: TypeError: unsupported format string passed to NoneType.__format__', exit 70). Now the
    refusal names the counts searched."""
    line = field_refusal(run_cli(command, "deepseek-v3", "--recipe", "article", "--tp", "8", "--global-batch-tokens",
                                 "1e12"), "gpus", "completes with failures")
    assert "got '768-" in line, line


def test_no_completing_count_without_gpus_is_a_422(client):
    response = client.post("/api/training", json={"model": "deepseek-v3", "recipe": "article", "tp": 8,
                                                  "global_batch_tokens": 1e12})
    web_refusal(response, "gpus", "completes with failures")


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
                      "--no-search")
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
    line = field_refusal(run_cli("train", str(plan)), "config.json: model_type", "gpuplan's fields (model, gpus)")
    assert ".yaml, .yml, .toml" in line and "dbrx" not in line, line


def test_a_slow_inference_is_told_what_narrows_it(client, monkeypatch):
    """Past the web's time budget an estimate is answered 503 with what would narrow it: an inference request (no
    GPU counts, no top) was told 'fewer GPU counts, a smaller top'. Here the budget is cut to 1 ms."""
    import gpuplan.web.limits as limits

    monkeypatch.setattr(limits, "REQUEST_SECONDS", 0.001)
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
    estimate_inference({"model": "llama-3.1-8b", "quantization": "int4", "context": "2M"})
    assert len(timed) > 10 and all(timed), timed


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
    assert 0 < len(calls) <= 60, len(calls)


def test_a_full_depth_measurement_of_thousands_of_layers_is_refused_at_once(run_cli, tmp_path):
    """`gpuplan measure config.json` of a valid config with 10,000 layers (config.json's bound) builds and runs every
    layer under fake tensors, ~0.2 s a layer: past 30 minutes and 1.5 GB. Now at most 256 layers in full (twice the
    deepest catalog model, 126), and the line offers --depths to extrapolate."""
    import json

    config = json.loads((ROOT / "examples" / "llama-2-7b" / "config.json").read_text()) | {"num_hidden_layers": 10000}
    (tmp_path / "config.json").write_text(json.dumps(config))
    line = field_refusal(run_cli("measure", str(tmp_path / "config.json")), "depths", "give --depths, e.g. 2,4")
    assert "10,000 layers" in line, line
