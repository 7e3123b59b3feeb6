"""Hostile requests to the JSON API: no server path is ever opened, non-finite and huge numbers are
422, work per request and the result cache are bounded, and no request gets a 500."""

import json
import math
import time

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gpuplan.jobs import JOBS  # noqa: E402
from gpuplan.web import create_app, service  # noqa: E402

LIMIT = 10.0  # seconds per request


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def post(client, job, raw_body: str, **params):
    start = time.perf_counter()
    response = client.post(f"/api/{job}", content=raw_body, params=params,
                           headers={"content-type": "application/json"})
    assert time.perf_counter() - start < LIMIT
    assert response.status_code != 500, response.text
    return response


@pytest.mark.parametrize("job", ["training", "budget", "memory", "plan"])
@pytest.mark.parametrize("path", ["/etc/shadow", "/etc/passwd", "/dev/zero", "../../etc/passwd", "/tmp"])
def test_calibration_is_never_opened_as_a_server_path(client, job, path, monkeypatch):
    opened = []
    import builtins

    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda file, *a, **k: opened.append(str(file)) or real_open(file, *a, **k))
    response = post(client, job, json.dumps({"calibration": path}))
    assert response.status_code == 422 and response.json()["field"] == "calibration"
    assert not any(path.strip("./") in name for name in opened)
    # the answer does not depend on whether the file exists (no probing)
    assert "no such" not in response.json()["message"]


def test_calibration_by_document_or_by_name_from_the_operators_folder(tmp_path, calibration_doc):
    folder = tmp_path / "cal"
    folder.mkdir()
    (folder / "h100.json").write_text(json.dumps(calibration_doc))
    client = TestClient(create_app(calibration_dir=str(folder)))
    body = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8}
    by_name = client.post("/api/memory", json=body | {"calibration": "h100"})
    by_doc = client.post("/api/memory", json=body | {"calibration": calibration_doc})
    assert by_name.status_code == by_doc.status_code == 200, by_name.text
    assert by_name.json()["results"] == by_doc.json()["results"]
    for bad in ("../h100.json", "sub/h100", "/etc/passwd", "missing"):
        response = client.post("/api/memory", json=body | {"calibration": bad})
        assert response.status_code == 422 and response.json()["field"] == "calibration"


@pytest.fixture(scope="module")
def calibration_doc(tmp_path_factory):
    """A real calibration from the Megatron Mixtral log fixture (as tests/test_calibration_loop.py)."""
    from pathlib import Path

    from gpuplan.cli import main

    log = Path(__file__).parent / "fixtures" / "logs" / "megatron_mixtral.log"
    out = tmp_path_factory.mktemp("cal") / "calibration.json"
    assert main(["calibrate", str(log), "--model", "mixtral-8x7b", "--gpu", "h100", "--gpus", "16", "--seq-len", "2048",
                 "--ep", "4", "--zero", "1", "--out", str(out), "--json"]) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
@pytest.mark.parametrize("field", ["mfu", "tokens", "gpus", "days", "seq_len", "comm_allowance", "price"])
def test_non_finite_numbers_are_422(client, literal, field):
    response = post(client, "budget", f'{{"{field}": {literal}}}')
    assert response.status_code == 422 and response.json()["field"] == field


@pytest.mark.parametrize("body, field", [
    ({"mfu": "predicted", "gpus": 1152921504606846976}, "gpus"),
    ({"gpus": 10**30}, "gpus"),
    ({"global_batch_tokens": 4096e9}, "global_batch_tokens"),
    ({"gpus": "1-1048576", "top": 1000000000}, "top"),
    ({"gpus": "1-1048576", "top": 1000}, "top"),
    ({"gpus": ",".join(str(8 * i) for i in range(1, 400))}, "gpus"),
    ({"seq_len": 10**20}, "seq_len"),
    ({"tokens": -1}, "tokens"),
    ({"gpus": 0}, "gpus"),
    ({"gpus": 0.5}, "gpus"),
    ({"seq_len": 4096.7}, "seq_len"),
    ({"context": "8KK"}, "context"),
])
def test_out_of_range_and_huge_values_are_422(client, body, field):
    job = "inference" if "context" in body else ("plan" if "top" in body or "," in str(body.get("gpus", ""))
                                                 else "budget")
    response = post(client, job, json.dumps(body))
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field


def test_results_cache_stays_bounded_in_bytes(client, monkeypatch):
    small = service._LRU(service.CACHE_SIZE, max_bytes=1 << 20)  # 1 MiB: 100 budgets of ~70 KB overflow it
    monkeypatch.setattr(service, "_CACHE", small)
    sizes = []
    for i in range(100):
        body = {"model": "llama-3.1-8b", "tokens": f"{1 + i / 100:.2f}T", "gpu": "h100", "gpus": 256}
        response = post(client, "budget", json.dumps(body))
        assert response.status_code == 200, response.text
        sizes.append(len(response.content))
        assert small.total_bytes <= 1 << 20
    assert sum(sizes) > 2 * (1 << 20)  # the requests together were far larger than what was kept


JSON_NUMBERS = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(10**40), 10**40),
                         st.sampled_from([1e308, -1e308, 10**19, 2**63, -(2**63)]))
BAD_LITERALS = st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "1e-400", "true", "null", '""', '"8KK"',
                                '"abc"', "[]", "{}", '"' + "a" * 300 + '"'])
FIELDS = sorted({(job.name, field) for job in JOBS.values() for field in job.schema.model_fields})


@settings(max_examples=250, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(target=st.sampled_from(FIELDS), value=st.one_of(JSON_NUMBERS.map(json.dumps), BAD_LITERALS,
                                                       st.text(max_size=30).map(json.dumps)))
def test_generated_bodies_never_500(client, target, value):
    job, field = target
    if field == "calibration":
        return  # its own test above
    response = post(client, job, f'{{"{field}": {value}}}')
    assert response.status_code in (200, 422, 413, 503), response.text
    if response.status_code == 422:
        data = response.json()
        assert data["message"] and "\n" not in data["message"]
    if response.status_code == 200:
        assert all(v is None or not isinstance(v, float) or math.isfinite(v)
                   for v in response.json()["results"].values())


def test_a_symbolic_link_in_the_calibration_folder_is_not_followed(tmp_path, calibration_doc):
    # a link out of the folder (or to /etc/passwd) is "no such calibration": the server never opens it
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(calibration_doc))
    folder = tmp_path / "cal"
    folder.mkdir()
    (folder / "outside.json").symlink_to(outside)
    (folder / "passwd").symlink_to("/etc/passwd")
    (folder / "inside.json").write_text(json.dumps(calibration_doc))
    client = TestClient(create_app(calibration_dir=str(folder)))
    body = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8}
    for name in ("outside", "passwd"):
        response = client.post("/api/memory", json=body | {"calibration": name})
        assert response.status_code == 422 and "no such calibration" in response.json()["message"]
    assert client.post("/api/memory", json=body | {"calibration": "inside"}).status_code == 200


@pytest.mark.parametrize(("factor", "value", "fragment"), [("memory_overhead", 1e300, "within +-1 TiB"),
                                                             ("activation_memory", 1e6, "within 0.1 to 10")])
def test_a_calibration_with_an_absurd_factor_is_refused(tmp_path, calibration_doc, run_cli, factor, value, fragment):
    # a fixed overhead of 1e300 bytes gave "device memory needed" ~1e300 before
    doc = json.loads(json.dumps(calibration_doc))
    doc[factor]["value"] = value
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(doc))
    code, _, err = run_cli("memory", "llama-3.1-8b", "--gpu", "h100", "--calibration", str(path))
    assert code == 2 and err.startswith(f"error: calibration: {factor}.value: got ") and fragment in err, err
    client = TestClient(create_app())
    response = client.post("/api/memory", json={"model": "llama-3.1-8b", "gpu": "h100", "calibration": doc})
    assert response.status_code == 422 and response.json()["field"] == f"calibration: {factor}.value"
