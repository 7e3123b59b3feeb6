"""The JSON API (FastAPI test client): the same reports as the CLI, 422 naming the field, size
limits, catalog-only model names, pasted configs, Chinese labels with unchanged numbers, chart
series that add up to the report's numbers, and `gpuplan serve` defaults."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import free_port

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from gpuplan.web import create_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LLAMA2_CONFIG = json.loads((ROOT / "examples/llama-2-7b/config.json").read_text())
N_LLAMA2_7B = 6_738_415_616  # Llama 2 7B, counted (tests/test_model_counting.py)


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def post(client, name, body, lang="en"):
    return client.post(f"/api/{name}?lang={lang}", json=body)


def test_openapi_schema_lists_every_operation(client):
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/api/health", "/api/catalog/models", "/api/catalog/gpus", "/api/training", "/api/budget",
                 "/api/memory", "/api/plan", "/api/inference"):
        assert path in paths
    budget = paths["/api/budget"]["post"]
    assert {"200", "422", "413"} <= set(budget["responses"])


def test_health_names_the_estimators(client):
    data = client.get("/api/health").json()
    assert data["status"] == "ok"
    assert set(data["estimators"]) == {"training", "budget", "memory", "plan", "inference", "campaign"}
    assert data["estimators"]["budget"] is True


def test_article_example_by_hand(client):
    # 6·N·D = 6 x 7e9 x 2e12 = 8.4e22 FLOPs; A100 312e12 x 0.4 x 86400 = 1.078e19 FLOPs/GPU-day
    # -> 7,790 GPU-days -> / 7 days = 1,112.9 GPUs for compute alone (the article rounds to 1,112);
    # with the 20% communication allowance the 7 days take 1,112.9 x 1.2 = 1,335.5 -> 1,336
    data = post(client, "training", {"params": "7B", "tokens": "2T", "gpu": "a100", "days": "7d", "mfu": "40%"}).json()
    assert data["results"]["flops_6nd"] == pytest.approx(8.4e22)
    assert data["results"]["gpus_compute_only"] == pytest.approx(8.4e22 / (312e12 * 0.4 * 86400) / 7, rel=1e-6)
    assert data["results"]["gpus_compute_only"] == pytest.approx(1112.9, abs=0.1)
    assert data["results"]["gpus"] == 1336


@pytest.mark.parametrize("endpoint, command, args", [
    ("budget", "budget", {"model": "llama-3.1-8b", "tokens": "1T", "gpu": "h100", "gpus": "256"}),
    ("memory", "memory", {"model": "llama-3.1-8b", "gpu": "h100", "gpus": "8", "zero": "3", "recipe": "bf16"}),
    ("plan", "plan", {"model": "llama-3.1-8b", "tokens": "1T", "gpu": "h100", "gpus": "64-256"}),
    pytest.param("inference", "infer", {"model": "llama-3.1-8b", "gpu": "h100", "context": "8K", "batch": "32"}),
])
def test_api_returns_the_cli_report(client, run_cli, endpoint, command, args):
    flags = [x for k, v in args.items() for x in (f"--{k.replace('_', '-')}", v)]
    code, out, err = run_cli(command, *flags, "--json")
    assert code == 0, err
    cli = json.loads(out)
    api = post(client, endpoint, args).json()
    assert api["kind"] == cli["kind"] and api["title"] == cli["title"]
    assert api["inputs"] == cli["inputs"]
    assert api["results"] == cli["results"]  # one Report: a number cannot differ
    assert api["tables"] == cli["tables"]


@pytest.mark.parametrize("endpoint, body, field, fragment", [
    ("budget", {"tokens": "lots"}, "tokens", "tokens: got 'lots'"),
    ("memory", {"gpu": "a1000"}, "gpu", "did you mean"),
    ("plan", {"rank_by": "speed"}, "rank_by", "must be one of time, cost, gpus"),
    ("training", {"mfu": 1.4}, "mfu", "mfu: got 1.4"),
    ("memory", {"nonsense": 1}, "nonsense", "nonsense: got 1; unknown field"),
    ("budget", {"gpus": [1, 2]}, "gpus", "gpus"),
    ("budget", {"model": "llama-2-8b"}, "model", "not in the catalog; did you mean"),
])
def test_bad_input_is_422_naming_the_field(client, endpoint, body, field, fragment):
    response = post(client, endpoint, body)
    assert response.status_code == 422
    data = response.json()
    assert data["field"] == field
    assert fragment in data["message"]
    assert data["detail"][0]["loc"][0] == "body" and field in data["detail"][0]["loc"]


def test_bad_language_is_422(client):
    response = post(client, "budget", {}, lang="fr")
    assert response.status_code == 422 and response.json()["field"] == "lang"


@pytest.mark.parametrize("model", ["examples/llama-2-7b/config.json", "/etc/passwd", "../../../etc/hosts.json",
                                   "src"])
def test_model_is_a_catalog_name_never_a_server_path(client, model):
    response = post(client, "training", {"model": model})
    assert response.status_code == 422
    assert response.json()["field"] == "model"
    assert "not in the catalog" in response.json()["message"]


@pytest.mark.parametrize("draft", ["/etc/passwd", "examples/llama-2-7b/config.json"])
def test_draft_model_is_a_catalog_name_never_a_server_path(client, draft):
    response = post(client, "inference", {"model": "llama-3.1-8b", "speculative": "draft", "draft_model": draft})
    assert response.status_code == 422
    assert "not in the catalog" in response.json()["message"] and response.json()["field"] == "draft_model"


def test_pasted_config_counts_like_the_catalog_model(client):
    pasted = post(client, "training", {"config": LLAMA2_CONFIG, "tokens": "2T", "gpus": 64}).json()
    catalog = post(client, "training", {"model": "llama-2-7b", "tokens": "2T", "gpus": 64}).json()
    assert pasted["results"]["params_total"] == catalog["results"]["params_total"] == N_LLAMA2_7B
    assert pasted["results"]["wall_days"] == pytest.approx(catalog["results"]["wall_days"])


@pytest.mark.parametrize("change, field", [
    ({"num_attention_heads": 7}, "config.json: num_attention_heads"),  # 4096 is not a multiple of 7
    ({"hidden_size": "big"}, "config.json: hidden_size"),
    ({"num_hidden_layers": 10**9}, "config.json: num_hidden_layers"),  # would hold the server
])
def test_bad_pasted_config_is_422_without_server_paths(client, change, field):
    response = post(client, "memory", {"config": LLAMA2_CONFIG | change})
    assert response.status_code == 422
    data = response.json()
    assert data["field"] == field
    assert "/tmp" not in data["message"] and "gpuplan-config-" not in json.dumps(data)


def test_a_pasted_config_takes_model_type_as_the_cli_does(client):
    # --model cfg.json --model-type llama on the CLI; a config plus model_type in the API
    unknown = LLAMA2_CONFIG | {"model_type": "foo"}
    assert post(client, "memory", {"config": unknown}).json()["field"] == "config.json: model_type"
    read = post(client, "memory", {"config": unknown, "model_type": "llama"})
    plain = post(client, "memory", {"config": LLAMA2_CONFIG})
    assert read.status_code == 200 and read.json()["results"]["peak_total"] == plain.json()["results"]["peak_total"]
    assert post(client, "memory", {"model_type": "llama"}).json()["field"] == "model_type"  # nothing to read


def test_pasted_config_and_model_together_is_422(client):
    response = post(client, "memory", {"config": LLAMA2_CONFIG, "model": "llama-2-7b"})
    assert response.status_code == 422 and response.json()["field"] == "config"


def test_pasted_config_must_be_an_object(client):
    response = post(client, "memory", {"config": [1, 2, 3]})
    assert response.status_code == 422 and response.json()["field"] == "config"


def test_arithmetic_failure_inside_an_estimator_is_422_not_500(client):
    # tp = 0 reaches a division inside the training estimate: bad input, answered as such
    response = post(client, "training", {"pp": "0"})
    assert response.status_code == 422
    assert "pp" in response.json()["message"]


def test_body_over_256_kb_is_413(client):
    big = json.dumps({"model": "llama-2-7b", "config": {"padding": "x" * 300_000}})
    response = client.post("/api/memory", content=big, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert "262,144 bytes" in response.json()["message"]


def test_chunked_body_over_the_limit_is_413(client):
    def chunks():
        for _ in range(40):
            yield b" " * 10_000  # 400 KB without a Content-Length

    response = client.post("/api/memory", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413


def test_chinese_labels_same_numbers(client):
    body = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8, "zero": 3}
    en, zh = post(client, "memory", body).json(), post(client, "memory", body, lang="zh").json()
    assert en["results"] == zh["results"]
    assert [line["text"] for s in en["sections"] for line in s["lines"]] == \
        [line["text"] for s in zh["sections"] for line in s["lines"]]
    assert zh["title"].startswith("训练显存") and en["title"].startswith("Training memory")
    labels = {line["key"]: line["label"] for s in zh["sections"] for line in s["lines"]}
    assert labels["peak_activations"] == "激活" and labels["fits"] == "能否放下"
    assert zh["lang"] == "zh"


def test_memory_chart_stacks_to_the_reported_peak(client):
    data = post(client, "memory", {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8, "zero": 3}).json()
    chart, results = data["charts"]["memory"], data["results"]
    # the stacked bar is the allocated peak by category, the allocator reserve and CUDA context + NCCL = peak_total
    assert sum(p["bytes"] for p in chart["parts"]) == pytest.approx(results["peak_total"], rel=1e-9)
    assert chart["total"] == results["peak_total"]
    assert chart["margin_fraction"] == pytest.approx(0.05)  # the safety band beyond reserve and runtime
    reserve = next(p["bytes"] for p in chart["parts"] if p["key"] == "allocator_reserve")
    assert reserve == pytest.approx(results["peak_allocated"] * 0.12, rel=1e-9)  # megatron: caching allocator
    assert chart["gpus"][0] == {"id": "h100-sxm", "capacity": results["capacity"], "fits": results["fits"]}
    verdicts = {row["gpu"]: row["verdict"] == "fits" for row in data["tables"]["verdict per GPU type"]}
    assert {g["id"]: g["fits"] for g in chart["gpus"]} == verdicts


def test_cluster_chart_is_the_budget_table(client):
    data = post(client, "budget", {"params": "7B", "tokens": "2T", "gpu": "a100", "days": 7}).json()
    chart = data["charts"]["cluster"]
    rows = next(v for k, v in data["tables"].items() if k.startswith("Cluster size"))
    assert chart["gpus"] == [r["gpus"] for r in rows]
    assert chart["days"] == [r["days"] for r in rows]
    # the GPUs that meet 7 days with comm and failures (tests/test_newcomer.py)
    assert chart["selected"] == data["inputs"]["gpus_rented"] == data["results"]["gpus"]
    assert data["results"]["fail_wall_seconds"] <= 7 * 86400


def test_layout_chart_has_the_best_layout_and_a_sorted_front(client):
    data = post(client, "plan", {"model": "llama-3.1-8b", "tokens": "1T", "gpu": "h100", "gpus": "64-256"}).json()
    chart = data["charts"]["layouts"]
    assert chart["best"]["gpus"] == data["results"]["best_gpus"]
    assert chart["top"][0]["layout"] == data["results"]["best_layout"]
    gpus = [p["gpus"] for p in chart["front"]]
    assert gpus == sorted(gpus) and set(gpus) <= {64, 128, 256}


def test_capacity_chart_stops_at_the_memory_limit(client):
    data = post(client, "inference", {"model": "llama-3.1-8b", "gpu": "h100"}).json()
    chart = data["charts"]["capacity"]
    assert chart["max_sequences"] == data["results"]["max_sequences"]
    assert chart["batch"][-1] <= chart["max_sequences"]
    assert all(b > a for a, b in zip(chart["tokens_per_s"], chart["tokens_per_s"][1:]))  # batching pays


def test_catalogs(client):
    from gpuplan.catalog import hardware_entries, model_entries

    models = client.get("/api/catalog/models").json()["tables"]["models"]
    gpus = client.get("/api/catalog/gpus", params={"filter": "h100"}).json()["tables"]["accelerators"]
    assert len(models) == len(model_entries())
    assert gpus and all("h100" in (r["id"] + r["aliases"]).lower() for r in gpus)
    assert len(gpus) < len(hardware_entries())


def test_page_and_static_files_are_served_with_a_strict_policy(client):
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    for name in ("app.js", "style.css", "i18n/en.json", "i18n/zh.json"):
        assert client.get(f"/static/{name}").status_code == 200


def test_page_loads_nothing_from_the_internet():
    static = ROOT / "src/gpuplan/web/static"
    for path in static.rglob("*"):
        if path.suffix in (".html", ".js", ".css"):
            text = path.read_text(encoding="utf-8")
            assert "https://" not in text and "http://" not in text.replace("http://www.w3.org/2000/svg", ""), path


def test_only_allowed_hosts_when_asked():
    guarded = TestClient(create_app(allowed_hosts=["127.0.0.1", "localhost"]), base_url="http://evil.example")
    assert guarded.get("/api/health").status_code == 400
    local = TestClient(create_app(allowed_hosts=["127.0.0.1", "localhost"]), base_url="http://localhost")
    assert local.get("/api/health").status_code == 200


def test_requests_are_cached(client):
    from gpuplan.web import service

    body = {"model": "llama-3.1-8b", "tokens": "1T", "gpu": "h100", "gpus": "64-128"}
    assert service.estimate("plan", body) is service.estimate("plan", body)


# ----------------------------------------------------------------------------- gpuplan serve
@pytest.fixture
def serve_cli(monkeypatch, run_cli):
    """`gpuplan serve` through cli.main, with uvicorn.run captured instead of serving."""
    import uvicorn

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append((app, kw)))
    monkeypatch.setenv("GPUPLAN_ALLOWED_HOSTS", "")

    def run(*args):
        return run_cli("serve", *args), calls

    return run


def test_serve_binds_loopback_by_default(serve_cli):
    port = free_port()
    (code, out, err), calls = serve_cli("--port", str(port))
    assert code == 0, err
    (app, options), = calls
    assert app == "gpuplan.web:create_app_from_env" and options["factory"] is True
    assert options["host"] == "127.0.0.1" and options["port"] == port
    assert f"http://127.0.0.1:{port}/" in err
    import os

    assert "127.0.0.1" in os.environ["GPUPLAN_ALLOWED_HOSTS"].split(",")


def test_serve_on_all_interfaces_warns(serve_cli):
    port = free_port()
    (code, out, err), calls = serve_cli("--host", "0.0.0.0", "--port", str(port))
    assert code == 0, err
    assert calls[0][1] == {"factory": True, "host": "0.0.0.0", "port": port, "log_level": "warning"}
    assert "warning: serving on 0.0.0.0" in err


def test_serve_bad_port_is_one_line_exit_2():
    code = subprocess.run([sys.executable, "-m", "gpuplan", "serve", "--port", "99999"], capture_output=True,
                          text=True)
    assert code.returncode == 2
    assert code.stderr == "error: port: got '99999'; must be >= 1 and <= 65535\n"


def test_serve_on_a_busy_port_is_one_line_exit_2(run_cli):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, out, err = run_cli("serve", "--port", str(port))
    assert code == 2 and err.startswith(f"error: port: got {port}; cannot serve on 127.0.0.1:{port}")
    assert "serving on" not in out + err


def test_import_and_cli_start_up_stay_free_of_web_and_plot_libraries():
    code = ("import sys, gpuplan, gpuplan.cli, gpuplan.report.i18n, gpuplan.web, gpuplan.commands.serve, "
            "gpuplan.commands.report\n"
            "heavy = [m for m in ('fastapi', 'starlette', 'uvicorn', 'matplotlib', 'pydantic') if m in sys.modules]\n"
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


@pytest.mark.parametrize("url, body", [("/api/memory?gpus=8", {"model": "llama-3.1-8b"}),
                                       ("/api/inference?model=x", {"model": "llama-3.1-8b"}),
                                       ("/api/catalog/models?gpu=h100", None)])
def test_an_undeclared_query_parameter_is_422_not_ignored(client, url, body):
    # the estimators' fields go in the JSON body; a query parameter the route does not take is named
    response = client.post(url, json=body) if body else client.get(url)
    assert response.status_code == 422
    field = url.split("?")[1].split("=")[0]
    assert response.json()["field"] == field and response.json()["detail"][0]["loc"] == ["query", field]
    assert "is not a query parameter" in response.json()["message"]
    assert client.post("/api/memory?lang=zh", json={"model": "llama-3.1-8b"}).status_code == 200
