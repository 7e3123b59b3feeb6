"""Session 25 (helper M2): follow-ups of `--recipe fp8` computing in fp8 (commit f670a342).

1. `calibrate --recipe fp8` fitted at bf16 (CalibrateInputs ran no follow_recipe; LogContext.dtype defaults to bf16),
   so a calibration made with train's own flags scaled the fp8 step by a factor fitted against the bf16 prediction.
   calibrate now follows the recipe by the one rule (schema.precision_rules.follow_recipe), the calibration records
   the dtype it was fitted at (Reference.dtype) and train / plan say so where it is not the plan's.
2. train's assumption 'dense fp8 peak' was marked as not set where --recipe fp8 set it.
3. Refusals that named a value the user never typed: --gpu v100 without --dtype ('dtype: got bf16'), memory's
   --ep-a2a-overlap --pp 2 without --vpp ('vpp: got 1'), memory --recipe fp8 --compare without --gpu (the implicit
   A100 default), and the combined 1F1B's micro-batch rule named global_batch by memory but gpus by train.
"""

import json

import pytest
from helpers import field_refusal, report_lines

from gpuplan import TrainingInputs, estimate_training

LAYOUT = ("--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--seq-len", "8192", "--zero", "3",
          "--micro-batch", "1", "--global-batch", "8")
TRAIN = ("train", "--tokens", "1T", "--mfu", "predicted", *LAYOUT)


@pytest.fixture
def one_second_log(tmp_path):
    """A table log of twenty 1.0 s steps (the first is skipped as warm-up: calibrate.fit)."""
    path = tmp_path / "in.csv"
    path.write_text("step,step_time_s\n" + "".join(f"{i},1.0\n" for i in range(1, 21)))
    return path


def _calibrate(run_cli, log, out, *flags) -> dict:
    code, _, err = run_cli("calibrate", str(log), *LAYOUT, *flags, "--out", str(out))
    assert code == 0, err
    return json.loads(out.read_text())


def _step_s(run_json, *flags) -> float:
    return run_json(*TRAIN, *flags)["results"]["io_step_seconds"]


# ---- 1. calibrate follows --recipe fp8 ----------------------------------------------------------------------------

def test_calibrate_recipe_fp8_fits_at_fp8_as_dtype_fp8_does(run_cli, one_second_log, tmp_path):
    """The 1.0 s step against calibrate's predictions for the table log, train's own step for the flags (session 25,
    calibrate.train_step: --framework megatron, the default): 0.6809 s at fp8, 0.8269 s at bf16, 0.0231 s of each
    exposed ZeRO-3 communication that the compute factor does not scale, so compute_time (1 - 0.0231) / (0.6809 -
    0.0231) = 1.485 (fp8) and 1.215 (bf16), then 1.488 and 1.216 as fitted (calibrate.reproduce: a faster
    compute hides less of the communication; the calibrated step is the logged 1.0 s), where --recipe fp8 alone
    fitted the bf16 factor before. (Against the generic fused model calibrate used before session 25: 0.809 s and
    0.955 s, 1.243 and 1.048.)"""
    recipe = _calibrate(run_cli, one_second_log, tmp_path / "a.json", "--recipe", "fp8")
    both = _calibrate(run_cli, one_second_log, tmp_path / "b.json", "--recipe", "fp8", "--dtype", "fp8")
    bf16 = _calibrate(run_cli, one_second_log, tmp_path / "c.json")
    assert recipe["compute_time"]["value"] == pytest.approx(both["compute_time"]["value"], rel=1e-12)
    assert recipe["compute_time"]["value"] == pytest.approx(1.488, abs=5e-4)
    assert recipe["measurements"][0]["step_default_s"] == pytest.approx(0.6809, abs=5e-4)
    assert bf16["compute_time"]["value"] == pytest.approx(1.216, abs=5e-4)
    assert bf16["measurements"][0]["step_default_s"] == pytest.approx(0.8269, abs=5e-4)
    assert (recipe["reference"]["dtype"], both["reference"]["dtype"], bf16["reference"]["dtype"]) == \
        ("fp8", "fp8", "bf16")


def test_train_with_a_calibration_made_by_its_own_flags(run_cli, run_json, one_second_log, tmp_path):
    """train --recipe fp8 with the calibration of `calibrate --recipe fp8` times the step the --dtype fp8 pair gives,
    the logged 1.0 s (session 25: calibrate times the log with train's step for the flags; 0.840 s before, when
    calibrate's generic step differed from train's megatron one; 0.712 s before that: the bf16 factor on the fp8
    step 0.681 s); no dtype warning."""
    _calibrate(run_cli, one_second_log, tmp_path / "a.json", "--recipe", "fp8")
    _calibrate(run_cli, one_second_log, tmp_path / "b.json", "--recipe", "fp8", "--dtype", "fp8")
    same = _step_s(run_json, "--recipe", "fp8", "--calibration", str(tmp_path / "a.json"))
    pair = _step_s(run_json, "--recipe", "fp8", "--dtype", "fp8", "--calibration", str(tmp_path / "b.json"))
    assert same == pytest.approx(pair, rel=1e-12) and same == pytest.approx(1.0, abs=1e-6)
    report = run_json(*TRAIN, "--recipe", "fp8", "--calibration", str(tmp_path / "a.json"))
    assert "calibration_warning" not in report_lines(report)


def test_a_calibration_fitted_at_another_dtype_is_told(run_cli, run_json, one_second_log, tmp_path):
    """The bf16 calibration read by an fp8 plan: the answer's first line says so (the step is 0.8225 s, about the
    bf16 factor 1.216 x the fp8 step's 0.658 s of compute + its 0.023 s of exposed communication = 0.823 s, a little
    of which the slower compute hides; the fp8 fit gives the logged 1.0 s); a file without the record (before
    session 25) says nothing."""
    doc = _calibrate(run_cli, one_second_log, tmp_path / "c.json")
    report = run_json(*TRAIN, "--recipe", "fp8", "--calibration", str(tmp_path / "c.json"))
    warning = report_lines(report)["calibration_warning"]["value"]
    assert warning.startswith("calibration fitted at dtype bf16, planned at fp8"), warning
    assert report["results"]["io_step_seconds"] == pytest.approx(0.8225, abs=1e-3)
    del doc["reference"]["dtype"], doc["reference"]["options"]  # neither before session 25 (options: session 26)
    (tmp_path / "old.json").write_text(json.dumps(doc))
    old = run_json(*TRAIN, "--recipe", "fp8", "--calibration", str(tmp_path / "old.json"))
    assert "calibration_warning" not in report_lines(old)


# ---- 2. the fp8 peak --recipe set is marked as set ----------------------------------------------------------------

def test_dense_fp8_peak_set_by_the_recipe_is_marked_set():
    def peak(**kw):
        report = estimate_training(TrainingInputs(model="llama-3.1-8b", tokens=1e12, gpu="h100", gpus=64, **kw))
        return next(a for a in report.assumptions if a.key == "peak")

    recipe, typed, default = peak(recipe="fp8"), peak(dtype="fp8"), peak()
    assert (recipe.label, recipe.value, recipe.user_set) == ("dense fp8 peak", "1979 TFLOP/s", True)
    assert (typed.label, typed.user_set) == ("dense fp8 peak", True)
    assert (default.label, default.value, default.user_set) == ("dense bf16 peak", "989.4 TFLOP/s", False)


# ---- 3. refusals name what was typed ------------------------------------------------------------------------------

@pytest.mark.parametrize("job", [("plan", "--tokens", "1T"), ("train", "--tokens", "1T", "--gpus", "8"),
                                 ("budget", "--tokens", "1T", "--gpus", "8"), ("memory",)])
def test_a_gpu_without_the_default_dtype_is_refused_naming_gpu(run_cli, job):
    err = field_refusal(run_cli(job[0], "llama-3.1-8b", *job[1:], "--gpu", "v100"), "gpu",
                        "got 'v100'; NVIDIA Tesla V100 SXM2 32GB has no bf16 path")
    assert "give --dtype fp16 or fp32 (it has fp16, fp32), or another --gpu" in err and "'bf16'" not in err


def test_a_typed_dtype_keeps_its_own_refusal_and_fp16_answers(run_cli):
    field_refusal(run_cli("plan", "llama-3.1-8b", "--tokens", "1T", "--gpu", "v100", "--dtype", "bf16"), "dtype",
                  "got 'bf16'; NVIDIA Tesla V100 SXM2 32GB has no dense bf16 peak")
    assert run_cli("memory", "llama-3.1-8b", "--gpu", "v100", "--dtype", "fp16")[0] == 0


def test_combined_1f1b_without_vpp_names_ep_a2a_overlap(run_cli):
    moe = ("memory", "mixtral-8x7b", "--gpu", "h100", "--gpus", "16", "--ep", "8", "--ep-a2a-overlap", "--pp", "2")
    field_refusal(run_cli(*moe), "ep_a2a_overlap", "got True; --ep-a2a-overlap (Megatron-Core's combined 1F1B) "
                  "runs a pipeline only interleaved: give --vpp 2 or more with --pp 2, or --pp 1")
    field_refusal(run_cli(*moe, "--vpp", "1"), "vpp", "got 1; --ep-a2a-overlap")


def test_recipe_fp8_on_the_default_gpu_names_the_default(run_cli):
    err = field_refusal(run_cli("memory", "llama-3.1-8b", "--recipe", "fp8", "--compare", "h100-sxm"), "recipe",
                        "got 'fp8'; computes in fp8, which the default --gpu (NVIDIA A100 80GB SXM4; --gpu not given) "
                        "has no path for: give --gpu with fp8 (e.g. h100)")
    assert run_cli("memory", "llama-3.1-8b", "--recipe", "fp8", "--gpu", "h100", "--compare", "h100-sxm")[0] == 0


@pytest.mark.parametrize("job", ["train", "plan", "budget", "memory"])
def test_combined_1f1b_batch_rule_names_global_batch_at_every_door(run_cli, job):
    """dp 8 (16 GPUs / pp 2) x micro-batch 1 makes 24 sequences 3 micro-batches, not a multiple of pp 2 (Megatron-Core
    schedules.py@core_v0.15.0 L975-993 at the default group size pp): memory named global_batch, the others gpus."""
    ask = ("mixtral-8x7b", "--gpu", "h100", "--gpus", "16", "--ep", "8", "--ep-a2a-overlap", "--pp", "2", "--vpp", "2",
           "--micro-batch", "1", "--global-batch", "24", "--cp", "1", "--tp", "1")
    tokens = () if job == "memory" else ("--tokens", "1T")
    field_refusal(run_cli(job, *ask, *tokens), "global_batch", "got 24; ")


def test_a_compared_part_without_the_default_dtype_says_it_is_the_default(run_cli):
    """memory --compare v100 with --dtype left out said 'no bf16 path for --dtype bf16', a flag never typed."""
    err = field_refusal(run_cli("memory", "llama-3.1-8b", "--compare", "v100"), "compare",
                        "got 'v100'; NVIDIA Tesla V100 SXM2 32GB has no bf16 path, the compute dtype when --dtype is "
                        "not given (it has fp16, fp32)")
    assert "--dtype bf16" not in err
    field_refusal(run_cli("memory", "llama-3.1-8b", "--compare", "v100", "--dtype", "bf16"), "compare",
                  "has no bf16 path for --dtype bf16")
