"""Invariants over a grid of VALID inputs (wave 9, 2026-12-06), through the Python API (the CLI's --json prints the
same Report.to_dict, gpuplan.report.render.to_json): train, budget, plan, memory and infer answers that hold
against themselves and against their neighbours on the grid.

- every number an answer prints is finite (to_json refuses NaN / infinity: allow_nan=False), counts and bytes >= 0;
- MFU and HFU in (0, 1]; wall-clock days, GPU-hours and step seconds > 0;
- a deadline (--days) an answer says it meets is met by the time it prints (train: the wall-clock with the
  communication allowance; budget: with failures too; plan: the best layout's days and its wall-clock with failures);
- memory per GPU: the model states (weights, gradients, fp32 master, optimizer) never grow when the ZeRO stage rises,
  nor does the whole peak except where DeepSpeed's fixed ZeRO-3 buffers (two 5e8-element reduce buckets and a
  5e7-element prefetch bucket, docs/memory.md 'Framework profiles') outweigh what the stage saves on a small model;
  under ZeRO-3 more GPUs never raise the per-GPU weights;
- infer: time per output token > 0 wherever one is printed; the KV capacity (tokens, sequences) >= 0, and an answer
  holding no sequence at its context says so in a note (no silent zero).

Wave 7's random sweep is tests/test_answer_invariants.py (one test per defect it found); this grid is CI-fast
(~10 s on a shared 2-core machine) and each case is time-boxed (conftest.time_box)."""

from __future__ import annotations

import json
import math

import pytest

from gpuplan import estimate_budget, estimate_inference, estimate_memory, estimate_training, plan_report
from gpuplan.errors import InputError
from gpuplan.report.render import to_json

pytestmark = pytest.mark.usefixtures("time_box")
DAYS_TOLERANCE = 1e-9
"""Relative slack on 'meets the deadline': the answer's days are computed in floating point from the same inputs."""


SIGNED = ("headroom", "loses", "saving", "change", "shortfall")
"""Words of result keys that are differences, negative where an answer falls short (memory headroom of a layout that
does not fit, what a checked layout loses to the best)."""


def _numbers(data, path="") -> list[tuple[str, float]]:
    """Every int / float in a Report.to_dict() (bools left out), with its key path."""
    if isinstance(data, bool) or data is None or isinstance(data, str):
        return []
    if isinstance(data, dict):
        return [item for key, value in data.items() for item in _numbers(value, f"{path}.{key}")]
    if isinstance(data, list | tuple):
        return [item for i, value in enumerate(data) for item in _numbers(value, f"{path}[{i}]")]
    try:
        return [(path, float(data))]
    except (TypeError, ValueError):
        return []


def _check_finite(report) -> dict:
    """The report as --json prints it; every number finite (to_json itself refuses NaN and infinity)."""
    data = json.loads(to_json(report))
    bad = [(path, value) for path, value in _numbers(report.to_dict()) if not math.isfinite(value)]
    assert not bad, bad[:5]
    negative = [(k, v) for k, v in data["results"].items() if isinstance(v, int | float) and not isinstance(v, bool)
                and v < 0 and not any(word in k for word in SIGNED)]
    assert not negative, negative
    cells = [(title, column, _cell(value)) for title, rows in data["tables"].items() for row in rows
             for column, value in row.items()]  # the tables too (review w9 S4): numbers and numbers shown as text
    negative = [c for c in cells if c[2] is not None and c[2] < 0 and not any(w in c[1].lower() for w in SIGNED)]
    assert not negative, negative[:5]
    return data["results"]


def _cell(value) -> float | None:
    """A table cell's number: an int / float, or text such as '1,736 ms', '$1.28', '18.0'; None for anything else."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    text = str(value).replace(",", "").replace("$", "").split(" ")[0]
    try:
        return float(text)
    except ValueError:
        return None


def _share(report, key: str) -> None:
    line = report.line(key)
    assert 0 < line.value <= 1, (key, line.value)
    for end in (line.low, line.high):
        assert end is None or 0 < end <= 1, (key, line.low, line.high)


TRAIN = [dict(model=m, gpu=g, tokens="1T", **ask) for m in ("llama-3.1-8b", "mixtral-8x7b", "pythia-1b")
         for g in ("h100", "a100") for ask in ({"gpus": 64}, {"days": 30}, {"gpus": 256, "mfu": "predicted"})]


@pytest.mark.parametrize("ask", TRAIN, ids=lambda a: "-".join(str(v) for v in a.values()))
def test_a_training_answer_holds_against_itself(ask):
    report = estimate_training(ask)
    results = _check_finite(report)
    _share(report, "mfu")
    _share(report, "hfu")
    for key in ("gpu_days", "gpu_hours", "wall_days", "wall_days_with_comm", "flops_used"):
        assert results[key] > 0, (key, results[key])
    assert results["gpu_hours"] == pytest.approx(results["gpu_days"] * 24, rel=1e-9)
    if "days" in ask:
        assert results["deadline_met"] <= ask["days"] * (1 + DAYS_TOLERANCE), results["deadline_met"]
        budget = _check_finite(estimate_budget(ask))
        assert budget["deadline_met"] <= ask["days"] * (1 + DAYS_TOLERANCE), budget["deadline_met"]
        assert budget["fail_wall_seconds"] / 86400 <= ask["days"] * (1 + DAYS_TOLERANCE)


PLANS = [dict(model=m, gpu="h100", tokens="1T", **ask) for m in ("llama-3.1-8b", "mixtral-8x7b")
         for ask in ({"gpus": 64}, {"gpus": "16-256"}, {"days": 20})]


@pytest.mark.parametrize("ask", PLANS, ids=lambda a: "-".join(str(v) for v in a.values()))
def test_a_plan_holds_against_itself(ask):
    report = plan_report(ask)
    results = _check_finite(report)
    _share(report, "best_mfu")
    _share(report, "best_hfu")
    for key in ("best_days", "best_step_seconds", "best_gpu_hours", "best_gpus", "fail_wall_seconds"):
        assert results[key] > 0, (key, results[key])
    assert results["best_gpu_hours"] == pytest.approx(results["best_days"] * 24 * results["best_gpus"], rel=1e-6)
    if "days" in ask:
        assert results["best_days"] <= ask["days"] * (1 + DAYS_TOLERANCE)
        assert results["fail_wall_seconds"] / 86400 <= ask["days"] * (1 + DAYS_TOLERANCE)


MEMORY_MODELS = ("llama-3.1-8b", "mixtral-8x7b", "gpt2", "gemma-2-9b", "deepseek-v3")
FRAMEWORKS = ("megatron", "torchtitan", "deepspeed", "hf")
STATES = ("peak_weights", "peak_grads", "peak_master", "peak_optimizer")


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("model", MEMORY_MODELS)
def test_memory_per_gpu_never_grows_with_the_zero_stage(model, framework):
    stages = [estimate_memory({"model": model, "gpu": "h100", "gpus": 64, "zero": z, "framework": framework})
              for z in range(4)]
    for report in stages:
        _check_finite(report)
    states = [sum(r.value(k) for k in STATES) for r in stages]
    peaks = [r.value("peak_total") for r in stages]
    assert all(a >= b for a, b in zip(states, states[1:])), states
    checked = peaks if framework != "deepspeed" else peaks[:3]  # ZeRO-3's fixed buckets: the docstring
    assert all(a >= b for a, b in zip(checked, checked[1:])), peaks


def test_deepspeeds_zero3_buffers_are_the_only_growth():
    """The exception above, pinned: gpt2 (124M) under DeepSpeed needs more at ZeRO-3 than at ZeRO-2 only through its
    temporaries (the fixed buckets) and FSDP-style working set, while its model states fall."""
    two, three = (estimate_memory({"model": "gpt2", "gpu": "h100", "gpus": 64, "zero": z, "framework": "deepspeed"})
                  for z in (2, 3))
    assert three.value("peak_total") > two.value("peak_total")
    grown = {k for k in ("peak_weights", "peak_grads", "peak_master", "peak_optimizer", "peak_activations",
                         "peak_outside_layers", "peak_temporaries", "peak_fsdp_working_set")
             if three.value(k) > two.value(k)}
    assert grown == {"peak_temporaries", "peak_fsdp_working_set"}, grown


@pytest.mark.parametrize("model", MEMORY_MODELS)
def test_zero3_weights_per_gpu_never_grow_with_more_gpus(model):
    weights = [estimate_memory({"model": model, "gpu": "h100", "gpus": n, "zero": 3}).value("peak_weights")
               for n in (8, 16, 64, 512)]
    assert all(a >= b for a, b in zip(weights, weights[1:])), weights


INFER = [dict(model=m, search=False, **ask) for m in ("llama-3.1-8b", "gpt2", "mixtral-8x7b", "gemma-2-9b",
                                                      "deepseek-v3", "qwen2.5-7b")
         for ask in ({"gpu": "h100"}, {"gpu": "h100", "quantization": "int4"}, {"gpu": "l4", "context": "32K"},
                     {"gpu": "h100", "context": "1K", "batch": 1}, {"gpu": "h100", "kv_dtype": "fp8", "batch": 64},
                     {"gpu": "h100", "gpus": 4, "tp": 4})]


@pytest.mark.parametrize("ask", INFER, ids=lambda a: "-".join(str(v) for v in a.values()))
def test_a_serving_answer_holds_against_itself(ask):
    try:
        report = estimate_inference(ask)
    except InputError as refused:  # gpt2's 1,024 learned positions refuse the 32K context: a refusal, not an answer;
        # so does vLLM past Gemma 2's 8,192 positions (jobs.inference.context_limits)
        assert ask["model"] in ("gpt2", "gemma-2-9b") and str(refused).startswith("context: "), refused
        return
    results = _check_finite(report)
    for key in ("tpot", "ttft", "request_latency"):
        assert results.get(key) is None or results[key] > 0, (key, results.get(key))
    if results.get("fits"):
        assert results["tpot"] > 0 and results["tokens_per_s"] > 0
    assert results["kv_tokens"] >= 0 and results["max_sequences"] >= 0
    if results["max_sequences"] == 0:
        assert not results["fits"]
        assert any("KV cache" in note or "context" in note for note in report.notes), report.notes


SEARCHED = [{"model": "llama-3.1-8b", "gpu": "h100", "context": "8K", "batch": 8},
            {"model": "qwen2.5-7b", "gpu": "h100", "context": "32K", "batch": 4}]


@pytest.mark.parametrize("ask", SEARCHED, ids=lambda a: a["model"])
def test_every_searched_configuration_holds_the_batch(ask):
    """Review w9 S4: the grid ran no searched ask (jobs.inference.serving.search_configurations, changed by a3aed2d):
    each catalog configuration it lists holds the batch at the context, with a positive TPOT."""
    report = estimate_inference(ask)
    results = _check_finite(report)
    assert results["ttft"] > 0 and results["tpot"] > 0
    rows = next(rows for title, rows in report.to_dict()["tables"].items() if title.startswith("catalog config"))
    assert len(rows) > 3
    for row in rows:
        assert row["max sequences"] >= ask["batch"] and _cell(row["TPOT ms"]) > 0, row


SIZED = [{"model": "llama-3.1-8b", "gpu": "h100", "prompt": "2K", "output_tokens": 256, "rps": 5, "ttft_p99": "2s",
          "tpot": "50ms"},
         {"model": "qwen2.5-7b", "gpu": "l4", "prompt": "8K", "output_tokens": 128, "rps": 2, "ttft_p99": "5s",
          "tpot": "100ms"}]


@pytest.mark.parametrize("ask", SIZED, ids=lambda a: a["model"])
def test_an_rps_sizing_meets_its_own_targets(ask):
    """Review w9 S4: the grid ran no --rps sizing (jobs.inference.sizing, changed by ae591bf): the chosen replicas
    serve the rate within the p99 TTFT and TPOT targets, and so does every row of the table of configurations that
    meet them (its text rounded: 2 decimals of req/s a replica, whole ms)."""
    report = estimate_inference(ask)
    results = _check_finite(report)
    ttft, tpot = float(ask["ttft_p99"][:-1]), float(ask["tpot"][:-2]) / 1000  # '2s', '50ms' -> s
    replicas = results["sized_config"]["replicas"]
    assert replicas * results["sized_rate_per_replica"] >= ask["rps"] * (1 - 1e-9)
    assert 0 < results["sized_ttft_p99"] <= ttft * (1 + 1e-9) and 0 < results["sized_tpot"] <= tpot * (1 + 1e-9)
    tables = report.to_dict()["tables"]
    rows = next(rows for title, rows in tables.items() if title.startswith("Configurations meeting"))
    for row in rows:
        assert int(row["replicas"]) * (_cell(row["req/s per replica"]) + 0.005) >= ask["rps"], row
        assert _cell(row["TTFT p99"]) <= ttft * 1000 + 0.5 and _cell(row["TPOT"]) <= tpot * 1000 + 0.5, row
