"""The web API never opens a path, nor calls the Hub, for a `model` a request names (house rule): the request
model is the job's schema, whose first after-validator sets defaults the model implies (a learned position
table's sequence length, schema.model_fields.follow_learned_positions). Inside a request model that rule reads
the catalog or the pasted config only (web.models.door_learned_positions); before this fix the body check read
a config.json path twice and fetched a Hub id's config.json, then answered 'not in the catalog'."""

import json

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from gpuplan.adapters import hf_config, hub  # noqa: E402
from gpuplan.web import create_app  # noqa: E402

ENDPOINTS = ("training", "budget", "memory", "plan", "inference")  # every job whose schema has a model field
GPT2_CONFIG = {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
               "vocab_size": 50257}  # gpt2-shaped: learned positions, 1,024 rows


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(), raise_server_exceptions=False)


@pytest.fixture
def no_reads(monkeypatch):
    """Reading a config.json or fetching one from the Hub records the call and raises."""
    calls = []

    def refuse(what):
        def reader(*args, **kwargs):
            calls.append((what, args))
            raise RuntimeError(f"{what} called by the web API")
        return reader

    monkeypatch.setattr(hf_config, "load_hf_config", refuse("load_hf_config"))
    monkeypatch.setattr(hub, "fetch_config", refuse("hub.fetch_config"))
    return calls


@pytest.fixture
def gpt2_config_path(tmp_path):
    """A real gpt2-shaped config.json on disk (learned positions: the rule would read it on the CLI)."""
    path = tmp_path / "gpt2-like" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(GPT2_CONFIG), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("model", ["PATH", "someorg/somemodel-xyz"])
def test_a_path_or_hub_id_is_refused_without_being_read(client, no_reads, gpt2_config_path, endpoint, model):
    model = gpt2_config_path if model == "PATH" else model
    response = client.post(f"/api/{endpoint}", json={"model": model})
    assert no_reads == []
    assert response.status_code == 422, response.text[:300]
    data = response.json()
    assert data["field"] == "model" and "not in the catalog" in data["message"]
    assert "\n" not in data["message"] and "Traceback" not in response.text


@pytest.mark.parametrize("model", ["PATH", "someorg/somemodel-xyz"])
def test_the_patched_readers_are_the_ones_a_model_lookup_calls(no_reads, gpt2_config_path, model):
    """The control that lets `no_reads == []` above fail: outside the web API, adapters.resolve.model_config
    reaches the patched reader for the same two models (a path: load_hf_config; a Hub id: hub.fetch_config)."""
    from gpuplan.adapters.resolve import model_config

    model = gpt2_config_path if model == "PATH" else model
    with pytest.raises(RuntimeError, match="called by the web API"):
        model_config(model)
    assert [what for what, _ in no_reads] == ["load_hf_config" if model == gpt2_config_path else "hub.fetch_config"]


@pytest.mark.parametrize("endpoint", ["training", "memory", "plan"])
def test_a_catalog_gpt2_still_follows_its_table_at_the_door(client, no_reads, endpoint):
    """Not switched off: the body check reads 1,024 for gpt2, so global_batch_tokens 2,048 (two sequences; under
    the 4,096 default it would be refused at the door) is answered, as the CLI answers it."""
    body = {"model": "gpt2", "gpu": "h100", "gpus": 8, "global_batch_tokens": 2048, "tokens": "1B"}
    if endpoint == "memory":
        body = {"model": "gpt2", "gpu": "h100", "gpus": 8}
    response = client.post(f"/api/{endpoint}", json=body)
    assert response.status_code == 200, response.text[:300]
    assert no_reads == []
    assert any("gpt2's learned position table has 1,024 rows" in note for note in response.json()["notes"])


def test_a_pasted_gpt2_config_follows_its_table_at_the_door(client):
    """A pasted config.json is read from the body (never a file): its 1,024 learned positions set the sequence at
    the door as on the CLI, so global_batch_tokens 2,048 is answered (it was refused at the door: 'must hold at
    least one sequence of --seq-len 4,096 tokens', while the service, reading its own temporary copy of the pasted
    config, followed 1,024)."""
    config = GPT2_CONFIG
    body = {"config": config, "gpu": "h100", "gpus": 8, "tokens": "1B", "global_batch_tokens": 2048}
    response = client.post("/api/training", json=body)
    assert response.status_code == 200, response.text[:300]
    assert response.json()["results"]["mem_global_batch"] == 2  # 2,048 tokens of 1,024-token sequences
    # refused by the service's own check, one line; the door does not build it (its checks keep the 4,096 default)
    hostile = {"config": {**config, "n_layer": 10**9}, "gpu": "h100", "gpus": 8, "tokens": "1B"}
    response = client.post("/api/training", json=hostile)
    assert response.status_code == 422 and response.json()["field"] == "config.json: n_layer"
