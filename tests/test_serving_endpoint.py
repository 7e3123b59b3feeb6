"""The ``endpoint`` input (review w9 r1 M1): the OpenAI endpoint a served request reaches, on the serving
setup (setup.Runtime.endpoint) so that every door (CLI, plan file, web API, Python API) and ``validate`` read
one server hold (request_path.server_hold_seconds).

- vLLM 0.11.0's chat endpoint parses the chat template again for every request (entrypoints/chat_utils.py@
  v0.11.0:1575-1599): + request_path.CHAT_TEMPLATE_REPARSE_S (11 ms) of TTFT; 0.11.1 and 0.23 cache the parse
  (chat_utils.py@v0.11.1:1523-1535; renderers/hf.py@v0.23.0:606-617): + 0.
- gpustack's vLLM 0.11.0 row (vllm bench serve --backend openai-chat --endpoint /v1/chat/completions; row field
  ``endpoint: chat``) scores the same TTFT as ``gpuplan infer --endpoint chat`` with the row's inputs.
- Anything else is refused in one line naming the field and the values (exit 2 at the CLI, 422 at the web).
"""

import pytest

from gpuplan.core.serving import request_path as RP
from gpuplan.core.serving import setup as SU
from gpuplan.errors import InputError
from gpuplan.jobs.validation import inference as VI

GPUSTACK = "gpustack-vllm0110-qwen3-8b-h100-sharegpt-c1"
ARGS = dict(model="qwen3-8b", gpu="h100", tp=1, batch=1, prompt=233, output_tokens=221)


def _ttft(**kw) -> float:
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs
    return estimate_inference(InferenceInputs(search=False, **{**ARGS, **kw})).line("ttft").value


def _row(row_id: str) -> dict:
    found = [e for section in VI.reference_measurements().values() if isinstance(section, list)
             for e in section if isinstance(e, dict) and e.get("id") == row_id]
    assert len(found) == 1, row_id
    return found[0]


@pytest.mark.parametrize("release, parse", [("vllm==0.11.0", 0.011)])
def test_the_endpoints_differ_by_the_parse_only(release, parse):
    """Under the other releases and engines --endpoint chat changes nothing and is refused (hostile wave 20,
    schema.serving_rules.check_endpoint; tests/test_hostile_w20.py)."""
    chat, completions = _ttft(engine=release, endpoint="chat"), _ttft(engine=release)
    assert chat - completions == pytest.approx(parse, abs=1e-12)


def test_completions_is_the_default_and_the_hold_is_read_from_the_runtime():
    assert SU.Runtime().endpoint == "completions"
    assert _ttft(engine="vllm==0.11.0") == _ttft(engine="vllm==0.11.0", endpoint="completions")
    chat = SU.Runtime(engine="vllm", version=(0, 11, 0), endpoint="chat")
    assert RP.server_hold_seconds(chat) == pytest.approx(0.002 + 0.011, rel=1e-12)  # window + parse
    assert RP.server_hold_seconds(SU.Runtime(engine="vllm", version=(0, 11, 0))) == pytest.approx(0.002, rel=1e-12)


def test_validate_scores_gpustack_as_infer_answers_it():
    """The row's inputs (qwen3-8b bf16 on one H100 SXM, vLLM 0.11.0, 233 / 221 tokens, chat endpoint) through
    infer give validate's prediction exactly (23.55 ms: 10.2 ms of prefill + 2 ms window + 11 ms parse + 233 x
    1.4 us tokenising, 0.33 ms; 23.2 ms before review w11 r3 M2)."""
    e = _row(GPUSTACK)
    assert e["endpoint"] == "chat" and e["client"] == "vllm bench serve"
    ttft = VI._online_cases(e)[0]
    assert ttft[0].endswith("-ttft")
    infer = _ttft(engine="vllm==0.11.0", endpoint="chat")
    assert ttft[3] == pytest.approx(infer, rel=1e-12)
    assert infer == pytest.approx(23.55e-3, abs=0.05e-3)


def test_rows_name_client_and_endpoint_in_fields_not_in_the_note():
    """The engine note no longer decides: a note quoting the chat endpoint leaves a completions row as it is."""
    e = _row("wmx-vllm023-qwen2.5-0.5b-l4-256-128-c1")
    quoted = {**e, "engine": e["engine"] + "; not /v1/chat/completions, not openai-chat"}
    assert VI._online_cases(quoted)[0][3] == VI._online_cases(e)[0][3]
    with pytest.raises(InputError, match="endpoint: got 'generate'; must be one of completions, chat"):
        VI._online_cases({**e, "endpoint": "generate"})
    with pytest.raises(InputError, match="client: got 'locust'; must be one of sglang.bench_serving"):
        VI._online_cases({**e, "client": "locust"})
    with pytest.raises(InputError, match="client: got None"):
        VI._online_cases({k: v for k, v in e.items() if k != "client"})


def test_every_online_row_names_its_client():
    rows = [e for e in VI.reference_measurements()["online"]]
    assert len(rows) == 17
    assert all(e["client"] in VI.ONLINE_CLIENTS for e in rows)
    assert [e["id"] for e in rows if e.get("endpoint") == "chat"] == [GPUSTACK]


def test_cli_refuses_a_bad_endpoint(run_cli):
    code, out, err = run_cli("infer", "--model", "qwen3-8b", "--gpu", "h100", "--no-search", "--endpoint", "chats")
    assert code == 2 and not out
    assert err.strip() == "error: endpoint: got 'chats'; must be one of completions, chat"


def test_cli_chat_endpoint_shows_the_parse(run_cli):
    code, out, err = run_cli("infer", "--model", "qwen3-8b", "--gpu", "h100", "--no-search", "--tp", "1",
                             "--batch", "1", "--prompt", "233", "--engine", "vllm==0.11.0", "--endpoint", "chat",
                             "--full")
    assert code == 0, err
    # 2 ms window + 11 ms parse + 233 x 1.4 us = 0.326 ms tokenising (vLLM's API server, review w11 r3 M2)
    assert "13.3 ms (tokeniser batch window + 11 ms chat-template parse + tokenising the 233-token prompt)" in out


def test_web_api_takes_the_endpoint_and_refuses_a_bad_one():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app
    client = TestClient(create_app())
    body = {"model": "qwen3-8b", "gpu": "h100", "tp": 1, "batch": 1, "prompt": 233, "output_tokens": 221,
            "engine": "vllm==0.11.0", "search": False}
    ttfts = [client.post("/api/inference", json={**body, "endpoint": endpoint}).json()["results"]["ttft"]
             for endpoint in ("completions", "chat")]
    assert ttfts[1] - ttfts[0] == pytest.approx(0.011, abs=1e-12)
    assert ttfts[1] == pytest.approx(_ttft(engine="vllm==0.11.0", endpoint="chat"), rel=1e-12)
    response = client.post("/api/inference", json={**body, "endpoint": "v1/chat"})
    assert response.status_code == 422
    assert response.json()["field"] == "endpoint"
    assert "must be one of completions, chat" in response.json()["message"]
