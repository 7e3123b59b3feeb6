"""Hostile request bodies on the JSON API: deep nesting, lone surrogates, duplicate keys, bodies
that are not one JSON object, and huge values are each one 422 naming the field (or `body`),
never a 500, and the error body stays small (no value echoed whole)."""

import json
import time

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from gpuplan.web import create_app  # noqa: E402
from gpuplan.web.body import MAX_DEPTH  # noqa: E402

ESTIMATORS = ["training", "budget", "memory", "plan", "inference"]
SMALL = 2048  # bytes: an error body never grows with the request


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(), raise_server_exceptions=False)


def post(client, job, content, content_type="application/json"):
    headers = {"content-type": content_type} if content_type else {}
    start = time.perf_counter()
    response = client.post(f"/api/{job}", content=content, headers=headers)
    assert time.perf_counter() - start < 5
    assert response.status_code == 422, response.text[:500]
    assert len(response.content) < SMALL, len(response.content)
    data = response.json()
    assert data["message"].startswith(f"{data['field']}: ")
    return data


def nested(depth: int) -> str:
    """A value of ``depth`` nested lists (the body object adds one more level)."""
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("job", ESTIMATORS)
def test_field_nested_900_deep_is_422_naming_it(client, job):
    data = post(client, job, '{"model": "llama-3.1-8b", "gpu": ' + nested(900) + "}")
    assert data["field"] == "gpu"
    assert f"at most {MAX_DEPTH} levels" in data["message"]
    assert data["detail"][0]["loc"] == ["body", "gpu"]


def test_nesting_limit_is_exact_and_deeper_than_the_parser_names_the_body(client):
    at_limit = post(client, "memory", '{"model": "llama-3.1-8b", "gpu": ' + nested(MAX_DEPTH - 1) + "}")
    assert at_limit["field"] == "gpu" and "nested" not in at_limit["message"]  # the schema's own error
    over = post(client, "memory", '{"model": "llama-3.1-8b", "gpu": ' + nested(MAX_DEPTH) + "}")
    assert over["field"] == "gpu" and "nested too deeply" in over["message"]
    in_config = post(client, "memory", '{"config": {"a": {"b": ' + nested(40) + "}}}")
    assert in_config["field"] == "config" and "nested too deeply" in in_config["message"]
    parser_refuses = post(client, "memory", '{"gpu": ' + nested(10_000) + "}")  # the JSON parser's own limit
    assert parser_refuses["field"] == "body" and "nested too deeply" in parser_refuses["message"]


@pytest.mark.parametrize("job", ESTIMATORS)
def test_lone_surrogate_is_422_naming_the_field(client, job):
    data = post(client, job, '{"model": "llama-3.1-8b", "gpu": "\\ud800"}')
    assert data["field"] == "gpu"
    assert "lone surrogate" in data["message"] and "\\ud800" in data["message"]


@pytest.mark.parametrize("body, field", [
    ('{"model": "llama-3.1-8b", "gpu": "h100\\udfff"}', "gpu"),
    ('{"model": "llama-3.1-8b", "\\ud800": "h100"}', "body"),  # in a key: the key cannot name it
    ('{"config": {"model_type": "llama", "name": ["\\udc00"]}}', "config"),
])
def test_lone_surrogate_anywhere_is_422(client, body, field):
    assert post(client, "memory", body)["field"] == field


@pytest.mark.parametrize("job", ESTIMATORS)
def test_duplicate_keys_are_422_naming_the_key(client, job):
    data = post(client, job, '{"model": "llama-3.1-8b", "gpu": "h100", "gpu": "a100"}')
    assert data["field"] == "gpu"
    assert "more than once" in data["message"]


def test_duplicate_key_inside_a_pasted_config_is_422(client):
    data = post(client, "memory", '{"config": {"hidden_size": 4096, "hidden_size": 8192}}')
    assert data["field"] == "body" and "'hidden_size' twice" in data["message"]


@pytest.mark.parametrize("content", [b"{abc", b'{"model": "llama-3.1-8b",', b"\xff\xfe\x00{"])
# (5,000 digits is valid JSON: the field's line since review w8 r2, tests/test_hostile_wave8.py)
def test_body_that_is_not_json_names_the_body(client, content):
    data = post(client, "memory", content)
    assert data["field"] == "body"
    assert "is not valid JSON" in data["message"] and "JSON object" in data["message"]
    assert data["detail"][0]["loc"] == ["body"]


@pytest.mark.parametrize("content, content_type, kind", [
    (b"[1, 2]", "application/json", "array"),
    (b'"x"', "application/json", "string"),
    (b"null", "application/json", "null"),
    (b"5", "application/json", "number"),
    (b"true", "application/json", "boolean"),
    (b"", "application/json", "empty"),
    (b"   ", "application/json", "empty"),
    (b'{"model": "llama-3.1-8b"} ' + b"y" * 10_000, "text/plain", "Content-Type"),
    (b'{"model": "llama-3.1-8b"}', None, "Content-Type"),
    (b'{"model": "llama-3.1-8b"}', "application/x-www-form-urlencoded", "Content-Type"),
])
def test_body_that_is_not_an_object_names_the_body(client, content, content_type, kind):
    data = post(client, "memory", content, content_type)
    assert data["field"] == "body"
    assert kind in data["message"] and "JSON object" in data["message"]
    assert "y" * 81 not in json.dumps(data)


def test_huge_unknown_field_is_echoed_as_a_short_prefix(client):
    data = post(client, "inference", json.dumps({"pad": "x" * 200_000}))
    assert data["field"] == "pad" and "unknown field" in data["message"]
    assert "x" * 80 + "…" in data["message"] and "x" * 81 not in json.dumps(data)
    assert all("input" not in item for item in data["detail"])


@pytest.mark.parametrize("body, field", [
    ({"model": "z" * 200_000, "gpu": "h100"}, "model"),
    ({"model": "llama-3.1-8b", "gpu": ["h100"] * 20_000}, "gpu"),
    ({"model": "llama-3.1-8b", "gpu": {"k": "v" * 100_000}}, "gpu"),
])
def test_huge_values_are_echoed_as_a_short_prefix(client, body, field):
    data = post(client, "memory", json.dumps(body))
    assert data["field"] == field
    assert len(data["message"]) < 1_600


def test_huge_unknown_key_is_named_by_a_short_prefix(client):
    data = post(client, "memory", json.dumps({"k" * 100_000: 1}))
    assert data["field"] == "k" * 80 + "…"


def test_many_unknown_fields_keep_the_error_small(client):
    data = post(client, "memory", json.dumps({f"pad{i}": i for i in range(5_000)}))
    assert data["field"] == "pad0" and len(data["detail"]) <= 8
