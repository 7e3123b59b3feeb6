"""Plain helpers and constants several test modules share (fixtures live in conftest.py). Test modules
import them as ``from helpers import ...``: pytest puts tests/ on sys.path (no tests/__init__.py,
the default 'prepend' import mode)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DEADLINE_COUNTS = (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144,
                   8192, 12288, 16384, 24576, 32768, 49152, 65536, 98304, 131072)
"""The 29 GPU counts the deadline search tries first: powers of two and 3 x powers of two, 8 ... 131,072 (then
the counts between the two that bracket the answer: planner.plan.deadline_counts_between)."""

SEARCHED_1E12 = 73_020 + 9_666 + 263_347
"""Layouts `plan llama-2-7b --global-batch-tokens 1e12` on DEADLINE_COUNTS evaluates (346,033): rows of the
runs shorter than MIN_PRUNED_RUN + one per long run + the long runs' fitting rows, each part derived or checked
in tests/test_search_count_1e12.py (the 263,347 fitting rows are the memory model's answer; 257,692 before the interleaved schedule's
warm-up was taken per pipeline rank, core.memory.activations.pipeline_micro_batches_in_flight)."""

NEOX_V1_ROWS = ("pythia-160m", "pythia-410m", "pythia-1.4b", "pythia-2.8b", "pythia-6.9b", "pythia-12b")
"""The GPT-NeoX v1.0 Pythia rows of training_runs.yaml."""


def fastest_with_failures(counts, **plan_inputs) -> dict[int, float]:
    """For each of ``counts`` GPUs, the fewest days with failures and checkpoints of any layout there (each
    layout's own 'w/ failures', jobs.plan.completes), from one `plan` search over those counts (PlanInputs
    ``plan_inputs``, ranked by time: no deadline rule); a count where nothing fits or completes is left out.
    A deadline is missed on a count when this exceeds it."""
    import numpy as np

    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import search

    table = search(PlanInputs(**plan_inputs, gpus=",".join(map(str, counts)), rank_by="time")).table
    return {int(c): float(np.min(table["days_with_failures"][table["gpus"] == c]))
            for c in counts if (table["gpus"] == c).any()}


def misses_below(answer: int, deadline: float, low: int, high: int, **plan_inputs) -> dict[int, float]:
    """Each count of the grid the deadline search walks from the common size ``low`` (the gap to ``high`` in
    planner.plan.DEADLINE_STEPS steps) below ``answer``, with the fewest days with failures any layout there
    needs (fastest_with_failures); asserts that every such count has a layout and misses ``deadline``."""
    from gpuplan.planner.plan import DEADLINE_STEPS, deadline_counts_between

    grid = (low,) + tuple(c for c in deadline_counts_between((low,), high, DEADLINE_STEPS) if c < answer)
    days = fastest_with_failures(grid, **plan_inputs)
    assert set(days) == set(grid) and all(d > deadline for d in days.values()), days
    return days


def one_line_refusal(code: int, err: str, fragment: str = "") -> None:
    """Assert a refusal as the house rule asks: exit status 2, one 'error: ' line, no traceback, and
    ``fragment`` in it."""
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, (code, err)
    assert fragment in err, err


def reference_runs_by_id() -> dict[str, dict]:
    """catalog.reference_runs()'s runs (training_runs.yaml) by id."""
    from gpuplan.catalog import reference_runs

    return {r["id"]: r for r in reference_runs()["runs"]}


def check_eighth_set_rows(runs: dict[str, dict], by_hand: dict[str, tuple[float, float]]) -> None:
    """Session 25's eighth GPU-hours set: each run's 6ND MFU from its source (jobs.validation.gpu_hours.source_6nd_mfu)
    is the hand-worked one (``by_hand``: id -> (computed, its rounded value in the test's docstring)), and the set is
    held out (in PREDICTED_SETS, neither fitted nor revised after its miss)."""
    import pytest

    from gpuplan.jobs.validation.gpu_hours import EIGHTH_SET, FITTED_RUNS, PREDICTED_SETS, REVISED_AFTER_MISS, \
        source_6nd_mfu

    for run_id, (mfu, rounded) in by_hand.items():
        assert mfu == pytest.approx(rounded, abs=5e-4), run_id
        assert source_6nd_mfu(runs[run_id]) == pytest.approx(mfu, rel=1e-9), run_id
    assert EIGHTH_SET == ("skywork-13b", "glm-130b", "sea-lion-7b", "sea-lion-3b")
    assert ("eighth set (session 25), not in the bar", EIGHTH_SET) in PREDICTED_SETS
    assert not set(EIGHTH_SET) & set(FITTED_RUNS + REVISED_AFTER_MISS)
    assert all("Eighth set for the end-to-end kind" in runs[i]["notes"] for i in EIGHTH_SET)


def published_rows_by_id() -> dict[str, dict]:
    """The published-throughput rows by id (jobs.validation.published_throughput.published_throughput_rows, a
    fresh copy per call); conftest's module-scoped ``published_rows`` fixture serves the same dict to tests."""
    from gpuplan.jobs.validation.published_throughput import published_throughput_rows

    return {r["id"]: r for r in published_throughput_rows()}


def row_step_settings(monkeypatch, run: dict):
    """The StepSettings jobs.validation.published_throughput.predicted_step hands step_time for a published row
    (step_time stubbed under ``monkeypatch`` to keep them; nothing is timed)."""
    from gpuplan.jobs.validation import published_throughput as P

    seen = {}
    monkeypatch.setattr(P, "step_time", lambda spec, cluster, settings, **kw: seen.setdefault("s", settings))
    P.predicted_step(run)
    return seen["s"]


def serving_rows_by_id(section: str) -> dict[str, dict]:
    """One section (latency / online / excluded) of catalog/reference/inference_measurements.yaml by id
    (jobs.validation.inference.reference_measurements)."""
    from gpuplan.jobs.validation import inference

    return {e["id"]: e for e in inference.reference_measurements()[section]}


SHARED_DIR: Path | None = None
"""The folder every pytest-xdist worker of one run shares (the run's base temp folder, set by conftest's
share_between_workers), where _computed_once leaves its lists for the other workers; None in a run of one process."""


@cache
def _computed_once(module: str, function: str) -> tuple:
    """``module.function()``'s list, computed once a test run (its items are frozen dataclasses): by the first worker
    that asks, under an exclusive lock on SHARED_DIR/<module>.<function>.lock (fcntl.flock), and pickled there; a
    worker that asks later reads that file (a worker that asks meanwhile waits for it, no longer than computing it
    itself: validation_cases ~10 s, planner_choice_cases ~6 s a worker, 2026-12-07 on the 2-core host)."""
    from importlib import import_module

    def compute() -> tuple:
        return tuple(getattr(import_module(module), function)())

    try:
        import fcntl  # POSIX only: elsewhere each worker computes its own, as before
    except ImportError:
        return compute()
    if SHARED_DIR is None:
        return compute()
    import pickle

    stored = SHARED_DIR / f"{module}.{function}.pickle"
    with open(SHARED_DIR / f"{module}.{function}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if stored.is_file():
            return pickle.loads(stored.read_bytes())
        result = compute()
        partial = stored.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(result))
        partial.replace(stored)
        return result


def validation_cases_once() -> list:
    """jobs.validation.estimate.validation_cases(), computed once a test run (_computed_once), a fresh
    list per call. A test that monkeypatches its inputs calls validation_cases() itself."""
    return list(_computed_once("gpuplan.jobs.validation.estimate", "validation_cases"))


def planner_choice_cases_once() -> list:
    """jobs.validation.planner_choice.planner_choice_cases(), computed once a test run (_computed_once),
    a fresh list per call. A test that monkeypatches its inputs calls planner_choice_cases() itself."""
    return list(_computed_once("gpuplan.jobs.validation.planner_choice", "planner_choice_cases"))


def fsdp_copy_census() -> tuple:
    """scripts/fsdp_copy_census.py's three cases of two bias-free Linear(64, 64) layers on 2 gloo ranks (one plain
    pass, then 1 and 3 micro-batches as torch.distributed.pipelining drives a stage), run once in one process group
    for test_fsdp_copies.py and test_fsdp_pipeline_grads.py: ((micro-batches, ops), ...), each case's ops as the
    script prints them (a case alone prints the same line: checked when the cases were merged, 2026-12-07). One run,
    not three: each started torch in a parent and two spawned ranks, ~5.5 s CPU a run on the 2-core host."""
    import json
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[1] / "scripts/fsdp_copy_census.py"
    done = subprocess.run([sys.executable, str(script), "--world-size", "2", "--width", "64", "--layers", "2",
                           "--json", "--pipeline-micro-batches", "0,1,3"], capture_output=True, text=True,
                          timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return tuple((line["pipeline_micro_batches"], line["ops"]) for line in lines)


def fsdp_copy_census_ops(micro_batches: int) -> dict:
    """The ops of fsdp_copy_census()'s case of ``micro_batches`` (0: one plain pass), computed once a test run."""
    return dict(_computed_once("helpers", "fsdp_copy_census"))[micro_batches]


def serving_cases_by_id() -> dict[str, tuple]:
    """jobs.validation.inference.inference_validation_cases() by case id (its first field)."""
    from gpuplan.jobs.validation import inference

    return {c[0]: c for c in inference.inference_validation_cases()}


def group_links(gpu: str, ranks: int, stride: int = 1, **network):
    """core.comm.topology's links of a communicator of ``ranks`` catalog ``gpu``s, ``stride`` ranks apart
    (cluster_for(load_accelerator(gpu), **network).group(ranks, stride)); ``network`` is cluster_for's keywords."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.core.comm.topology import cluster_for

    return cluster_for(load_accelerator(gpu), **network).group(ranks, stride)


def free_port() -> int:
    """A TCP port on 127.0.0.1 the OS had free a moment ago (bound to port 0, then released)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def field_refusal(result: tuple[int, str, str], field: str, fragment: str = "") -> str:
    """Assert a CLI ``(code, out, err)`` is a one_line_refusal that names ``field`` first ('error: <field>: ...'),
    with ``fragment`` in it, nothing on stdout and no Python warning; returns the error line."""
    code, out, err = result
    one_line_refusal(code, err, fragment)
    assert err.startswith(f"error: {field}: ") and out == "" and "Warning" not in err, err
    return err


def published_memory_cases_with_states(monkeypatch) -> list[tuple]:
    """(case, allocated peak, model states) for each published memory case the validation estimates
    (jobs.validation.published_memory.published_cases, estimated not None), bytes; the model states are weights +
    master + optimizer as the fit rule takes them. Spies on core.memory.training.peak_allocated, which the
    validation calls once per estimated case (asserted)."""
    import gpuplan.jobs.validation.published_memory as P
    from gpuplan.core.memory import training as M

    peaks, states = [], []
    original = M.peak_allocated

    def remembering_states(spec, layout, settings):
        m = M.peak_memory(spec, layout, settings)
        states.append(m.weights + m.master + m.optimizer)
        peaks.append(original(spec, layout, settings))
        return peaks[-1]

    monkeypatch.setattr(P.M, "peak_allocated", remembering_states)
    estimated = [c for c in P.published_cases() if c.estimated is not None]
    assert len(estimated) == len(peaks) == len(states)
    return list(zip(estimated, peaks, states))


def report_lines(report: dict) -> dict[str, dict]:
    """A `--json` report's lines (each section's 'lines') by key."""
    return {line["key"]: line for section in report["sections"] for line in section["lines"]}


def titled_table(report, prefix: str):
    """The first of a Report's tables whose title starts with ``prefix``, and its column indices by name."""
    table = next(t for t in report.tables if t.title.startswith(prefix))
    return table, {c: k for k, c in enumerate(table.columns)}


def titan_layer_totals(spec, ops) -> tuple:
    """core.time.titan_ops.layer_classes summed over the classes: (forward kernels, forward bytes, backward
    kernels, backward bytes) per token of one layer."""
    from gpuplan.core.time import titan_ops

    classes = titan_ops.layer_classes(spec, ops)
    return (sum(c.forward_kernels for c in classes), sum(c.forward_bytes for c in classes),
            sum(c.backward_kernels for c in classes), sum(c.backward_bytes for c in classes))


def op_class_values(out: str) -> tuple[dict, dict]:
    """A `--json` report's op-class section (the first whose title names 'op class') as {key: value}, and the
    report."""
    report = json.loads(out)
    section = next(s for s in report["sections"] if "op class" in s["title"])
    return {line["key"]: line["value"] for line in section["lines"]}, report


def web_refusal(response, field: str, fragment: str = "") -> str:
    """A 4xx naming ``field`` (the same one-line message as the CLI's); returns the message."""
    assert 400 <= response.status_code < 500, response.text[:400]
    body = response.json()
    message = body.get("message") or str(body.get("detail"))
    assert body.get("field") == field or message.startswith(f"{field}: "), body
    assert fragment in message and "\n" not in message and "Traceback" not in message, message
    return message


def four_door_refusal(run_cli, client, tmp_path, job: str, route: str, ask: dict, field: str, fragment: str) -> str:
    """The same one-line refusal from the CLI flags, a plan file, the web API and the Python API; returns it."""
    import pytest

    import gpuplan
    from gpuplan import InputError

    flags = [f"--{k.replace('_', '-')}" + ("" if v is True else f"={v}") for k, v in ask.items() if k != "model"]
    flag = field_refusal(run_cli(job, "--model", ask["model"], *flags), field, fragment)
    plan = tmp_path / "ask.yaml"
    plan.write_text("".join(f"{k}: {v}\n" for k, v in ask.items()), encoding="utf-8")
    planned = field_refusal(run_cli(job, str(plan)), f"{plan}: {field}", fragment)
    web = web_refusal(client.post(f"/api/{route}", json=ask), field, fragment)
    inputs, estimate = {"train": ("TrainingInputs", "estimate_training"), "budget": ("BudgetInputs", "estimate_budget"),
                        "plan": ("PlanInputs", "plan_report"), "memory": ("MemoryInputs", "estimate_memory"),
                        "infer": ("InferenceInputs", "estimate_inference")}[job]
    with pytest.raises(InputError) as api:
        getattr(gpuplan, estimate)(getattr(gpuplan, inputs)(**ask))
    assert flag.strip() == f"error: {web}" == f"error: {api.value}" == planned.strip().replace(f"{plan}: ", "")
    return web


def debugmodel_config(folder: Path) -> str:
    """torchtitan's llama3 debugmodel (torchtitan/models/llama3/__init__.py@b5bcd76 _debugmodel: dim 256, 16 heads,
    6 layers, vocab 2048, untied lm_head; FFN compute_ffn_hidden_dim(256, multiple_of=256) = 768) as a config.json."""
    path = folder / "config.json"
    path.write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256, "intermediate_size": 768,
        "num_attention_heads": 16, "num_key_value_heads": 16, "num_hidden_layers": 6, "vocab_size": 2048,
        "max_position_embeddings": 2048, "tie_word_embeddings": False, "hidden_act": "silu", "rms_norm_eps": 1e-5}))
    return str(path)


def scalar_collective_evaluations(monkeypatch) -> list:
    """A spy on core.serving.kernels.collective_seconds recording each scalar (one message) evaluation, in bytes
    (tests/test_slow_asks_w16.py, tests/test_sizing_speed_s22.py: which all-reduces a sizing works out one by one)."""
    from gpuplan.core.serving import kernels

    calls, real = [], kernels.collective_seconds

    def spy(kind, message, links):
        if getattr(message, "ndim", 0) == 0:
            calls.append(float(message))
        return real(kind, message, links)

    monkeypatch.setattr(kernels, "collective_seconds", spy)
    return calls


def bisected_rate(ok, prefill_s: float):
    """core.serving.load.max_rate's bisection over a rate predicate ``ok`` (a ReplicaLoad or None), from a trickle
    (1e-6 requests/s) up to the prompt queue's limit 1 / prefill_s, to 1e-4 relative: the reference searches the
    sizing tests compare max_rate with (test_serving_sizing_search, test_sizing_speed_s22)."""
    if ok(1e-6) is None:
        return None
    lo, hi = 1e-6, 1.0 / prefill_s
    while hi - lo > 1e-4 * lo:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ok(mid) is not None else (lo, mid)
    return ok(lo)


@dataclass(frozen=True)
class MixtralLogFigures:
    """The Megatron Mixtral log (tests/fixtures/logs/megatron_mixtral.log: Megatron-LM#756, mixtral-8x7b on 16 H100s)
    timed at its run's own layout, tp 2 / ep 8 / dp 8 / ZeRO-1, seq 2,048, 128 sequences a step: the figures
    test_calibrate, test_mixtral_log_layout_s25 and test_calibration_loop check, in one place (seconds; the factor a
    ratio). The step's parts are worked by hand in test_mixtral_log_layout_s25 (the MoE host term: 2.901 ms x 32
    layers x 16 micro-batches = 1.485 s) and test_calibrate (C + A 3.940 s, exposed comm 0.524 s)."""

    measured_s: float = 5.48935
    """The log's step as the log reader takes it (tests/test_training_logs.py)."""
    megatron_step_s: float = 4.465
    """train's step of the log's flags under --framework megatron (calibrate.train_step), the MoE host term in it."""
    generic_step_s: float = 3.047
    """The same under --framework generic (no host term), the step calibrate timed logs with before session 25."""
    compute_factor: float = 2.037
    """The compute factor calibrate fits to reach the log under megatron (calibrate.reproduce; the linear fit: 1.260)."""


MIXTRAL_LOG = MixtralLogFigures()


CALIBRATION_RANGE = "must be within 0.1 to 10"
"""The words of a ratio factor's refusal (calibrate/model.FACTOR_RANGE: hostile waves 27b and 28)."""
CALIBRATION_ASK = {"model": "llama-3.2-1b", "gpu": "h200", "gpus": 8, "tokens": "1B", "framework": "hf"}
"""The ask the calibration refusals are tried on (the H200 trials' model and GPU)."""


def h200_calibration_doc() -> dict:
    """The calibration the two H200 trials of tests/fixtures/h200 fit (compute_time 0.8635), as a JSON document."""
    from gpuplan.calibrate import fit_calibration, load_measurement
    from gpuplan.calibrate.model import calibration_to_dict

    cal = fit_calibration([load_measurement(p) for p in sorted((Path(__file__).parent / "fixtures" / "h200")
                                                               .glob("*.json"))])
    assert abs(cal.compute_time.value - 0.8635) <= 5e-4 and cal.compute_time.status == "fitted"
    return json.loads(json.dumps(calibration_to_dict(cal)))


def calibration_with(doc: dict, name: str, value) -> dict:
    """``doc`` with factor ``name``'s value replaced (its band cleared: a band must hold its value, wave 21)."""
    out = json.loads(json.dumps(doc))
    out[name].update(value=value, stderr=None, low=None, high=None)
    return out


def calibration_refused_by_flag_and_plan_file(run_cli, tmp_path: Path, doc: dict, field: str, words: str) -> str:
    """The one line `train --calibration FILE` refuses ``doc`` with, naming ``field`` with ``words``, and the same line
    from a plan file naming it (prefixed by the plan's path); returns the flag's line."""
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in CALIBRATION_ASK.items()]
    flag = field_refusal(run_cli("train", *flags, f"--calibration={path}"), field, words)
    plan = tmp_path / "ask.yaml"
    plan.write_text("".join(f"{k}: {v}\n" for k, v in CALIBRATION_ASK.items()) + f"calibration: {path}\n",
                    encoding="utf-8")
    assert field_refusal(run_cli("train", str(plan)), f"{plan}: {field}", words).replace(f"{plan}: ", "") == flag
    return flag
