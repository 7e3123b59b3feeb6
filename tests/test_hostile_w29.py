"""Hostile inputs, wave 29 (helper HX29, session 25): each case is refused in one line naming the field, exit status
2, or answered in time, at every door that takes it, with nothing half-written."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

# ---- 1. a command group's help (the answer of `gpuplan catalog`) where stdout cannot take it ---------------------


def _catalog_help_into(stdout) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuplan", "catalog"], stdout=stdout, stderr=subprocess.PIPE,
                          timeout=60, text=True)


def test_a_group_help_on_a_full_device_is_one_line_exit_2():
    """`gpuplan catalog > /dev/full` printed its help outside the guard an answer's write has: a traceback
    (OSError: No space left on device), exit 1; now the line `gpuplan catalog models > /dev/full` gives."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        done = _catalog_help_into(full)
    assert done.returncode == 2 and "Traceback" not in done.stderr, (done.returncode, done.stderr[-300:])
    assert done.stderr == "error: output: cannot be written (No space left on device); write to a device with space\n"


def test_a_group_help_into_a_closed_pipe_ends_as_an_answer_does():
    """`gpuplan catalog | true` (the reader gone first): BrokenPipeError traceback, exit 1; now 141 and silent, as
    tests/test_hostile_last_mile.py asks of an answer command."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = _catalog_help_into(write)
    finally:
        os.close(write)
    assert done.returncode == 141 and done.stderr == "", (done.returncode, done.stderr[-300:])


def test_a_group_help_is_still_printed(run_cli):
    code, out, err = run_cli("catalog")
    assert code == 0 and err == "" and out.startswith("Usage: gpuplan catalog") and "models" in out


# ---- 2. many asked GPU counts with no layout: each smaller count tested once, not once per ask ---------------------


def test_many_counts_without_a_layout_test_each_smaller_count_once(monkeypatch):
    """`plan llama-3.1-8b --gpu h100 --seq-len 16M --gpus 1024,2048,...,262144` (256 counts; one 16M-token sequence
    a step, so almost no count has a layout): each count's fallback windows (planner.fallback.windows_below) were
    tested for a layout afresh, 47,277 tests of 493 counts, 8-10 s whole process (2 shared cores); now each count
    once (2.2 s), the same answer."""
    import gpuplan.planner.fallback as fallback
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import search

    tested: list[int] = []
    original = fallback.has_layout
    monkeypatch.setattr(fallback, "has_layout", lambda ev, count, *a: tested.append(count) or original(ev, count, *a))
    start = time.perf_counter()
    found = search(PlanInputs(model="llama-3.1-8b", gpu="h100", seq_len="16M",
                              gpus=",".join(str(1024 * i) for i in range(1, 257))))
    assert time.perf_counter() - start < 5
    assert len(tested) == len(set(tested)) > 0, (len(tested), len(set(tested)))
    assert found.table["fits"].any()


# ---- 3. report's plots under a matplotlib setting matplotlib refuses ------------------------------------------------

REPORT_PLAN = "model: llama-3.1-8b\ngpu: h100\ngpus: 8\ntokens: 1B\n"


@pytest.mark.parametrize("backend", ["nonsense", " agg"])
def test_report_plots_under_a_backend_matplotlib_refuses_name_the_environment(tmp_path, backend):
    """`MPLBACKEND=nonsense gpuplan report plan.yaml --out r.html`: matplotlib's import raised ValueError ('Key
    backend: ... is not a valid value'), an internal error, exit 70; now the environment is named, as
    adapters/hub.py names HF_* settings huggingface_hub cannot read, and nothing is written."""
    pytest.importorskip("matplotlib")
    plan, out = tmp_path / "p.yaml", tmp_path / "r.html"
    plan.write_text(REPORT_PLAN)
    done = subprocess.run([sys.executable, "-m", "gpuplan", "report", str(plan), "--out", str(out)], timeout=120,
                          capture_output=True, text=True, env=dict(os.environ, MPLBACKEND=backend))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, (done.returncode, done.stderr[-400:])
    assert done.stderr.startswith("error: environment: got 'MPLBACKEND'; matplotlib cannot read its settings (Key "
                                  "backend: "), done.stderr
    assert done.stderr.endswith("); fix or unset them, or pass --no-plots\n") and not out.exists()


def test_report_without_plots_does_not_read_matplotlib_settings(tmp_path):
    plan, out = tmp_path / "p.yaml", tmp_path / "r.html"
    plan.write_text(REPORT_PLAN)
    done = subprocess.run([sys.executable, "-m", "gpuplan", "report", str(plan), "--out", str(out), "--no-plots"],
                          timeout=120, capture_output=True, text=True, env=dict(os.environ, MPLBACKEND="nonsense"))
    assert done.returncode == 0 and out.exists(), done.stderr[-400:]


# ---- 4. calibrate: a copy of a measurement under another name is not a second measured run -------------------------

TRIAL = os.path.join(os.path.dirname(__file__), "fixtures", "h200", "profile_llama-3.2-1b_bf16_mb2_s2048.json")
MIXTRAL_LOG = os.path.join(os.path.dirname(__file__), "fixtures", "logs", "megatron_mixtral.log")
MIXTRAL = ("--model", "mixtral-8x7b", "--gpu", "h100", "--gpus", "16", "--seq-len", "2048", "--ep", "4", "--zero",
           "1", "--tp", "1", "--pp", "1")


@pytest.mark.parametrize("source, flags", [(TRIAL, ()), (MIXTRAL_LOG, MIXTRAL)], ids=["trial", "megatron-log"])
def test_a_copied_measurement_is_refused_naming_the_copy(run_cli, tmp_path, source, flags):
    """`calibrate m.json copy.json` (a byte copy) was read as two measured runs: the trial fitted the matmul time
    alone, 0.895x from '2 measurements, residuals 0', where m.json alone ties it to the compute time at 0.950x; the
    same file under two names or a link was refused already (calibrate/sources.load_measurements)."""
    from helpers import field_refusal

    copy = tmp_path / f"copy{os.path.splitext(source)[1]}"
    copy.write_bytes(open(source, "rb").read())
    out = tmp_path / "cal.json"
    err = field_refusal(run_cli("calibrate", source, str(copy), *flags, "--out", str(out)), "files")
    assert err == (f"error: files: got '{copy}'; is the same measurement as '{source}' (every field and number "
                   "equal: a copy); give each measured run once\n") and not out.exists()


def test_a_copied_table_is_refused_though_its_note_names_its_path(run_cli, tmp_path):
    """A table's note begins with its own path ('a.csv: no logged TFLOP/s or MFU states ...'), so a copy under another
    name differed in that note alone and was fitted as a second run ('2 measurements, residuals 0'; final read s25)."""
    from helpers import field_refusal

    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    for path in (a, b):
        path.write_text("step,step_time_s\n1,1.0\n2,1.0\n3,1.0\n")
    flags = ("--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--seq-len", "8192", "--zero", "3",
             "--global-batch", "8")
    err = field_refusal(run_cli("calibrate", str(a), str(b), *flags), "files")
    assert f"got '{b}'; is the same measurement as '{a}'" in err


def test_two_measured_runs_and_one_alone_are_still_calibrated(run_cli):
    other = os.path.join(os.path.dirname(TRIAL), "profile_llama-3.2-1b_full_mb1_s4096.json")
    for files in ((TRIAL,), (TRIAL, other)):
        code, out, err = run_cli("calibrate", *files)
        assert code == 0 and out.startswith("Calibration from measurements"), err


# ---- 5. calibrate --target-gpus: a count the measured experts cannot lay out on --------------------------------------


@pytest.mark.parametrize("target", ["6", "7", "10"])
def test_an_extrapolation_target_the_measured_experts_cannot_use_is_refused(run_cli, tmp_path, target):
    """The Megatron log measured mixtral-8x7b at ep 4 on 16 GPUs (tp 1, pp 1); `--target-gpus 7` was weak-scaled to
    dp 7 with ep 4 (a step time, MFU and throughput for a layout Megatron-Core refuses: etp x ep must divide a stage's
    ranks, core.parallel.check_expert_layout) and the calibration written; now refused before anything is written."""
    from helpers import field_refusal

    out = tmp_path / "cal.json"
    err = field_refusal(run_cli("calibrate", MIXTRAL_LOG, *MIXTRAL, "--target-gpus", target, "--out", str(out)),
                        "target_gpus")
    assert err == (f"error: target_gpus: got {target}; the measured layout does not lay out on it: ep 4: etp 1 x ep 4 "
                   f"must divide dp x cp x tp = {target} (the experts are laid out over etp x ep of a pipeline "
                   "stage's ranks; etp = tp unless --etp is given)\n") and not out.exists()


@pytest.mark.parametrize("target, sequences", [("8", 64), ("12", 96), ("16384", 131072)])
def test_an_extrapolation_target_the_experts_fit_is_answered(run_json, target, sequences):
    """Weak scaling keeps the 8 sequences a data-parallel rank of the log (128 on dp 16): 8 x dp at the target."""
    lines = {line["key"]: line for s in run_json("calibrate", MIXTRAL_LOG, *MIXTRAL, "--target-gpus", target)["sections"]
             for line in s["lines"]}
    assert lines["x_target_step"]["formula"] == f"{sequences} sequences x 2048 tokens per step"


# ---- 6. a config.json near the size limit is read once a command, not once per look-up --------------------------------

LLAMA2 = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "llama-2-7b", "config.json")


def _counting_reads(monkeypatch) -> list[str]:
    from gpuplan.adapters import hf_config

    reads: list[str] = []
    original = hf_config.load_hf_config
    monkeypatch.setattr(hf_config, "load_hf_config", lambda path: reads.append(str(path)) or original(path))
    return reads


def test_a_big_config_is_read_once_a_command(run_cli, tmp_path, monkeypatch):
    """A 3.7 MB config.json (the Llama 2 7B shape and 220,000 keys no reader reads; the limit is 4 MiB) was read and
    checked three times by `gpuplan memory` (ModelFields.spec, position_limit_of twice): 4.8 s of CPU, 0.3 s for
    the file alone; now once (adapters.resolve._config_file), 1.9 s."""
    text = open(LLAMA2).read().rstrip().rstrip("}")
    config = tmp_path / "config.json"
    config.write_text(text + ", " + ",".join(f'"k{i}": {i}' for i in range(220_000)) + "}")
    assert 3.5e6 < config.stat().st_size < 4 << 20
    reads = _counting_reads(monkeypatch)
    start = time.perf_counter()
    code, out, err = run_cli("memory", str(config), "--gpu", "h100")
    assert code == 0 and out.startswith("Training memory: "), err
    assert reads == [str(config)] and time.perf_counter() - start < 5


def test_a_changed_config_is_read_again(tmp_path, monkeypatch):
    """The file's identity is its bytes (adapters.read_once: a SHA-256), not its size and modification time: a config
    rewritten to the same size with its old timestamps put back is read anew (a stat-keyed cache would answer 32)."""
    import json
    import os

    from gpuplan.adapters.resolve import resolve_model

    config = tmp_path / "config.json"
    data = json.load(open(LLAMA2))
    config.write_text(json.dumps(data))
    reads = _counting_reads(monkeypatch)
    assert resolve_model(str(config)).num_layers == 32 and resolve_model(str(config)).num_layers == 32
    st = config.stat()
    config.write_text(json.dumps(data | {"num_hidden_layers": 16}))  # 32 -> 16: the same size
    os.utime(config, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert config.stat().st_size == st.st_size and config.stat().st_mtime_ns == st.st_mtime_ns
    assert resolve_model(str(config)).num_layers == 16 and len(reads) == 2


# ---- 7. a campaign's stages share one read of the model's config.json and of the calibration ------------------------


def _campaign(tmp_path, head: str, stages: int = 16) -> str:
    plan = tmp_path / "campaign.yaml"
    plan.write_text(head + "mfu: 0.4\nstages:\n" + "".join("  - {tokens: 1B, gpus: 8}\n" for _ in range(stages)))
    return str(plan)


def test_a_campaigns_stages_read_the_calibration_once(run_cli, tmp_path, monkeypatch):
    """Each stage's schema loaded the calibration file anew (17 reads for 16 stages): an 11 MB calibration (a long
    list under a key no reader reads, within the 16 MiB cap) took the campaign 48.5 s, 6.9 s now
    (adapters/read_once.py, through schema.vocabulary._calibration)."""
    from gpuplan.calibrate import model

    cal = tmp_path / "cal.json"
    assert run_cli("calibrate", TRIAL, "--out", str(cal))[0] == 0
    loads: list[str] = []
    original = model.load_calibration
    monkeypatch.setattr(model, "load_calibration", lambda path: loads.append(path) or original(path))
    code, out, err = run_cli("campaign", _campaign(tmp_path, f"model: llama-3.2-1b\ngpu: h200\ncalibration: {cal}\n"))
    assert code == 0 and "stage 16" in out, err
    assert loads == [str(cal)]


def test_a_campaigns_stages_build_the_model_of_a_config_json_once(run_cli, tmp_path, monkeypatch):
    """adapters.resolve.spec_of_config keys its builds on the config's JSON text, written and read back on each of the
    80 look-ups a 16-stage campaign made (0.65 s each for a 3.7 MB config.json: 41 s); the shared config object now
    finds its spec by identity (2.3 s; resolve._Shared, a key of the one spec cache). The file is read once too."""
    import shutil

    from gpuplan.adapters import resolve

    config = tmp_path / "llama-2-7b" / "config.json"
    config.parent.mkdir()
    shutil.copy(LLAMA2, config)
    reads = _counting_reads(monkeypatch)
    builds: list[str] = []
    original = resolve._built_spec  # each build (the spec cache's miss), whichever key found it
    monkeypatch.setattr(resolve, "_built_spec", lambda *a, **k: builds.append(a[1]) or original(*a, **k))
    texts: list[str] = []  # the JSON-text key written (spec_of_config), which the identity key spares
    by_text = resolve.spec_of_config
    monkeypatch.setattr(resolve, "spec_of_config", lambda *a, **k: texts.append(a[1]) or by_text(*a, **k))
    code, out, err = run_cli("campaign", _campaign(tmp_path, f"model: {config}\ngpu: h100\n"))
    assert code == 0 and "stage 16" in out, err
    assert builds == ["llama-2-7b"] and texts == [] and reads == [str(config)]
