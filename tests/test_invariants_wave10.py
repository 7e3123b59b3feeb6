"""Invariants over VALID inputs (wave 10, 2026-12-06): answers that hold against their neighbours, and the four doors
(CLI flags, a plan file, the web API, the Python API) answering the same input alike, for the inputs added most
recently (engine releases, --endpoint, speculative decoding, prefix caching, --rps sizing with disaggregation).

- serving: a longer context never needs less KV memory per sequence or in the batch, nor a shorter TTFT; a larger
  batch never less KV memory, nor a shorter time per output token;
- --rps sizing: a higher rate, a tighter p99 TTFT or a tighter TPOT never sizes a cheaper setup (colocated and
  disaggregated), and a target met at a tighter setting stays met at a looser one;
- training: more tokens never fewer GPU-hours (fixed GPUs, or a fixed deadline whose GPU count is solved); more GPUs
  never a slower best plan for the same tokens; a longer sequence or a larger micro-batch never less memory per GPU;
  MFU in (0, 1) everywhere.

The wave-10 sweep ran the same checks over seeded random draws (620 plan / budget GPU ladders, 645 memory and
deadline points, 536 + 475 serving context / batch points, 228 sizing points): no violation; this grid is the
CI-fast part (each case time-boxed, conftest.time_box). Wave 9's grid is tests/test_invariants_wave9.py.
"""

from __future__ import annotations

import json

import pytest

from gpuplan import estimate_budget, estimate_inference, estimate_memory, plan_report

pytestmark = pytest.mark.usefixtures("time_box")
REL = 1e-9
"""Relative slack on 'never less': the same floating-point formula at neighbouring inputs."""


def _results(report) -> dict:
    return report.to_dict()["results"]


def _never_falls(points: list[tuple], index: int) -> None:
    values = [p[index] for p in points]
    assert all(b >= a * (1 - REL) for a, b in zip(values, values[1:])), points


SERVING = [{"engine": "vllm"}, {"engine": "sglang"}, {"engine": "trtllm"}, {"engine": "vllm==0.11"},
           {"engine": "vllm==0.4"}, {"speculative": "eagle"}, {"endpoint": "chat", "engine": "vllm==0.11.0"},
           {"kv_dtype": "fp8"}, {"quantization": "int4"}, {"prefix_hit": 0.5}]


@pytest.mark.parametrize("extra", SERVING, ids=lambda e: "-".join(map(str, e.values())))
@pytest.mark.parametrize("model", ["llama-3.1-8b", "mixtral-8x7b", "gemma-2-9b"])
def test_kv_memory_and_ttft_never_fall_with_the_context(model, extra):
    points, tp = [], 2 if model == "mixtral-8x7b" else 1  # 93 GB of bf16 weights: two H100s
    # Gemma 2 stops at its 8,192 positions (vLLM refuses a longer max_model_len), still past its 4,096 window
    for context in (1024, 4096, 8192 if model == "gemma-2-9b" else 16384):
        r = _results(estimate_inference(dict(model=model, gpu="h100", tp=tp, context=context, batch=4, search=False,
                                             **extra)))
        assert r["fits"], (context, r)
        points.append((context, r["kv_bytes_per_sequence"], r["kv_bytes_batch"], r["ttft"]))
    for index in (1, 2, 3):
        _never_falls(points, index)
    assert points[-1][1] > points[0][1], points  # KV per sequence grows: not a flat (vacuous) ladder


@pytest.mark.parametrize("extra", SERVING, ids=lambda e: "-".join(map(str, e.values())))
def test_kv_memory_and_tpot_never_fall_with_the_batch(extra):
    points = []
    for batch in (1, 4, 16, 64):
        r = _results(estimate_inference(dict(model="llama-3.1-8b", gpu="h100", context=4096, batch=batch,
                                             search=False, **extra)))
        assert r["fits"], (batch, r)
        points.append((batch, r["kv_bytes_batch"], r["tpot"]))
    _never_falls(points, 1)
    _never_falls(points, 2)


def _sized_cost(body: dict) -> float | None:
    r = _results(estimate_inference(body))
    return r.get("disagg_cost_per_hour") if body.get("disaggregate") else r.get("sized_cost_per_hour")


SIZING = {"model": "llama-3.1-8b", "prompt": "1K", "output_tokens": 128, "rps": 4, "ttft_p99": "2s", "tpot": "60ms"}


@pytest.mark.parametrize("disaggregate", [False, True])
@pytest.mark.parametrize("field, ladder", [("rps", [0.5, 4, 32]), ("ttft_p99", ["10s", "800ms", "300ms"]),
                                           ("tpot", ["200ms", "40ms", "15ms"])])
def test_a_harder_load_never_sizes_a_cheaper_setup(field, ladder, disaggregate):
    """Each ladder is harder step by step (a higher rate, a tighter target): the cheapest setup that serves it never
    costs less, and once no setup meets a step (None) none meets a harder one."""
    costs = [_sized_cost({**SIZING, field: value, "disaggregate": disaggregate}) for value in ladder]
    assert costs[0] is not None, costs
    met = [c for c in costs if c is not None]
    assert costs[:len(met)] == met, costs  # unmet only at the hard end
    assert all(b >= a * (1 - REL) for a, b in zip(met, met[1:])), costs


@pytest.mark.parametrize("model", ["llama-3.1-8b", "mixtral-8x7b", "pythia-1b"])
@pytest.mark.parametrize("ask", [{"gpus": 64}, {"days": 30}, {"gpus": 256, "mfu": "predicted"}],
                         ids=lambda a: "-".join(map(str, a.values())))
def test_more_tokens_never_fewer_gpu_hours(model, ask):
    points = []
    for tokens in ("100B", "1T", "3T"):
        r = _results(estimate_budget(dict(model=model, gpu="h100", tokens=tokens, **ask)))
        assert 0 < r["mfu"] < 1, r["mfu"]
        points.append((tokens, r["gpu_hours"], r["gpus"]))
    _never_falls(points, 1)
    _never_falls(points, 2)
    assert points[-1][1] > points[0][1], points


@pytest.mark.parametrize("framework", ["megatron", "torchtitan", "deepspeed"])
@pytest.mark.parametrize("model", ["llama-3.1-8b", "mixtral-8x7b"])
def test_more_gpus_never_a_slower_best_plan(model, framework):
    days = []
    for gpus in (16, 64, 256):
        r = _results(plan_report(dict(model=model, gpu="h100", gpus=gpus, tokens="100B", framework=framework)))
        assert 0 < r["best_mfu"] < 1, r["best_mfu"]
        days.append(r["best_days"])
    assert all(b <= a * (1 + REL) for a, b in zip(days, days[1:])), days
    assert days[-1] < days[0], days


@pytest.mark.parametrize("framework, recompute", [("megatron", "selective"), ("torchtitan", "none"),
                                                  ("deepspeed", "full"), ("hf", "none")])
@pytest.mark.parametrize("model", ["llama-3.1-8b", "mixtral-8x7b", "gpt2"])
def test_memory_never_falls_with_the_sequence_or_micro_batch(model, framework, recompute):
    base = dict(model=model, gpu="h100", gpus=8, framework=framework, recompute=recompute)
    by_seq = [(s, *(_results(estimate_memory({**base, "seq_len": s}))[k] for k in ("peak_activations", "peak_total")))
              for s in (256, 512, 1024)]
    by_mb = [(m, *(_results(estimate_memory({**base, "micro_batch": m}))[k] for k in ("peak_activations",
                                                                                      "peak_total")))
             for m in (1, 2, 4)]
    for points in (by_seq, by_mb):
        _never_falls(points, 1)
        _never_falls(points, 2)


# ---- the four doors answer alike -------------------------------------------------------------------------------

DOORS = [
    {"model": "llama-3.1-8b", "gpu": "h100", "engine": "vllm==0.11.0", "endpoint": "chat", "search": False},
    {"model": "llama-3.1-8b", "gpu": "h100", "speculative": "eagle3", "spec_tokens": "4", "search": False},
    {"model": "llama-3.1-8b", "gpu": "h100", "speculative": "draft", "draft_model": "llama-3.2-1b",
     "spec_acceptance": "70%", "search": False},
    {"model": "qwen2.5-7b", "gpu": "l4", "engine": "sglang==0.4.9", "prefix_hit": "0.5", "context": "8K",
     "search": False},
    {"model": "llama-3.1-8b", "rps": "4", "ttft_p99": "1s", "tpot": "50ms", "prompt": "1K", "output_tokens": "128",
     "disaggregate": True},
]


def _flags(body: dict) -> list[str]:
    args = ["infer"]
    for key, value in body.items():
        flag = "--" + key.replace("_", "-")
        args += [flag] if value is True else [f"--no-{key.replace('_', '-')}"] if value is False else [flag, value]
    return args


@pytest.mark.parametrize("body", DOORS, ids=lambda b: "-".join(str(v) for v in b.values())[:60])
def test_the_four_doors_answer_alike(run_json, client, tmp_path, body):
    """The same inputs as flags, as a YAML plan file, as a web body and through the Python API: the same results,
    number for number (the web's JSON and --json print Report.to_dict)."""
    from_flags = run_json(*_flags(body))["results"]
    plan = tmp_path / "plan.yaml"
    plan.write_text("".join(f"{key}: {json.dumps(value)}\n" for key, value in body.items()))
    from_file = run_json("infer", str(plan))["results"]
    response = client.post("/api/inference", json=body)
    assert response.status_code == 200, response.text[:300]
    from_python = json.loads(json.dumps(_results(estimate_inference(dict(body)))))
    assert from_flags == from_file == response.json()["results"] == from_python
