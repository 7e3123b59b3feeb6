"""Hostile wave 30b (session 26, helper H6): the session's new surfaces, probed across doors (the shared list reader
at plan --gpus, memory --compare, report --sections, --recompute-modules, --batch-ramp: CLI, YAML / TOML plan files,
web JSON, Python API; calibrate's step options and the calibration file's reference.options read back by train, plan
and memory; plan --rank-by cost). About 290 cases; the defects found, each a test here that fails before its fix:

* a calibration file's reference.options compared as written, not as calibrate's field reads it: "lora_rank": "16"
  (text a plan file may hold for a count) warned 'timed with --lora-rank 16, planned with --lora-rank 16', and
  "sequence_parallel": "no" was quoted back as '--sequence-parallel no', a flag that takes no value;
* train's advice for an option the log left unstated was 'give --dp-overlap (not given)'; a null for an option
  calibrate always records ("optimizer": null) was read, and advised as 'give --optimizer (not given)';
* memory --calibration never checked reference.options: a file with "grad_dtype": "fp7" or "lora_rank": -5 was read,
  exit 0, where train, plan and budget refuse it;
* calibrate refused --ep-dispatcher flex, --ep-a2a-overlap and --ep-overlap on a dense model as 'needs expert
  parallelism (--ep > 1)' (a log's ep is 1), where train says the model is dense, which no --ep mends;
* calibrate refused tp 3 on llama-3-8b (32 heads) or cp 3 at a 4,096 sequence, on 8 GPUs, as 'gpus: must be a multiple
  of tp x pp', where train names the degree the model rules out;
* a Calibration object with a 401-digit integer (reference.options or a reference field) was quoted cut at 40
  characters, a 40-digit number it is not;
* plan --gpus 3000 --rank-by cost: the cost line (of the 2,944 GPUs used) did not say so, nor what the 3,000 ranked
  cost; its formula names both;
* plan --rank-by cost on a GPU with no published price (mi355x) answered exit 0, ranked by time under a 'ranked by
  cost' title, every cost n/a;
* plan --rank-by cost without --gpus titled its table 'of every GPU given (those a layout leaves idle too)' where no
  GPUs were given and none is charged idle (the default range, a --days deadline).
"""

import json

import pytest
from helpers import one_line_refusal, web_refusal

import gpuplan
from gpuplan import InputError

LOG = "step,step_time_s\n1,1.0\n2,1.0\n3,1.0\n4,1.0\n5,1.0\n"
TP2 = ("--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--tp", "2", "--pp", "1", "--seq-len", "4096",
       "--zero", "1", "--global-batch", "16", "--framework", "megatron", "--recompute", "none", "--micro-batch", "1",
       "--grad-dtype", "bf16")
TRAIN = ("--tokens", "1T", "--mfu", "predicted", "--cp", "1", "--vpp", "1")


@pytest.fixture(scope="module")
def calibration(tmp_path_factory) -> dict:
    """The calibration of a 1.0 s log of llama-3-8b tp 2 on 8 H100, megatron, --grad-dtype bf16, as a document."""
    from gpuplan.cli import main

    folder = tmp_path_factory.mktemp("w30b")
    (folder / "steps.csv").write_text(LOG)
    assert main(["calibrate", str(folder / "steps.csv"), *TP2, "--out", str(folder / "cal.json")]) == 0
    return json.loads((folder / "cal.json").read_text())


def _line(result) -> str:
    """The one line of a refusal (exit 2, nothing on stdout, no traceback: helpers.one_line_refusal)."""
    code, out, err = result
    one_line_refusal(code, err)
    assert out == ""
    return err.strip()


def _with_options(calibration: dict, tmp_path, **options) -> str:
    document = json.loads(json.dumps(calibration))
    document["reference"]["options"].update(options)
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(document))
    return str(path)


# ---- reference.options read as calibrate's fields read them --------------------------------------------------------

def test_the_files_own_options_warn_nothing(run_json, calibration, tmp_path):
    """The file as calibrate wrote it, read back with the same flags: no warning, the log's 1.0 s (the baseline the
    spelled-out files below must match)."""
    results = run_json("train", *TP2, *TRAIN, "--calibration", _with_options(calibration, tmp_path))["results"]
    assert "calibration_warning" not in results
    assert results["io_step_seconds"] == pytest.approx(1.0, rel=1e-6)


@pytest.mark.parametrize("name, text", [("lora_rank", "16"), ("sequence_parallel", "on"), ("grad_dtype", "BF16")])
def test_a_recorded_value_spelled_as_text_is_the_value(run_json, calibration, tmp_path, name, text):
    """lora_rank "16" is the 16 train plans with (its default), sequence_parallel "on" megatron's tp 2 default, grad
    dtype "BF16" the bf16 given: the same options, no warning. Before, each was compared as written and train warned
    'calibration timed its log with --lora-rank 16, planned with --lora-rank 16'."""
    path = _with_options(calibration, tmp_path, **{name: text})
    results = run_json("train", *TP2, *TRAIN, "--calibration", path)["results"]
    assert "calibration_warning" not in results
    assert results["io_step_seconds"] == pytest.approx(1.0, rel=1e-6)


def test_a_recorded_flag_is_quoted_as_on_or_off(run_json, calibration, tmp_path):
    """"sequence_parallel": "no" (the schema's text for false) differs from megatron's tp 2 default (on): the warning
    says '--sequence-parallel off', as for a file holding false; it quoted '--sequence-parallel no'."""
    warned = run_json("train", *TP2, *TRAIN, "--calibration", _with_options(
        calibration, tmp_path, sequence_parallel="no"))["results"]["calibration_warning"]
    assert warned == run_json("train", *TP2, *TRAIN, "--calibration", _with_options(
        calibration, tmp_path, sequence_parallel=False))["results"]["calibration_warning"]
    assert warned.startswith("calibration timed its log with --sequence-parallel off, planned with "
                             "--sequence-parallel on")


@pytest.mark.parametrize("options, line", [
    ({"grad_dtype": "fp7"}, "calibration: reference.options: grad_dtype: got 'fp7'; must be one of fp32, bf16"),
    ({"lora_rank": -5}, "calibration: reference.options: lora_rank: got -5; must be a positive, finite number"),
    ({"recompute_modules": ["mlp", "mlp"]}, "calibration: reference.options: recompute_modules: got ('mlp', 'mlp'); "
     "'mlp' is given twice (entries 1 and 2); give each once: names separated by commas, from: core_attn, moe_act, "
     "layernorm, mla_up_proj, mlp, moe, shared_experts"),
])
def test_memory_refuses_a_calibration_with_a_bad_option_as_train_does(run_cli, calibration, tmp_path, options, line):
    """memory reads a calibration's memory factors and never checked its reference.options: exit 0 with 'fp7'. Now
    the line train, plan and budget give, at the CLI and the Python API."""
    path = _with_options(calibration, tmp_path, **options)
    memory = ("memory", "--model", "llama-3-8b", "--gpu", "h100", "--calibration", path)
    assert _line(run_cli(*memory)) == f"error: {line}"
    assert _line(run_cli("train", *TP2, *TRAIN, "--calibration", path)) == f"error: {line}"
    with pytest.raises(InputError) as api:
        gpuplan.estimate_memory(gpuplan.MemoryInputs(model="llama-3-8b", gpu="h100", calibration=path))
    assert str(api.value) == line


def test_an_option_the_log_left_unstated_is_advised_left_out(run_json, calibration, tmp_path):
    """The log calibrated without --dp-overlap (recorded null: read only where given) and with --grad-dtype bf16,
    planned with --dp-overlap 0.5 and --grad-dtype fp32: the advice gives the one and leaves the other out. Before:
    'give --grad-dtype bf16 --dp-overlap (not given) to reproduce it', a flag with no value."""
    flags = tuple(x for x in TP2 if x not in ("--grad-dtype", "bf16"))
    warned = run_json("train", *flags, *TRAIN, "--grad-dtype", "fp32", "--dp-overlap", "0.5", "--calibration",
                      _with_options(calibration, tmp_path))["results"]["calibration_warning"]
    assert warned == ("calibration timed its log with --grad-dtype bf16 --dp-overlap (not given), planned with "
                      "--grad-dtype fp32 --dp-overlap 0.5: the calibrated step is not the log's; give --grad-dtype bf16 "
                      "and leave --dp-overlap out to reproduce it (docs/calibration.md)")


@pytest.mark.parametrize("job", [("train", *TP2, *TRAIN), ("memory", "--model", "llama-3-8b", "--gpu", "h100")])
def test_a_null_for_an_option_calibrate_always_records_is_refused(run_cli, calibration, tmp_path, job):
    """calibrate records train's default where an option with one was not given ("optimizer": "adamw"), null only
    where there is none: "optimizer": null was read and train advised 'give --optimizer (not given)'; memory read it
    silently."""
    path = _with_options(calibration, tmp_path, optimizer=None)
    assert _line(run_cli(*job, "--calibration", path)) == (
        "error: calibration: reference.options: optimizer: got 'null'; calibrate records a value for it (given, else "
        "train's default 'adamw'); null is for an option with no default")


@pytest.mark.parametrize("part, value", [("options", {"lora_rank": 10**400}), ("field", 10**400)],
                         ids=["options", "gemm_dim"])
def test_a_huge_integer_in_a_calibration_object_is_described_not_cut(calibration, part, value):
    """A Calibration object built in Python (its integers unbounded, unlike a file's JSON, whose reader refuses
    them first) with a 401-digit lora_rank or gemm_dim: the refusal quoted the value cut at 40 characters, 'not
    1000000000000000000000000000000000000000', a number it is not; now 'an integer of about 401 digits' (errors.shown)."""
    import dataclasses

    from gpuplan.calibrate.model import calibration_from_dict

    cal = calibration_from_dict(calibration, "cal.json")
    ref = cal.reference
    ref = (dataclasses.replace(ref, options=dict(ref.options, **value)) if part == "options" else
           dataclasses.replace(ref, gemm_dim=value))
    with pytest.raises(InputError) as api:
        gpuplan.TrainingInputs(model="llama-3-8b", gpu="h100", gpus=8, tokens="1T",
                               calibration=dataclasses.replace(cal, reference=ref))
    assert str(api.value).startswith("calibration: got 'a Calibration object'; is incomplete or malformed (reference.")
    assert "not an integer of about 401 digits)" in str(api.value)


# ---- calibrate and train: one line for an expert option on a dense model -------------------------------------------

@pytest.mark.parametrize("option, value", [(("--ep-dispatcher", "flex"), "'flex'"), (("--ep-a2a-overlap",), "True"),
                                           (("--ep-overlap", "0.5"), "0.5")])
def test_an_expert_option_on_a_dense_model_gets_trains_line_at_calibrate(run_cli, tmp_path, option, value):
    """A log's expert parallelism is 1, so calibrate answered the schema's --ep 1 rule ('needs expert parallelism
    (--ep > 1): with --ep 1 there is no all-to-all'), which --ep 2 does not mend on llama-3-8b; train (no --ep) says
    the model is dense. Now calibrate says what train says."""
    log = tmp_path / "steps.csv"
    log.write_text(LOG)
    name = option[0][2:].replace("-", "_")
    line = (f"error: {name}: got {value}; applies to mixture-of-experts models; llama-3-8b is dense (no expert "
            "all-to-all)")
    assert _line(run_cli("train", *TP2, *TRAIN, *option)) == line
    assert _line(run_cli("calibrate", str(log), *TP2, *option, "--out", str(tmp_path / "c.json"))) == line
    assert not (tmp_path / "c.json").exists()


@pytest.mark.parametrize("degrees, line", [
    (("--tp", "3"), "error: tp: got 3; must divide the 32 attention heads"),
    (("--tp", "2", "--cp", "3"), "error: cp: got 3; 2 x cp must divide the sequence length 4,096 (each sequence is cut "
                                 "into 2·cp load-balanced chunks)"),
])
def test_a_degree_the_model_rules_out_gets_trains_line_at_calibrate(run_cli, tmp_path, degrees, line):
    """On 8 GPUs, tp 3 (llama-3-8b's 32 heads) and cp 3 (a 4,096 sequence in 6 chunks) are the model's limits, which
    train names; calibrate checked the log's world size first: 'gpus: got 8; must be a multiple of tp x pp = 3'. A
    world size that is no multiple of a degree the model takes is still calibrate's own refusal (a log's GPUs are
    counted, not a limit as train's --gpus)."""
    log = tmp_path / "steps.csv"
    log.write_text(LOG)
    assert TP2[6:8] == ("--tp", "2")
    flags = TP2[:6] + TP2[8:] + degrees
    assert _line(run_cli("train", *flags, *TRAIN[:4])) == line
    assert _line(run_cli("calibrate", str(log), *flags, "--out", str(tmp_path / "c.json"))) == line
    assert _line(run_cli("calibrate", str(log), *flags[:-1], "16", "--out", str(tmp_path / "c.json"))).startswith(
        "error: gpus: got 8; must be a multiple of tp x pp")


# ---- plan --rank-by cost: the title says whose GPUs are paid for ---------------------------------------------------

@pytest.mark.parametrize("flags", [(), ("--days", "5")])
def test_cost_ranking_without_gpus_given_charges_no_idle_gpus_and_says_so(run_json, flags):
    """No --gpus: a search count is nobody's cluster, charged_gpus is not set (jobs.plan.search) and the ranking pays
    for the GPUs each layout uses; the title said 'of every GPU given (those a layout leaves idle too)'."""
    report = run_json("plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--tokens", "1T", "--rank-by", "cost",
                      *flags)
    title = next(t for t in report["tables"] if t.startswith("top "))
    assert "of the GPUs each layout uses (no --gpus given: none idle)" in title
    assert "of every GPU given" not in title
    assert report["results"]["idle_gpus"] == 0


def test_the_cost_line_says_it_is_of_the_gpus_used_and_what_all_given_cost(run_json):
    """--gpus 3000 --rank-by cost: 2,944 GPUs used, 56 idle; the cost line is of the 2,944 and said only 'GPU-hours x
    price', where the ranking charged all 3,000 (the GPU-hours line said 'renting all 3,000 bills +1.9%'). Its formula
    now names both: 3,000 / 2,944 x the cost printed."""
    report = run_json("plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--tokens", "1T", "--gpus", "3000",
                      "--rank-by", "cost")
    results = report["results"]
    assert (results["best_gpus"], results["idle_gpus"]) == (2944, 56)
    line = next(ln for sec in report["sections"] for ln in sec["lines"] if ln["key"] == "best_cost")
    whole = round(results["best_cost"] * 3000 / 2944)
    assert line["formula"].endswith(f"; of the 2,944 used (all 3,000 given: ${whole:,}; --rank-by cost charges every "
                                    "GPU given)")


@pytest.mark.parametrize("flags", [("--gpus", "64"), ()])
def test_cost_ranking_without_a_price_is_refused_at_every_door(run_cli, client, flags):
    """mi355x has no published price: --rank-by cost answered exit 0, ranked by time under a title saying 'ranked by
    cost', every cost 'n/a'. Now one line naming rank_by at the CLI, the web API and the Python API; --price mends it."""
    line = ("rank_by: got 'cost'; needs a price, and there is no published on-demand price for mi355x: give --price "
            "(USD per GPU-hour), or rank by time or gpus")
    ask = {"model": "llama-3.1-8b", "gpu": "mi355x", "tokens": "1T", "rank_by": "cost"} | (
        {"gpus": 64} if flags else {})
    cli = ("plan", "--model", "llama-3.1-8b", "--gpu", "mi355x", "--tokens", "1T", "--rank-by", "cost", *flags)
    assert _line(run_cli(*cli)) == f"error: {line}"
    assert web_refusal(client.post("/api/plan", json=ask), "rank_by") == line
    with pytest.raises(InputError) as api:
        gpuplan.plan_report(gpuplan.PlanInputs(**ask))
    assert str(api.value) == line
    code, out, _ = run_cli(*cli, "--price", "3", "--json")
    assert code == 0 and json.loads(out)["results"]["best_cost"] > 0

