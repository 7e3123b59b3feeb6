"""Hostile inputs of the training commands found by a sweep (train, budget, memory, plan, validate):
each gets one line on stderr naming the right field and exit status 2 — never "internal error",
never a different number than the one written, never an option silently doing nothing."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

MODELS = Path(__file__).resolve().parents[1] / "src" / "gpuplan" / "catalog" / "models"


def _refused(run_cli, *args, field: str) -> str:
    code, _, err = run_cli(*args)
    assert code == 2, (args, err)
    assert err.startswith(f"error: {field}") and err.count("\n") == 1, err
    assert "internal error" not in err
    return err


@pytest.mark.parametrize(("text", "field"), [
    ("1: 2\nmodel: llama-3-8b\n", "FILE: 1"),  # a number as a key: the schema's words (key_refusal, s25)
    ("~: 2\nmodel: llama-3-8b\n", "FILE: None"),  # null as a key
    ("? [a, b]\n: 1\nmodel: llama-3-8b\n", "plan file"),  # a list as a key
    ("model: llama-3-8b\ngpus: " + "9" * 5000 + "\n", "plan file"),  # past Python's int conversion limit
])
def test_plan_files_with_hostile_keys_or_numbers(run_cli, tmp_path, text, field):
    plan = tmp_path / "plan.yaml"
    plan.write_text(text)
    _refused(run_cli, "train", str(plan), field=field.replace("FILE", str(plan)))


def test_huge_toml_integer(run_cli, tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text('model = "llama-3-8b"\ngpus = ' + "9" * 5000 + "\n")
    _refused(run_cli, "plan", str(plan), field="plan file")


def test_yaml_base_60_is_not_read_as_a_number(run_cli, tmp_path):
    """YAML 1.1 reads 1:04 as 64; the plan file reader keeps YAML 1.2's numbers, so it stays text."""
    plan = tmp_path / "plan.yaml"
    plan.write_text("model: llama-3-8b\ngpus: 1:04\n")
    code, _, err = run_cli("train", str(plan))
    assert code == 2 and f"{plan}: gpus: got '1:04'" in err and err.count("\n") == 1, err
    plan.write_text("model: llama-3-8b\ngpus: 64\nmfu: .4\n")
    code, _, err = run_cli("train", str(plan))
    assert code == 0, err


def test_a_config_with_nan_names_the_key(run_cli, tmp_path):
    cfg = json.loads((MODELS / "llama-3-8b.json").read_text())["config"]
    text = json.dumps({k: v for k, v in cfg.items() if k != "rope_theta"})[:-1] + ', "rope_theta": NaN}'
    path = tmp_path / "config.json"
    path.write_text(text)
    _refused(run_cli, "train", "--model", str(path), "--gpus", "64", field="config.json: rope_theta")


@pytest.mark.parametrize(("args", "field"), [
    (("--zero", "1e-400"), "zero"),  # underflows to 0 in float()
    (("--mtp-layers", "1e-400"), "mtp_layers"),
    (("--mtp-layers", "\u0661\u0662"), "mtp_layers"),  # Arabic-Indic digits: float() reads 12
    (("--mfu", "1e-400"), "mfu"),
    (("--mfu", "30-"), "mfu"),
    (("--mfu", "-30-50%"), "mfu"),
    (("--mfu", "30%-50"), "mfu"),
    (("--global-batch-tokens", "1"), "global_batch_tokens"),  # less than one 4,096-token sequence
    (("--ep-dispatcher", "flex"), "ep_dispatcher"),  # dense model: no expert all-to-all
    (("--ep-a2a-overlap",), "ep_a2a_overlap"),
    (("--finetune", "lora", "--lora-rank", "100000"), "lora_rank"),  # wider than hidden 4,096
    (("--json", "--format", "markdown"), "format"),
    (("--model", "llama-3-70b"), "model"),  # --model given twice
])
def test_train_refuses(run_cli, args, field):
    _refused(run_cli, "train", "--model", "llama-3-8b", "--gpus", "64", *args, field=field)


@pytest.mark.parametrize(("args", "field"), [
    (("--ep", "1", "--ep-a2a-overlap"), "ep_a2a_overlap"),
    (("--ep", "1", "--ep-dispatcher", "flex"), "ep_dispatcher"),
    (("--ep-a2a-overlap", "--ep-overlap", "0.5"), "ep_overlap"),
])
def test_moe_options_that_cannot_apply(run_cli, args, field):
    _refused(run_cli, "train", "--model", "mixtral-8x7b", "--gpus", "64", *args, field=field)


def test_valid_ranges_still_parse(run_cli):
    for mfu in ("30-50%", "30%-50%", "0.3-0.5", "40%", "1e-1"):
        code, _, err = run_cli("train", "--model", "llama-3-8b", "--gpus", "64", "--mfu", mfu)
        assert code == 0, (mfu, err)


def test_other_fields_named_right(run_cli):
    _refused(run_cli, "memory", "--model", "llama-3-8b", "--compare", "a100,nope", field="compare")
    _refused(run_cli, "budget", "--model", "llama-3-8b", "--gpus", "64", "--step-time", "0s", field="step_time")


def test_validate_checks_its_output_before_the_work(run_cli):
    """/proc/version is a 'regular file' in a folder where no temporary file can be made."""
    _refused(run_cli, "validate", "--out", "/proc/version", field="out")


def test_a_full_stdout_is_one_line(tmp_path):
    """The answer written to /dev/full: no space is an output error, said once, not a crash."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system (Linux provides it)")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "gpuplan", "train", "--model", "llama-3-8b", "--gpus", "64"],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("error: output: cannot be written") and done.stderr.count("\n") == 1


@pytest.mark.parametrize("value", ["!!int abc", "!!int '0b101'", "!!int ''", "!!float abc", "!!float ''",
                                   "!!bool abc", "!!timestamp abc", "!!binary NA==", "!!omap [{a: 1}]"])
def test_yaml_tags_that_do_not_parse_are_one_line(run_cli, tmp_path, value):
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"model: llama-3-8b\ngpus: 64\nglobal_batch: {value}\n")
    _refused(run_cli, "train", str(plan), field="plan file")


def test_plain_yaml_values_still_read(run_cli, tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text("model: llama-3-8b\ngpus: !!int 64\ncontingency: 20%\nmfu: !!float 0.4\n")
    code, _, err = run_cli("train", str(plan))
    assert code == 0, err


@pytest.mark.parametrize(("args", "field"), [
    (("--recompute-modules", "mla_up_proj"), "recompute_modules"),  # no multi-latent attention in Llama
    (("--recompute-modules", "moe_act"), "recompute_modules"),  # no routed experts
    (("--recompute-layers", "33"), "recompute_layers"),  # 32 layers
])
def test_recompute_options_the_model_cannot_take(run_cli, args, field):
    _refused(run_cli, "memory", "--model", "llama-3-8b", "--gpus", "8", *args, field=field)


def test_bounds_are_printed_as_written(run_cli):
    err = _refused(run_cli, "memory", "--model", "llama-3-8b", "--gpus", "8", "--recompute-layers", "1000000000",
                   field="recompute_layers")
    assert "<= 1048576" in err


def test_field_names_cannot_break_the_line(run_cli, tmp_path):
    """A key with a newline or a right-to-left override in a plan file is escaped in the error."""
    from gpuplan.errors import InputError

    assert str(InputError("gp\nu", "h100", "unknown field")).startswith("gp\\u000au: got")
    plan = tmp_path / "plan.yaml"
    plan.write_text('model: llama-3-8b\n"\\u202egpus": 4\n')
    code, _, err = run_cli("train", str(plan))
    assert code == 2 and "\u202e" not in err and "\\u202egpus" in err and err.count("\n") == 1


def test_degrees_needing_more_gpus_name_the_degree(run_cli):
    err = _refused(run_cli, "plan", "--model", "llama-3-8b", "--gpus", "8", "--tp", "2", "--pp", "8", field="pp")
    assert "at least 16 GPUs" in err
