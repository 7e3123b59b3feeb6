"""The web routes hand FastAPI the body read_body checked through a Request subclass whose public json() answers
it (web/routes.CheckedBody, FastAPI's documented custom Request pattern), not by writing Starlette's private
Request._json (closing note s8 leftovers); and the time-out hint is found by the job's name given by keyword
(web/limits.guarded's ``job``), not by guessing that the first positional argument is one."""

import asyncio
import types

import pytest


def test_the_body_is_validated_without_starlettes_json_cache(client, monkeypatch):
    """Starlette's Request.json() made to fail: the parent's route set ``request._json`` and FastAPI then called
    that method (500); the checked request answers json() itself, so the estimate is answered."""
    from starlette.requests import Request

    async def private_cache(self):
        raise AssertionError("Starlette's Request.json (its private _json cache) was read")

    monkeypatch.setattr(Request, "json", private_cache)
    response = client.post("/api/memory", content=b'{"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8}',
                           headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text[:300]


def test_the_time_out_hint_is_the_named_jobs(monkeypatch):
    """guarded(app, fn, *args, job=...) names the job: the 503's hint is NARROWER[job] whatever fn's arguments are
    (the parent read args[0], so a work function whose first argument is not the job name raised KeyError)."""
    import gpuplan.web.limits as limits

    monkeypatch.setattr(limits, "REQUEST_SECONDS", 0.05)
    app = types.SimpleNamespace(state=types.SimpleNamespace())

    def slow(payload, stop):
        stop.wait(1.0)

    with pytest.raises(limits.Busy) as refused:
        asyncio.run(limits.guarded(app, slow, {"not": "a job name"}, job="memory"))
    assert limits.NARROWER["memory"] in str(refused.value)
