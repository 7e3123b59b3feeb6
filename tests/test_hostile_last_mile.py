"""Issue 40, files and the CLI's last mile: every writer keeps the target's mode, refuses to write
over one of its own inputs or through a symbolic link, and goes through a temporary file in the
same folder and an atomic rename; readers stop at their size and depth limits. Each refusal: one
line, exit 2, and the files on disk unchanged."""

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from helpers import one_line_refusal

from gpuplan.adapters import files

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "fixtures" / "logs"
MIXTRAL = ["--model", "mixtral-8x7b", "--gpu", "h100", "--gpus", "16", "--seq-len", "2048", "--ep", "4", "--zero", "1"]


@pytest.fixture
def plan(tmp_path):
    path = tmp_path / "p.yaml"
    shutil.copy(ROOT / "examples" / "article-7b.yaml", path)
    return path


@pytest.mark.parametrize("flag", ["--out", "--markdown"])
def test_report_refuses_to_overwrite_its_own_plan_file(run_cli, plan, flag):
    before = plan.read_bytes()
    code, _, err = run_cli("report", str(plan), flag, str(plan), "--no-plots")
    one_line_refusal(code, err, "is also an input")
    assert err.startswith(f"error: {flag[2:]}: ")
    assert plan.read_bytes() == before  # the plan was HTML afterwards (issue 40, item 4)


def test_report_refuses_the_plan_through_a_hard_link_or_another_spelling(run_cli, plan, tmp_path):
    before = plan.read_bytes()
    os.link(plan, tmp_path / "same.yaml")
    for other in (tmp_path / "same.yaml", tmp_path / "." / "p.yaml", tmp_path / "sub" / ".." / "p.yaml"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        code, _, err = run_cli("report", str(plan), "--out", str(other), "--no-plots")
        one_line_refusal(code, err, "is also an input")
    assert plan.read_bytes() == before


def test_report_refuses_to_overwrite_the_config_its_plan_names(run_cli, tmp_path):
    config = tmp_path / "config.json"
    shutil.copy(ROOT / "examples" / "llama-2-7b" / "config.json", config)
    plan = tmp_path / "p.yaml"
    plan.write_text("model: ./config.json\ngpu: h100\ngpus: 8\ntokens: 1T\n")
    before = config.read_bytes()
    code, _, err = run_cli("report", str(plan), "--out", str(config), "--no-plots", "--sections", "memory")
    one_line_refusal(code, err, "is also an input")
    assert config.read_bytes() == before


def test_report_still_writes_a_new_file(run_cli, plan, tmp_path):
    code, out, err = run_cli("report", str(plan), "--out", str(tmp_path / "r.html"), "--no-plots",
                             "--sections", "memory")
    assert code == 0, err
    assert (tmp_path / "r.html").read_text().lstrip().lower().startswith("<!doctype html")


def calibrate_to(run_cli, out):
    return run_cli("calibrate", str(LOGS / "megatron_mixtral.log"), *MIXTRAL, "--out", str(out))


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664])
def test_calibrate_over_an_existing_file_keeps_its_mode(run_cli, tmp_path, mode):
    out = tmp_path / "c.json"
    out.write_text("{}")
    out.chmod(mode)
    code, _, err = calibrate_to(run_cli, out)
    assert code == 0, err
    assert stat.S_IMODE(out.stat().st_mode) == mode  # was 0644 whatever it had been (item 5)
    assert json.loads(out.read_text())["kind"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]  # no temporary file left


def test_a_new_file_gets_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        files.write_atomic(tmp_path / "new.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o640


@pytest.mark.parametrize("dangling", [False, True])
def test_an_out_that_is_a_symbolic_link_is_refused_and_nothing_moves(run_cli, tmp_path, dangling):
    target = tmp_path / "real.json"
    if not dangling:
        target.write_text("keep me\n")
        target.chmod(0o600)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    code, _, err = calibrate_to(run_cli, link)
    one_line_refusal(code, err, "is a symbolic link")
    assert link.is_symlink() and os.readlink(link) == str(target)  # was replaced by a regular file
    if not dangling:
        assert target.read_text() == "keep me\n" and stat.S_IMODE(target.stat().st_mode) == 0o600
    else:
        assert not target.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write any file")
def test_a_read_only_target_is_refused(tmp_path):
    out = tmp_path / "ro.md"
    out.write_text("old\n")
    out.chmod(0o444)
    with pytest.raises(files.InputError, match="read-only"):
        files.write_atomic(out, "new\n")
    assert out.read_text() == "old\n"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    out = tmp_path / "keep.md"
    out.write_text("old\n")

    def failing_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", failing_replace)
    with pytest.raises(files.InputError, match="No space left"):
        files.write_atomic(out, "new\n")
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["keep.md"]


@pytest.mark.parametrize("as_folder", [False, True])
def test_profile_refuses_to_overwrite_the_config_it_profiles(run_cli, tmp_path, as_folder):
    config = tmp_path / "config.json"
    shutil.copy(ROOT / "examples" / "llama-2-7b" / "config.json", config)
    before = config.read_bytes()
    code, _, err = run_cli("profile", str(tmp_path if as_folder else config), "--out", str(config))
    one_line_refusal(code, err, "is also an input")
    assert config.read_bytes() == before


# ---- readers: stop at the size and depth limits, before reading the whole file (items 6, 7) ----

TITAN_LINE = ("[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: {}  loss:  3.24405  grad_norm:  0.8319  "
              "memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%\n")
ROW = '{"step": %d, "step_time_s": 1.25, "tokens_per_s": 100000, "memory_gib": 40.5},\n'
BIG = 24 << 20  # 24 MiB: over the 16 MiB JSON limit and the 8 MiB detection window, quick to write


def write_big(path, first, line, end=""):
    """A file of about BIG bytes: ``first``, then ``line % n`` repeated, then ``end``."""
    count = BIG // len(line % 1)
    with open(path, "w") as handle:
        handle.write(first)
        handle.writelines(line % (i + 1) for i in range(count))
        handle.write(end)
    return path


def refused_quickly(path, *flags, fragment, seconds=5.0, megabytes=40):
    """load_measurement refuses ``path`` within ``seconds`` and ``megabytes`` of Python memory. The memory bound is
    what tells a reader that stopped at its limit from one that read the 24 MiB whole; ``seconds`` only guards a
    hang (1 s was exceeded, 1.05 s, on a 2-core host running the suite on 4 workers under tracemalloc)."""
    import time
    import tracemalloc

    from gpuplan.calibrate.sources import load_measurement
    from gpuplan.calibrate.measurement import LogContext
    from gpuplan.errors import InputError

    context = LogContext(**dict(flags)) if flags else None
    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(InputError) as caught:
        load_measurement(path, context)
    elapsed = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    assert fragment in str(caught.value.expected) + str(caught.value.field), caught.value
    assert elapsed < seconds, elapsed
    assert peak < megabytes, peak  # the file is 24 MiB: it was read whole (and split, and parsed) before
    return caught.value


FLAGS = (("model", "llama-3-8b"), ("gpu", "h100"), ("gpus", 8), ("seq_len", 2048))


def test_a_long_log_missing_a_flag_is_refused_from_its_head(tmp_path):
    path = write_big(tmp_path / "train.log", "", TITAN_LINE.replace("%", "%%").replace("{}", "%d"))
    error = refused_quickly(path, fragment="--model")  # issue: 200 MB took 61 s and 600 MB
    assert "torchtitan log" in error.expected


def test_a_long_json_table_is_refused_by_its_size_before_it_is_parsed(tmp_path):
    path = write_big(tmp_path / "table.json", "[\n", ROW, '{"step": 0, "step_time_s": 1}]\n')
    refused_quickly(path, fragment="--model")  # issue: 200 MB took 59 s and 1.9 GB
    error = refused_quickly(path, *FLAGS, fragment="at most 16 MiB")
    assert "CSV or JSON Lines" in error.expected


def test_a_long_table_as_json_lines_or_csv_is_read_line_by_line(tmp_path):
    from gpuplan.adapters.training_logs import read_training_log

    rows = 20_000
    lines = tmp_path / "table.json"  # JSON Lines under a .json name: told apart by its first line
    lines.write_text("".join(ROW.rstrip(",\n") % (i + 1) + "\n" for i in range(rows)))
    csv = tmp_path / "table.csv"
    csv.write_text("step,step_time_s\n" + "".join(f"{i + 1},1.25\n" for i in range(rows)))
    for path in (lines, csv):
        log = read_training_log(path)
        assert log.format == "table" and len(log.records) == rows
        assert log.records[-1].step == rows and log.records[-1].step_time_s == 1.25


def test_a_one_line_file_is_refused_at_its_first_mebibyte(tmp_path):
    path = tmp_path / "one.log"
    path.write_text("x" * BIG)
    refused_quickly(path, fragment="longer than 1 MiB")


def test_a_long_file_of_no_known_format_is_refused_after_the_detection_window(tmp_path):
    path = write_big(tmp_path / "noise.log", "", "noise line %d with nothing a trainer prints\n")
    refused_quickly(path, fragment="first 8 MiB; give --log-format")


def test_a_json_document_of_many_tiny_values_is_refused_before_parsing(tmp_path):
    path = tmp_path / "lists.json"
    path.write_text("{\"records\": [" + "[]," * 3_000_000 + "[]]}")  # 9 MB parsing into 3M lists, ~220 MB
    refused_quickly(path, *FLAGS, fragment="lists/objects")


@pytest.mark.parametrize("flags", [(), FLAGS])
def test_a_trainer_state_nested_100000_deep_is_one_line(run_cli, tmp_path, flags):
    path = tmp_path / "trainer_state.json"
    path.write_text('{"log_history": ' + "[" * 100_000 + "]" * 100_000 + "}")  # exit 70 RecursionError before
    args = [a for name, value in flags for a in (f"--{name.replace('_', '-')}", str(value))]
    code, _, err = run_cli("calibrate", str(path), *args)
    one_line_refusal(code, err, "nested more than 64 levels deep")


def test_a_measurement_file_nested_deeply_is_one_line(run_cli, tmp_path):
    path = tmp_path / "m.json"
    path.write_text('{"environment": ' + "[" * 5_000 + "]" * 5_000 + "}")
    code, _, err = run_cli("calibrate", str(path))
    one_line_refusal(code, err, "nested more than 64 levels deep")


# ---- broken measurement files are refused field by field (item 8) ----

TRIAL = ROOT / "tests" / "fixtures" / "h200" / "profile_llama-3.2-1b_bf16_mb2_s2048.json"


def trial_with(tmp_path, path, value):
    data = json.loads(TRIAL.read_text())
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node[key]
    node[last] = value
    out = tmp_path / "m.json"
    out.write_text(json.dumps(data))
    return out


def test_the_real_trial_file_calibrates(run_cli):
    code, _, err = run_cli("calibrate", str(TRIAL))
    assert code == 0, err


@pytest.mark.parametrize(("path", "value"), [
    ("environment.peak_flops", -1e12), ("environment.peak_flops", 0), ("environment.peak_flops", "989 TFLOPS"),
    ("config.summary", 5), ("config.summary", [1, 2]), ("config.summary.hidden_size", -2048),
    ("config.summary.num_hidden_layers", 16.5), ("config.hf_config", "llama"), ("config.settings.foreach", "yes"),
    ("config.settings.warmup", -1), ("results.mfu", 3.5), ("results.flops", 7),
    ("results.flops.model_flops_per_token", -1.0), ("results.loss", "low"), ("environment.device_count", 0),
    ("environment.torch", 2.11), ("results.tokens_per_step", True),
])
def test_a_broken_measurement_field_is_refused_by_name(run_cli, tmp_path, path, value):
    code, _, err = run_cli("calibrate", str(trial_with(tmp_path, path, value)))
    one_line_refusal(code, err)  # exit 0 before: the file calibrated (issue 40, item 8)
    assert err.startswith(f"error: {path}: got "), err


def test_null_and_unknown_fields_are_left_alone(run_cli, tmp_path):
    path = trial_with(tmp_path, "environment.peak_flops", None)
    data = json.loads(path.read_text())
    data["environment"]["framework"] = {"name": "torchtitan", "version": "0.2"}  # a field a later version adds
    path.write_text(json.dumps(data))
    code, _, err = run_cli("calibrate", str(path))
    assert code == 0, err


# ---- configs read as something they are not (item 9) ----

LLAMA2 = json.loads((ROOT / "examples" / "llama-2-7b" / "config.json").read_text())


def config_file(tmp_path, config):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


@pytest.mark.parametrize(("change", "field", "fragment"), [
    ({"architectures": ["T5ForConditionalGeneration"]}, "architectures", "encoder-decoder"),
    ({"architectures": ["MambaForCausalLM"]}, "architectures", "state-space"),
    ({"architectures": ["BertForMaskedLM"]}, "architectures", "encoder-only"),
    ({"architectures": ["RobertaForMaskedLM"]}, "architectures", "encoder-only"),
    ({"is_encoder_decoder": True}, "is_encoder_decoder", "encoder-decoder"),
    ({"architectures": ["MistralForCausalLM"]}, "architectures", "does not match model_type 'llama'"),
])
def test_a_llama_model_type_on_another_architecture_is_refused(run_cli, tmp_path, change, field, fragment):
    path = config_file(tmp_path, LLAMA2 | change)  # model_type llama: exit 0 before (issue 40, item 9)
    code, _, err = run_cli("memory", "--model", path, "--gpu", "h100", "--gpus", "8")
    one_line_refusal(code, err, fragment)
    assert err.startswith(f"error: config.json: {field}: got "), err


def test_model_type_override_reads_an_unknown_decoder_but_never_an_encoder(run_cli, tmp_path):
    path = config_file(tmp_path, LLAMA2 | {"architectures": ["InternLM2ForCausalLM"]})
    code, out, err = run_cli("memory", "--model", path, "--gpu", "h100", "--gpus", "8", "--model-type", "llama",
                             "--json")
    assert code == 0, err
    assert any("InternLM2ForCausalLM read as 'llama'" in n for n in json.loads(out)["notes"])
    path = config_file(tmp_path, LLAMA2 | {"architectures": ["T5ForConditionalGeneration"]})
    code, _, err = run_cli("memory", "--model", path, "--gpu", "h100", "--gpus", "8", "--model-type", "llama")
    one_line_refusal(code, err, "encoder-decoder")


def test_every_catalog_config_still_reads():
    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    entries = sorted((ROOT / "src" / "gpuplan" / "catalog" / "models").glob("*.json"))
    assert len(entries) >= 60  # 61 catalog models at ae3dfd8
    for entry in entries:
        config = json.loads(entry.read_text())["config"]
        spec = model_spec_from_hf_config(config, name=entry.stem)
        # read as the config states its depth and width (a multimodal config's text_config; GPT-2 / GPT-NeoX names)
        text = config.get("text_config") or config
        layers = text.get("num_hidden_layers", text.get("n_layer", text.get("num_layers", text.get("n_layers"))))  # MPT: n_layers
        hidden = text.get("hidden_size", text.get("n_embd", text.get("d_model")))
        assert (spec.num_layers, spec.hidden_size) == (layers, hidden), entry.stem


def test_a_llava_config_says_its_vision_tower_is_left_out(run_cli, tmp_path):
    llava = {"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"], "text_config": LLAMA2,
             "vision_config": {"model_type": "clip_vision_model", "hidden_size": 1024, "num_hidden_layers": 24}}
    path = config_file(tmp_path, llava)
    note = "vision tower left out: only the language model (text_config) is estimated"
    for command in (["memory", "--gpus", "8"], ["train", "--gpus", "8"], ["plan", "--gpus", "64"], ["infer"]):
        code, out, err = run_cli(command[0], "--model", path, "--gpu", "h100", *command[1:], "--json")
        assert code == 0, (command, err)
        notes = json.loads(out)["notes"]
        assert sum(note in n for n in notes) == 1, (command, notes)
    # the language model's numbers are the text config's own: the same peak as Llama-2-7B alone
    (tmp_path / "alone").mkdir()
    _, alone, _ = run_cli("memory", "--model", config_file(tmp_path / "alone", LLAMA2), "--gpu", "h100", "--gpus",
                          "8", "--json")
    _, vlm, _ = run_cli("memory", "--model", path, "--gpu", "h100", "--gpus", "8", "--json")
    assert json.loads(vlm)["results"]["peak_total"] == json.loads(alone)["results"]["peak_total"]


# ---- the smaller ones (item 10) ----

@pytest.mark.parametrize(("args", "field"), [
    (["memory", "llama-3.1-8b", "--margin", "1e-400"], "margin"),  # --zero 1e-400 was refused, --margin not
    (["memory", "llama-3.1-8b", "--zero", "1e-400"], "zero"),
    (["budget", "llama-3.1-8b", "--restart", "0"], "restart"),  # --restart 0min was refused, 0 accepted
    (["budget", "llama-3.1-8b", "--restart", "0s"], "restart"),
    (["budget", "llama-3.1-8b", "--restart", "0min"], "restart"),
    (["report", str(ROOT / "examples" / "article-7b.yaml"), "--no-plots", "--out", "x.html\n"], "out"),
    (["serve", "--host", "0.0.0.0\n"], "host"),
    (["memory", "llama-3.1-8b", "--gpu", "h100\t"], "gpu"),
])
def test_small_input_rules_hold_on_the_cli(run_cli, args, field):
    code, _, err = run_cli(*args)
    one_line_refusal(code, err)
    assert err.startswith(f"error: {field}: got "), err


@pytest.mark.parametrize(("body", "field"), [({"margin": "1e-400"}, "margin"), ({"restart": 0}, "restart"),
                                             ({"restart": "0min"}, "restart"), ({"calibration": "a" * 129},
                                                                                 "calibration")])
def test_small_input_rules_hold_on_the_api(body, field):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    job = "memory" if "margin" in body else "budget"
    response = TestClient(create_app()).post(f"/api/{job}", json={"model": "llama-3.1-8b", "gpu": "h100"} | body)
    assert response.status_code == 422, response.text[:300]
    assert response.json()["field"] == field  # a 129-character name was field 'calibration.dict[str,any]'


def test_a_restart_with_a_unit_is_still_read(run_json):
    assert run_json("budget", "llama-3.1-8b", "--gpu", "h100", "--restart", "10min")["results"]


@pytest.mark.parametrize("command", ["plan", "budget"])
def test_gpus_per_node_is_the_node_size_of_the_io_section(run_json, command):
    data = run_json(command, "llama-3.1-8b", "--gpu", "h100", "--gpus", "24", "--gpus-per-node", "3")
    # 24 GPUs / 3 per node = 8 nodes (it said 3 nodes, "24 GPUs / 8 per node")
    assert data["results"]["io_nodes"] == 8


def plan_file(tmp_path, text, name="p.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(("text", "name", "field"), [
    ("model: llama-3.1-8b\ngpus: 1e400\n", "p.yaml", "gpus"),
    ("model: llama-3.1-8b\ngpus: lots\n", "p.yaml", "gpus"),
    ("model = 'llama-3.1-8b'\ngpus = 'lots'\n", "p.toml", "gpus"),
])
def test_a_plan_file_value_a_flag_overrides_is_still_checked(run_cli, tmp_path, text, name, field):
    path = plan_file(tmp_path, text, name)
    code, _, err = run_cli("memory", path, "--gpus", "8", "--gpu", "h100")  # exit 0 before: the flag won
    one_line_refusal(code, err)
    assert err.startswith(f"error: {path}: {field}: got "), err


def test_a_plan_file_of_null_keys_is_not_the_defaults(run_cli, tmp_path):
    path = plan_file(tmp_path, "model:\ngpus:\ntokens: ~\n")
    code, _, err = run_cli("train", path)
    one_line_refusal(code, err, "got 'null'; give a value, or leave the key out")
    assert err.startswith(f"error: {path}: model: got 'null'"), err


def test_an_unused_yaml_anchor_is_refused(run_cli, tmp_path):
    path = plan_file(tmp_path, "model: &m llama-3.1-8b\ngpu: h100\n")
    code, _, err = run_cli("memory", path)
    one_line_refusal(code, err, "anchors and aliases are not accepted")


# ---- a closed pipe ends quietly (item 11) ----

@pytest.mark.parametrize("args", [["catalog", "models"], ["train", "llama-3.1-8b", "--gpus", "64"],
                                  ["memory", "llama-3.1-8b", "--full"]])
def test_a_closed_pipe_ends_quietly_with_141(args):
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first write (`| head -1` that already exited)
    done = subprocess.run([sys.executable, "-m", "gpuplan", *args], stdout=write, stderr=subprocess.PIPE,
                          timeout=60)
    os.close(write)
    assert done.returncode == 141 and done.stderr == b"", (done.returncode, done.stderr[:300])  # was 1, silent


def test_a_full_device_keeps_its_one_line_error():
    import subprocess
    import sys

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "gpuplan", "catalog", "models"], stdout=full,
                              stderr=subprocess.PIPE, timeout=60, text=True)
    assert done.returncode == 2 and done.stderr.startswith("error: output: ") and done.stderr.count("\n") == 1
