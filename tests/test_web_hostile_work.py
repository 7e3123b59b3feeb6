"""Hostile plan requests on the JSON API: the `top` limit holds whatever JSON type it comes as,
searches too large for the API are refused before they run, and a plan answered 503 for time
stops at its next stage instead of holding its slot."""

import threading
import time

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from gpuplan.planner.search import MAX_EVALUATED
from gpuplan.web import bounds, create_app, limits, service  # noqa: E402

SMALL = 2048
POWERS = [8, 16, 32, 64, 128, 256, 512, 1024, 2048]
# framework generic: every ZeRO stage with every degree (Megatron's own rules, planner/framework_rules.py, leave
# 75k layouts, under the cap; the generic search keeps the 134k the sweep was refused for)
SWEEP = {"model": "deepseek-v3", "tokens": "11T", "gpu": "h100", "top": "100", "exhaustive": True, "gpus": POWERS,
         "framework": "generic"}


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(), raise_server_exceptions=False)


def refused(client, body, field, seconds=3.0):
    start = time.perf_counter()
    response = client.post("/api/plan", json=body)
    assert time.perf_counter() - start < seconds
    assert response.status_code == 422, response.text[:500]
    assert len(response.content) < SMALL
    data = response.json()
    assert data["field"] == field, data
    return data


def still_answers(client):
    assert client.get("/api/health").status_code == 200
    response = client.post("/api/memory", json={"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8})
    assert response.status_code == 200, response.text[:300]


@pytest.mark.parametrize("top", [101, "101", "1000", "1e3", 1000.0, "1K"])
def test_top_limit_holds_whatever_the_json_type(client, top):
    body = {"model": "llama-3.1-8b", "tokens": "1T", "gpu": "h100", "gpus": 64, "top": top}
    data = refused(client, body, "top")
    assert f"at most {bounds.MAX_API_TOP} over the API" in data["message"]


def test_top_at_the_limit_as_text_is_answered(client):
    body = {"model": "llama-3.1-8b", "tokens": "1T", "gpu": "h100", "gpus": 64, "top": "1e2"}
    response = client.post("/api/plan", json=body)
    assert response.status_code == 200, response.text[:300]
    ranked = [rows for title, rows in response.json()["tables"].items() if title.startswith("top ")]
    assert len(ranked) == 1 and 0 < len(ranked[0]) <= bounds.MAX_API_TOP


def test_reported_sweep_is_answered_in_seconds_and_the_server_still_answers(client):
    """The sweep's request (exhaustive deepseek-v3 over 9 GPU counts) held every slot for ~58 s; the
    API then refused it (at most 100,000 layouts exhaustive) while the CLI answers it: 134,410 layouts
    x 3 modes, under the one limit of every face (planner.search.MAX_EVALUATED), ~2 s on 2 cores."""
    assert refused(client, SWEEP | {"top": "1000"}, "top")["field"] == "top"  # top is checked first
    start = time.perf_counter()
    assert client.post("/api/plan", json=SWEEP).status_code == 200
    assert time.perf_counter() - start < 10
    still_answers(client)


def test_exhaustive_cap_counts_the_free_search_of_a_given_layout(client):
    """Every degree given: only the free search (to compare with) is past the limit, and says so."""
    body = {"model": "llama-2-7b", "global_batch_tokens": "1e12", "exhaustive": True, "tp": 1, "pp": 1, "cp": 1,
            "micro_batch": 1, "zero": 1}
    data = refused(client, body, "gpus", seconds=10)
    assert "the planner's free search (to compare your layout with) would evaluate " in data["message"]
    assert f"more than {MAX_EVALUATED:,}" in data["message"]


def test_pruned_search_too_large_is_refused(client):
    body = {"model": "deepseek-v3", "tokens": "11T", "gpu": "h100", "gpus": [8 * k for k in range(1, 257)],
            "framework": "generic"}
    data = refused(client, body, "gpus")
    assert f"the search would evaluate 1,483,235 layouts, more than {MAX_EVALUATED:,}" in data["message"]
    still_answers(client)


def test_small_exhaustive_search_is_answered(client):
    body = {"model": "llama-3.1-8b", "tokens": "1T", "gpu": "h100", "gpus": 64, "exhaustive": True}
    assert client.post("/api/plan", json=body).status_code == 200


def test_stopped_plan_ends_before_its_search():
    stop = threading.Event()
    stop.set()
    body = {"model": "llama-3.1-8b", "tokens": "1.01T", "gpu": "h100", "gpus": 64}
    with pytest.raises(limits.Stopped):
        service.estimate("plan", body, "en", None, stop)


def test_plan_answered_503_for_time_stops_and_frees_its_slot(client, monkeypatch):
    from gpuplan.jobs.plan import estimate

    real, ended = estimate.plan_report, []

    def slow_start(inputs, progress=None):
        time.sleep(0.5)  # past the request's (patched) time budget before the first stage
        try:
            report = real(inputs, progress)
        except limits.Stopped:
            ended.append("stopped")
            raise
        ended.append("finished")
        return report

    monkeypatch.setattr(estimate, "plan_report", slow_start)
    monkeypatch.setattr(limits, "REQUEST_SECONDS", 0.1)
    body = {"model": "llama-3.1-8b", "tokens": "1.02T", "gpu": "h100", "gpus": 64}
    response = client.post("/api/plan", json=body)
    assert response.status_code == 503 and len(response.content) < SMALL
    deadline = time.monotonic() + 4
    while not ended and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ended == ["stopped"]
    monkeypatch.setattr(limits, "REQUEST_SECONDS", 20.0)
    slots = client.app.state.estimate_slots
    assert slots.running == 0 and slots.waiting == 0  # every slot is free again
    still_answers(client)
