"""The packaged throughput reference set (catalog/reference/throughput_runs.yaml) is well formed.

Each run must carry a complete, self-consistent parallel layout and at least one published
efficiency figure; dropped source entries are listed under `excluded` with a reason.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

import pytest

CATALOG = resources.files("gpuplan.catalog")
HARDWARE_IDS = {p.name[: -len(".toml")] for p in (CATALOG / "hardware").iterdir() if p.name.endswith(".toml")}
MODEL_IDS = {p.name[: -len(".json")] for p in (CATALOG / "models").iterdir() if p.name.endswith(".json")}

MODEL_INTS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq_len")
LAYOUT_INTS = ("tp", "pp", "cp", "dp", "micro_batch", "global_batch")
RECOMPUTE = {"none", "selective", "full"}
PRECISION = {"bf16", "fp16", "fp8", "mixed16"}
EFFICIENCY = ("mfu", "hfu", "tflops_per_gpu", "tokens_per_s_per_gpu")


@cache
def data() -> dict:
    # catalog.reference_yaml: libyaml's CSafeLoader (yaml.safe_load's constructor and resolver), ~8x faster than
    # yaml.safe_load's pure-Python parser, which took ~1.3 s of the suite's collection here
    from gpuplan.catalog import reference_yaml

    return reference_yaml("throughput_runs.yaml")


def runs() -> list[dict]:
    return data()["runs"]


def _pos_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _get(run: dict, path: str):
    node = run
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(path)
        node = node[part]
    return node


RUN_IDS = [r["id"] for r in runs()]


def test_top_level_shape():
    d = data()
    assert d["schema_version"] == 1
    assert d["meta"]["compiled_from"]
    conv = d["meta"]["conventions"]
    for key in ("mfu", "hfu", "tflops_per_gpu", "mfu_definitions", "hfu_definitions", "global_batch"):
        assert conv[key], key
    assert isinstance(d["runs"], list) and isinstance(d["excluded"], list)


def test_at_least_100_runs():
    assert len(runs()) >= 100


def test_ids_unique_and_disjoint_from_excluded():
    ids = [r["id"] for r in runs()]
    assert len(ids) == len(set(ids))
    dropped = [x["id"] for x in data()["excluded"]]
    assert len(dropped) == len(set(dropped))
    assert not set(ids) & set(dropped)


def test_counts_in_meta_match():
    counts = data()["meta"]["counts"]
    assert counts["runs"] == len(runs())
    assert counts["excluded"] == len(data()["excluded"])
    by_family: dict[str, int] = {}
    for r in runs():
        by_family[r["family"]] = by_family.get(r["family"], 0) + 1
    assert counts["runs_by_family"] == by_family
    assert set(by_family) <= set(data()["meta"]["families"])


def test_excluded_entries_have_reasons():
    for x in data()["excluded"]:
        assert x["id"] and x["reason"].strip(), x
        assert x["missing"] and all(isinstance(m, str) and m for m in x["missing"]), x


@pytest.mark.parametrize("run", runs(), ids=RUN_IDS)
def test_run_is_complete_and_consistent(run):
    assert isinstance(run["source"], str) and len(run["source"]) > 20
    assert run["family"]

    model = run["model"]
    for key in MODEL_INTS:
        assert _pos_int(model[key]), f"model.{key}={model.get(key)!r}"
    assert model["heads"] % model["kv_heads"] == 0
    assert isinstance(model["gated_mlp"], bool)
    assert model["learned_positions"] is None or _pos_int(model["learned_positions"])
    if model.get("params") is not None:
        assert _pos_int(model["params"])

    assert run["gpu"] in HARDWARE_IDS, f"unknown hardware id {run['gpu']}"
    assert _pos_int(run["gpus"])

    lay = run["layout"]
    for key in LAYOUT_INTS:
        assert _pos_int(lay[key]), f"layout.{key}={lay.get(key)!r}"
    assert lay["zero"] in (0, 1, 2, 3)
    assert lay["recompute"] in RECOMPUTE
    assert isinstance(lay["sequence_parallel"], bool)
    assert run["gpus"] == lay["tp"] * lay["pp"] * lay["cp"] * lay["dp"]
    assert lay["global_batch"] % (lay["micro_batch"] * lay["dp"]) == 0
    if "grad_accum" in lay:
        assert lay["global_batch"] == lay["micro_batch"] * lay["grad_accum"] * lay["dp"]
    # vpp: null = pipelined but not reported; otherwise layers split evenly over pp * vpp chunks
    vpp = lay["vpp"]
    assert vpp is None or _pos_int(vpp)
    if vpp is None:
        assert lay["pp"] > 1
    elif vpp > 1:
        assert lay["pp"] > 1 and model["layers"] % (lay["pp"] * vpp) == 0
    assert model["heads"] % lay["tp"] == 0

    assert run["precision"] in PRECISION

    measured = run["measured"]
    assert any(k in measured for k in EFFICIENCY), "needs at least one efficiency figure"
    conv = data()["meta"]["conventions"]
    for key in ("mfu", "hfu"):
        if key in measured:
            assert 0 < measured[key] <= 1, key
    if "mfu" in measured:
        assert measured["mfu_definition"] in conv["mfu_definitions"]
        assert measured["mfu_peak_tflops"] > 0
    if "hfu_definition" in measured:
        assert measured["hfu_definition"] in conv["hfu_definitions"]
    if "tflops_per_gpu" in measured:
        assert measured["tflops_per_gpu"] > 0
        assert isinstance(measured["tflops_counts_recompute"], bool)
    if "tokens_per_s_per_gpu" in measured:
        assert measured["tokens_per_s_per_gpu"] > 0

    for path, how in (run.get("derived") or {}).items():
        _get(run, path)  # every derived marker names a real field
        assert isinstance(how, str) and how.strip()


@pytest.mark.parametrize("run", [r for r in runs() if r["model"]["catalog"]],
                         ids=[r["id"] for r in runs() if r["model"]["catalog"]])
def test_catalog_model_shape_matches_catalog(run):
    model = run["model"]
    assert model["catalog"] in MODEL_IDS
    cfg = json.loads((CATALOG / "models" / f"{model['catalog']}.json").read_text("utf-8"))["config"]
    assert model["layers"] == cfg["num_hidden_layers"]
    assert model["hidden"] == cfg["hidden_size"]
    assert model["heads"] == cfg["num_attention_heads"]
    assert model["kv_heads"] == cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    assert model["ffn"] == cfg["intermediate_size"]
    assert model["vocab"] == cfg["vocab_size"]


LLMF = [r for r in runs() if r["measured"].get("mfu_definition", "").startswith("llm-foundry")]


@pytest.mark.parametrize("run", LLMF, ids=[r["id"] for r in LLMF])
def test_llm_foundry_mfu_reproduces_from_its_inputs(run):
    """llm-foundry MFU = (6N + 12 L d s) x tokens/s / (gpus x peak): the row's numbers agree."""
    m, ms = run["model"], run["measured"]
    flops_per_token = 6 * m["params"] + 12 * m["layers"] * m["hidden"] * m["seq_len"]
    mfu = flops_per_token * ms["tokens_per_s"] / (run["gpus"] * ms["mfu_peak_tflops"] * 1e12)
    assert mfu == pytest.approx(ms["mfu"], abs=0.005)
    assert ms["tokens_per_s_per_gpu"] == pytest.approx(ms["tokens_per_s"] / run["gpus"], abs=1)
    # the "Model TFLOP" column is MFU x peak (model FLOPs, recompute not counted)
    assert ms["tflops_per_gpu"] == pytest.approx(ms["mfu"] * ms["mfu_peak_tflops"], abs=1.0)
    expected_hfu = ms["mfu"] * 4 / 3 if run["layout"]["recompute"] == "full" else ms["mfu"]
    assert ms["hfu"] == pytest.approx(expected_hfu, abs=0.0002)
    # NumParams = 12 L d^2 + 13 L d + 2 d + V d + s d (GELU 4x MLP, biases, LayerNorm, tied, learned positions)
    L, d = m["layers"], m["hidden"]
    assert m["ffn"] == 4 * d
    assert m["params"] == 12 * L * d * d + 13 * L * d + 2 * d + m["vocab"] * d + m["learned_positions"] * d


MEGA_T1 = [r for r in runs() if r["id"].startswith("narayanan21-table1-")]


@pytest.mark.parametrize("run", MEGA_T1, ids=[r["id"] for r in MEGA_T1])
def test_megatron_table1_pct_of_peak_matches_tflops(run):
    ms = run["measured"]
    assert ms["hfu"] == pytest.approx(ms["tflops_per_gpu"] / 312, abs=0.006)
    assert ms["aggregate_pflops"] == pytest.approx(ms["tflops_per_gpu"] * run["gpus"] / 1000, rel=0.01)
