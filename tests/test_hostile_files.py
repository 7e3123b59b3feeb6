"""Hostile files: FIFOs, devices, directories, binary, huge, deeply nested, YAML alias bombs,
duplicate keys, non-UTF-8; outputs that cannot be written. Each case: one line, exit 2, within a
time limit, and no half-written file."""

import json
import os
import time

import pytest

from gpuplan.cli import main

LIMIT = 5.0  # seconds per case
ALIAS_BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},"
    f"*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]\n" for i in range(8))


def run(capsys, *args):
    start = time.perf_counter()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err, time.perf_counter() - start


def refused(capsys, *args, fragment: str = "") -> str:
    code, out, err, seconds = run(capsys, *args)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, (code, err)
    assert "Traceback" not in out + err and seconds < LIMIT, seconds
    assert fragment in err, err
    return err


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("option", ["--calibration", "--model"])
def test_a_fifo_is_refused_before_it_is_opened(capsys, fifo, option):
    refused(capsys, "train", option, str(fifo), fragment="not a regular file")


def test_a_fifo_plan_file_and_measurement(capsys, tmp_path):
    for name in ("plan.yaml", "plan.toml"):
        os.mkfifo(tmp_path / name)
        refused(capsys, "train", str(tmp_path / name), fragment="not a regular file")
    os.mkfifo(tmp_path / "m.json")
    refused(capsys, "calibrate", str(tmp_path / "m.json"), fragment="not a regular file")


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom", "/proc/self/mem"])
def test_devices_and_proc_files(capsys, path):
    if not os.path.exists(path):
        pytest.skip(f"{path} does not exist on this system")
    refused(capsys, "train", "--calibration", path)
    refused(capsys, "memory", "--model", path)


def test_a_directory_and_a_missing_file(capsys, tmp_path):
    refused(capsys, "train", "--calibration", str(tmp_path), fragment="is a directory")
    refused(capsys, "train", "--calibration", str(tmp_path / "none.json"), fragment="no such file")


def test_binary_and_non_utf8(capsys, tmp_path):
    binary = tmp_path / "config.json"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    refused(capsys, "train", "--model", str(binary), fragment="not UTF-8")
    plan = tmp_path / "plan.yaml"
    plan.write_bytes("tokens: 2T\ngpu: a100\ncomment: caf\xe9\n".encode("latin-1"))
    refused(capsys, "train", str(plan), fragment="not UTF-8")


def test_huge_files_are_refused_by_size(capsys, tmp_path):
    plan = tmp_path / "huge.yaml"
    with open(plan, "w") as handle:
        handle.write("tokens: 2T\n" + "# padding\n" * 200_000)  # 2 MB of comments, over the 1 MiB cap
    refused(capsys, "train", str(plan), fragment="MiB")
    config = tmp_path / "big.json"
    with open(config, "wb") as handle:
        handle.truncate(5 << 20)  # a sparse 5 MiB file: refused from its size, not read
    refused(capsys, "train", "--model", str(config), fragment="MiB")


def test_yaml_alias_bomb_is_refused_at_once(capsys, tmp_path):
    plan = tmp_path / "bomb.yaml"
    plan.write_text(ALIAS_BOMB)
    err = refused(capsys, "train", str(plan), fragment="aliases")
    assert "not accepted" in err


def test_deep_nesting(capsys, tmp_path):
    config = tmp_path / "deep.json"
    config.write_text("[" * 200_000 + "]" * 200_000)
    refused(capsys, "train", "--model", str(config), fragment="nested")
    plan = tmp_path / "deep.yaml"
    plan.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    refused(capsys, "train", str(plan), fragment="nested")


def test_duplicate_keys(capsys, tmp_path):
    plan = tmp_path / "dup.yaml"
    plan.write_text("tokens: 2T\ntokens: 1T\n")
    refused(capsys, "train", str(plan), fragment="duplicate key 'tokens'")
    toml = tmp_path / "dup.toml"
    toml.write_text('tokens = "2T"\ntokens = "1T"\n')
    refused(capsys, "train", str(toml), fragment="not valid TOML")
    config = tmp_path / "dup.json"
    config.write_text('{"model_type": "llama", "hidden_size": 64, "hidden_size": 128}')
    refused(capsys, "train", "--model", str(config), fragment="duplicate key 'hidden_size'")


@pytest.mark.parametrize("field, value, fragment", [
    ("hidden_size", 1e400, "hidden_size: got '1e400'"), ("hidden_size", float("nan"), "hidden_size: got 'NaN'"),
    ("num_hidden_layers", 1e9, "at most 10,000"), ("sliding_window", "abc", "sliding_window"),
    ("layer_types", 5, "layer_types"), ("num_key_value_heads", 3, "must divide"),
    ("vocab_size", -5, "vocab_size"), ("hidden_dropout", 2.0, "probability"),
])
def test_config_values_are_checked_field_by_field(capsys, tmp_path, field, value, fragment):
    config = {"model_type": "mistral", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 8,
              "num_key_value_heads": 8, "vocab_size": 1000, "intermediate_size": 512, "sliding_window": 128}
    config[field] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config).replace("Infinity", "1e400"))  # 1e400 as a literal: Python reads inf
    refused(capsys, "infer", "--model", str(path), "--no-search", fragment=fragment)


def test_unknown_families_are_refused_with_a_way_out(capsys, tmp_path, run_json):
    path = tmp_path / "config.json"
    base = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 1000,
            "intermediate_size": 512}
    path.write_text(json.dumps({**base, "model_type": "newfamily"}))
    err = refused(capsys, "train", "--model", str(path), fragment="is not supported")
    assert "--model-type llama" in err and "llama" in err
    data = run_json("train", "--model", str(path), "--model-type", "llama", "--gpus", "8")
    assert any("read as 'llama'" in note for note in data["notes"])
    path.write_text(json.dumps({**base, "model_type": "jamba"}))
    refused(capsys, "train", "--model", str(path), fragment="state-space")


@pytest.mark.parametrize("target", ["missing/out.md", "DIR", "/dev/full"])
def test_outputs_that_cannot_be_written(capsys, tmp_path, target):
    path = tmp_path if target == "DIR" else (tmp_path / target if target.startswith("missing") else target)
    if target == "/dev/full" and not os.path.exists(target):
        pytest.skip("no /dev/full")
    refused(capsys, "validate", "--out", str(path))
    assert not (tmp_path / "missing").exists()  # no folder created


def test_a_failed_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    from gpuplan.adapters import files

    target = tmp_path / "accuracy.md"
    target.write_text("old content\n")

    def full_disk(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", lambda fd: full_disk(fd, b""))
    with pytest.raises(Exception, match="No space left"):
        files.write_atomic(target, "new content\n")
    assert target.read_text() == "old content\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["accuracy.md"]  # no temporary left behind


def test_profile_checks_its_output_before_training(capsys, tmp_path):
    start = time.perf_counter()
    refused(capsys, "profile", "pythia-70m", "--layers", "1", "--out", str(tmp_path / "no" / "x.json"),
            fragment="does not exist")
    assert time.perf_counter() - start < 2  # refused before torch is even imported


def test_report_refuses_missing_folders(capsys, tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text("params: 7B\ntokens: 2T\n")
    refused(capsys, "report", str(plan), "--out", str(tmp_path / "nope" / "r.html"), "--no-plots")
    assert not (tmp_path / "nope").exists()
