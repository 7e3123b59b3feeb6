import importlib.util
import json
import sys
from pathlib import Path

import pytest

from gpuplan.cli import main

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def pytest_configure(config):
    """The suite's bytecode compiled once, before the xdist workers start (tests/suite_bytecode.py); in each of
    several xdist workers, torch's intra-op threads one (one_thread_a_worker)."""
    from suite_bytecode import compile_once

    compile_once(config)
    one_thread_a_worker()


def one_thread_a_worker() -> None:
    """OMP_NUM_THREADS=1 in a pytest-xdist worker when there are several (unless the environment already sets it),
    as torchrun gives each of its ranks (torch/distributed/run.py@v2.13.0:872): torch's default is a thread a core,
    so 2 workers on 2 cores ran 4 OpenMP threads that spin-wait for each other. test_trial.py's 10 in-process trials
    under the other agents' load (2026-12-07, 2-core host, -n 0): 28.7 s user at 2 threads, 16.6 s at 1, wall
    30.4 -> 22.0 s. Set before any worker imports torch (nothing the suite imports at collection does), so torch
    reads it when it builds its pool; it also reaches the subprocesses the suite starts, the README's trial loop
    included (tests/test_readme.py: 78.2 -> 50.4 s CPU for its first `gpuplan profile` under load). A timing a
    trial records still describes the threads it ran on (the measurement file's cpu_threads); no test asserts a
    thread count. test_trial.py,
    test_calibrate.py and test_cpu_precision.py on 2 workers: 109.0 -> 83.3 s CPU (user + sys), wall 109 -> 95 s;
    test_gpu_memory_check.py, test_fsdp_pipeline_grads.py and test_fsdp_copies.py (their scripts' processes inherit
    it): 119.6 -> 89.9 s CPU, wall 126 -> 78 s."""
    import os

    if os.environ.get("PYTEST_XDIST_WORKER") and int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        if "torch" in sys.modules:  # not expected; the env alone would then be read too late
            sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


HEAVY_FIRST = (
    "test_readme.py", "test_measure.py", "test_trial.py", "test_gpu_memory_check.py", "test_calibrate.py",
    "test_titan_published.py", "test_planner_titan_w13.py", "test_web_e2e.py", "test_web_fuzz.py",
    "test_w2_completion_offer.py", "test_web_hostile_last_mile.py")
"""Files run first, in this order (2026-12-07 08:48, --durations=0 of the whole suite on 2 workers, the 2-core host):
the files whose single tests or module fixtures are the longest (the README's trial loop 234 s; module fixtures
test_gpu_memory_check's dry run 30 s, test_calibrate's 27 s, test_measure's 16 s, test_titan_published's 4.6 s,
test_planner_titan_w13's 2.6 s) and the long files that sort last by name (test_web_e2e 41 s, test_web_fuzz 41 s,
test_w2_completion_offer 23 s, test_web_hostile_last_mile 20 s). Together ~230 tests, inside the first chunk
pytest-xdist hands one worker (a quarter of its share, ~970 tests), so none of them is split between the workers
(a split module builds its fixtures on both) and none is handed out last. Only the order changes."""


def pytest_collection_modifyitems(config, items):
    """HEAVY_FIRST's files first, in that order, each file's tests kept together and in their own order (module
    fixtures are built as often as before), every other file after them as collected. pytest-xdist hands tests out in
    collection order, chunk by chunk, to whichever worker runs short: with the long files first the last chunks are
    short tests, so the two workers end together, where a long test handed out last kept one worker busy while the
    other had nothing left. Every worker sorts alike (xdist requires one collection)."""
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


@pytest.fixture(scope="session", autouse=True)
def share_between_workers(tmp_path_factory):
    """helpers.SHARED_DIR: in a pytest-xdist worker, the run's base temp folder (each worker's own is
    <run>/popen-gwN, so its parent is the run's, the same for all its workers and new each run); None alone."""
    import os

    import helpers

    if os.environ.get("PYTEST_XDIST_WORKER"):
        helpers.SHARED_DIR = tmp_path_factory.getbasetemp().parent
    yield
    helpers.SHARED_DIR = None


@pytest.fixture(scope="session")
def load_script():
    """``load_script(name)``: scripts/<name>.py imported as a module, once a session, registered in
    sys.modules under ``name`` (dataclasses look their module up there)."""
    loaded = {}

    def load(name: str):
        if name not in loaded:
            spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            loaded[name] = module
        return loaded[name]

    return load


@pytest.fixture
def run_cli(capsys):
    """Run the CLI in-process: returns (exit status, stdout, stderr)."""

    def run(*args: str):
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def run_json(run_cli):
    def run(*args: str) -> dict:
        code, out, err = run_cli(*args, "--json")
        assert code == 0, err
        return json.loads(out)

    return run


@pytest.fixture(scope="module")
def one_second_log(tmp_path_factory):
    """A training log of five 1.0 s steps (calibrate skips the first): the calibration round trips' measurement, so a
    calibrated `train --mfu predicted` with the log's flags answers 1.0 s."""
    path = tmp_path_factory.mktemp("one_second_log") / "steps.csv"
    path.write_text("step,step_time_s\n1,1.0\n2,1.0\n3,1.0\n4,1.0\n5,1.0\n")
    return path


@pytest.fixture(scope="module")
def client():
    """A FastAPI test client of the web app (gpuplan.web.app.create_app), one per test module; a module that needs
    other settings (raise_server_exceptions=False, a calibration folder) defines its own ``client``."""
    from fastapi.testclient import TestClient

    from gpuplan.web.app import create_app

    return TestClient(create_app())


@pytest.fixture(scope="module")
def published_rows():
    """The published-throughput rows by id (helpers.published_rows_by_id), one dict per test module."""
    from helpers import published_rows_by_id

    return published_rows_by_id()


def _published_row_fields(run: dict, **extra) -> tuple[dict, dict]:
    """A published row as a user types it into `gpuplan plan` (Python API): the PlanInputs fields
    (model, GPU count, sequence, batch, the row's degrees, tokens 1e12, recompute none; ``extra``
    overrides or adds) and the degrees alone."""
    lay = run["layout"]
    degrees = dict(tp=lay["tp"], pp=lay["pp"], vpp=lay.get("vpp") or 1, cp=lay.get("cp") or 1, ep=lay.get("ep") or 1,
                   zero=lay.get("zero") or 0, micro_batch=lay["micro_batch"])
    fields = dict(model=run["model"]["catalog"], tokens=1e12, gpu=run["gpu"], gpus=run["gpus"],
                  seq_len=run["model"]["seq_len"], global_batch=lay["global_batch"], recompute="none", **degrees)
    return fields | extra, degrees


def _plan_published_row(run: dict, **extra):
    """The plan (planner.plan.Plan) of exactly the row's layout, with _published_row_fields(run, **extra)."""
    from gpuplan.core.parallel import ParallelLayout
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.planner.plan import evaluate_layout

    fields, degrees = _published_row_fields(run, **extra)
    lay = run["layout"]
    layout = ParallelLayout(dp=lay["dp"], global_batch=lay["global_batch"], **degrees)
    return evaluate_layout(evaluator_for(PlanInputs(**fields)), layout, fields["recompute"], lay["global_batch"])


@pytest.fixture
def published_row_fields():
    """_published_row_fields: (PlanInputs fields, degrees) of a published row typed into `gpuplan plan`."""
    return _published_row_fields


@pytest.fixture
def plan_published_row():
    """_plan_published_row: `gpuplan plan` (Python API) held to a published row's own layout."""
    return _plan_published_row


CASE_SECONDS = 120
"""Seconds any one test may take in-process under ``time_box`` (the slowest hostile-input case takes ~1 s): past it
the test fails as a hang."""


@pytest.fixture
def time_box():
    """An in-process case time-boxed (SIGALRM in the main thread, where the CLI and the test client's caller run),
    so a hang fails the case rather than the suite; a module asks for it with
    ``pytestmark = pytest.mark.usefixtures("time_box")``."""
    import signal

    def expire(signum, frame):
        raise TimeoutError(f"the case ran past {CASE_SECONDS} s: a hang")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(CASE_SECONDS)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture(autouse=True)
def serving_memos_follow_patches(request):
    """A test that monkeypatches starts and ends with the serving memos empty (core.serving.roofline.clear_memos:
    _step_constants, _gemm_flops_of, outside_layers' all-gathers by row; core.serving.step_memo): they remember
    decode steps and their pieces by the step's inputs, so a patched module constant or rule (GF.GRAPH_KERNEL_S,
    KR.own_kernel_off, roofline.gemm_flops_per_token) would otherwise read a table made before (or leave one made
    under) the patch. Nothing is cleared for the other tests, nor when serving was never imported."""
    import sys

    patches = "monkeypatch" in request.fixturenames

    def forget():
        roofline, memo = (sys.modules.get(f"gpuplan.core.serving.{name}") for name in ("roofline", "step_memo"))
        if patches and roofline is not None:
            roofline.clear_memos()
        if patches and memo is not None:
            memo.clear()

    forget()
    yield
    forget()


@pytest.fixture(scope="session", autouse=True)
def cli_commands_built_once():
    """Each `gpuplan <command>` built once a session, as once a process: gpuplan.cli.LazyGroup.get_command imports
    gpuplan.commands.<name> and calls its command(), which builds a click command from the job's schema (an option
    per field, its metavar from the field's Literal choices), ~7 ms of CPU; a process builds it once, but every
    in-process run_cli call built it again: half the CPU of tests/test_hostile_cli.py's curated cases (cProfile,
    2026-12-07: 28.7 of 59.3 s in build.schema_options). A built command holds no state of a run (click makes a
    Context per call; the callbacks import what they run when called, so a test's monkeypatch still reaches it).
    Only known names are kept (an unknown one is None, built from nothing)."""
    from gpuplan import cli

    built: dict[str, object] = {}
    build = cli.LazyGroup.get_command

    def get_command(self, ctx, cmd_name):
        if cmd_name not in built:
            command = build(self, ctx, cmd_name)
            if command is None:
                return None
            built[cmd_name] = command
        return built[cmd_name]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli.LazyGroup, "get_command", get_command)
        yield


@pytest.fixture(scope="session", autouse=True)
def cpu_microbenchmarks_once():
    """gpuplan.profile._trial_runtime.cpu_microbenchmarks (a ~0.3 s GEMM and a ~0.2 s copy timing loop, best of
    repeats, ~0.6 s a call) measured once a session per (dtype, torch threads), a fresh dict per call: every
    in-process trial of the suite (16 in tests/test_trial.py, test_calibrate.py, test_profile_*.py and the hostile
    files; 9.4 s in all on 2 cores) reads the same machine. The first call of each key runs the real code, and the
    subprocess trials (tests/test_readme.py's loop, torchrun) run it uncached, so a broken benchmark still fails."""
    import copy

    from gpuplan.profile import _trial_runtime as runtime

    measure, measured = runtime.cpu_microbenchmarks, {}

    def once(torch, dtype) -> dict:
        key = (str(dtype), torch.get_num_threads())
        if key not in measured:
            measured[key] = measure(torch, dtype)
        return copy.deepcopy(measured[key])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runtime, "cpu_microbenchmarks", once)
        yield


_FROZEN: set[str] = set()


@pytest.fixture(scope="module", autouse=True)
def gc_freeze_long_lived():
    """The long-lived heap moved out of the cyclic collector's reach (gc.freeze), twice a session: at the first
    module (what collection built: modules, parametrize values) and at the first module after transformers was
    imported (torch and transformers, ~370k objects). Each after a full gc.collect(), so no garbage is frozen;
    reference counting still frees frozen objects. Every later full collection (gpuplan.profile.measure calls one
    per measurement, ~0.38 s at the ~700k objects the suite holds by tests/test_hostile_*) then walks only what
    was made since."""
    import gc
    import sys

    stage = "torch" if "transformers" in sys.modules else "collected"
    if stage not in _FROZEN:
        _FROZEN.add(stage)
        gc.collect()
        gc.freeze()
    yield
