"""The calibration round trip (session 25, helper M3): `calibrate LOG <flags> --out cal.json`, then `train --mfu
predicted <flags> --calibration cal.json` with the same flags must time the log's own step. calibrate now times a
log with the step train builds for those flags (calibrate.train_step -> jobs.plan.step_settings.step_settings_for, one
builder), under the --framework given (train's default, megatron, when not), with --recipe's step terms.

The log: five 1.0 s steps (the first skipped as warm-up), so the calibrated step must come back at 1.0 s.
Before the change (calibrate timing every log with the generic fused settings, no --framework) train answered, on
the layouts below: generic bf16 0.996 s, generic fp8 (recompute full) 1.002 s, megatron bf16 0.865 s, megatron fp8
0.840 s, torchtitan bf16 1.053 s, torchtitan fp8 (recompute full) 1.062 s, qwen3-30b-a3b EP 8 megatron bf16
1.054 s, llama-3-8b tp 2 pp 2 megatron bf16 0.924 s (--framework given to train only: calibrate refused it).
"""

import pytest

DENSE = ("--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--tp", "1", "--pp", "1", "--seq-len", "8192",
         "--zero", "3", "--micro-batch", "1", "--global-batch", "8")
MOE = ("--model", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "16", "--tp", "1", "--pp", "1", "--ep", "8",
       "--seq-len", "4096", "--zero", "3", "--micro-batch", "1", "--global-batch", "16", "--recompute", "none")
PIPELINE = ("--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--tp", "2", "--pp", "2", "--seq-len", "4096",
            "--zero", "1", "--micro-batch", "1", "--global-batch", "16", "--recompute", "none")
FP8 = ("--recipe", "fp8", "--recompute", "full")  # full: llama-3-8b's fp8 copies fit 8 H100s at 8,192 tokens so
CASES = {
    "generic bf16": DENSE + ("--framework", "generic", "--recompute", "none"),
    "generic fp8": DENSE + ("--framework", "generic") + FP8,
    "megatron bf16": DENSE + ("--framework", "megatron", "--recompute", "none"),
    "megatron fp8": DENSE + ("--framework", "megatron", "--recipe", "fp8", "--recompute", "none"),
    "torchtitan bf16": DENSE + ("--framework", "torchtitan", "--recompute", "none"),
    "torchtitan fp8": DENSE + ("--framework", "torchtitan") + FP8,
    "moe ep 8 megatron bf16": MOE + ("--framework", "megatron"),
    "pp 2 megatron bf16": PIPELINE + ("--framework", "megatron"),
}
TRAIN_ONLY = ("--tokens", "1T", "--mfu", "predicted", "--cp", "1", "--vpp", "1")  # the layout: the log's, not searched


@pytest.fixture(scope="module")
def log(one_second_log):
    return one_second_log  # conftest: five 1.0 s steps


@pytest.mark.parametrize("name", list(CASES))
def test_train_reproduces_the_calibrated_log(run_json, log, tmp_path, name):
    flags = CASES[name]
    out = tmp_path / "cal.json"
    cal = run_json("calibrate", str(log), *flags, "--out", str(out))
    assert cal["results"]["cal_compute_time"] > 0
    default = run_json("train", *TRAIN_ONLY, *flags)["results"]
    calibrated = run_json("train", *TRAIN_ONLY, *flags, "--calibration", str(out))["results"]
    lay = calibrated["mem_layout"]
    given = dict(zip(flags[::2], flags[1::2]))
    assert (lay["tp"], lay["pp"], lay["ep"], lay["zero"]) == (int(given["--tp"]), int(given["--pp"]),
                                                               int(given.get("--ep", 1)), int(given["--zero"]))
    assert lay["recompute"] == given["--recompute"]
    # one step model: calibrate's default prediction of the log is train's uncalibrated step for the same flags
    import json

    fit = json.loads(out.read_text())["measurements"][0]
    assert fit["step_default_s"] == pytest.approx(default["io_step_seconds"], rel=1e-9)
    assert calibrated["io_step_seconds"] == pytest.approx(1.0, rel=0.01)  # the brief's bar; it lands within 1e-6
    assert calibrated["io_step_seconds"] == pytest.approx(1.0, rel=1e-6)
    assert "calibration_warning" not in calibrated  # fitted and planned under the same framework


def test_another_framework_is_told(run_json, log, tmp_path):
    out = tmp_path / "cal.json"
    run_json("calibrate", str(log), *CASES["megatron bf16"], "--out", str(out))
    flags = DENSE + ("--framework", "torchtitan", "--recompute", "none")
    data = run_json("train", *TRAIN_ONLY, *flags, "--calibration", str(out))
    warning = data["results"]["calibration_warning"]
    assert "fitted to the --framework megatron step, planned under torchtitan" in warning


def test_a_file_without_a_framework_means_the_generic_model(run_json, log, tmp_path):
    """A calibration written before session 25 has no reference.framework: calibrate timed its logs with the
    generic fused model, so it is read as --framework generic (no warning there, one under megatron)."""
    import json

    out = tmp_path / "cal.json"
    run_json("calibrate", str(log), *CASES["generic bf16"], "--out", str(out))
    doc = json.loads(out.read_text())
    assert doc["reference"]["framework"] == "generic"
    doc["reference"].pop("framework")
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    generic = run_json("train", *TRAIN_ONLY, *CASES["generic bf16"], "--calibration", str(old))["results"]
    assert "calibration_warning" not in generic and generic["io_step_seconds"] == pytest.approx(1.0, rel=1e-6)
    megatron = run_json("train", *TRAIN_ONLY, *CASES["megatron bf16"], "--calibration", str(old))["results"]
    assert "fitted to the --framework generic step, planned under megatron" in megatron["calibration_warning"]


@pytest.mark.parametrize("flags, field", [(("--framework", "torchtitan"), "framework"),
                                          (("--fp8-recipe", "tensorwise"), "fp8_recipe")])
def test_a_trial_refuses_the_step_options_of_a_log(run_cli, flags, field):
    """A trial records its own step (the eager transformers stack, --framework hf): the options that describe a log's
    run are refused with it, naming the option (calibrate.sources._check_context_read)."""
    from pathlib import Path

    from helpers import field_refusal

    trial = Path(__file__).parent / "fixtures" / "h200" / "profile_llama-3.2-1b_bf16_mb2_s2048.json"
    field_refusal(run_cli("calibrate", str(trial), *flags), field, "is a trial measurement that records its own")
