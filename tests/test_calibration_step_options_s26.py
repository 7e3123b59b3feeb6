"""calibrate takes train's step options (session 26, helper H1): --tp-overlap, --dp-overlap, --sequence-parallel,
--etp, --ep-dispatcher, --attention-kernel, --grad-dtype, --cp, --vpp and the rest of calibrate.train_step's
LOG_STEP_OPTIONS, declared with train's own fields (calibrate.schema._train) and passed to train's step builder
(jobs.plan.step_settings.step_settings_for) and layout. `calibrate LOG <flags> --out cal.json`, then `train --mfu
predicted <flags> --calibration cal.json` with the same flags times the log's own step: a 1.0 s log (five 1.0 s steps,
the first skipped) comes back at 1.0 s within 1e-6, as tests/test_calibration_round_trip_s25.py does for the framework
and the recipe. Before, calibrate refused each of these options ('No such option'), so a log run with any of them could
only be calibrated at train's defaults. The file records the options (reference.options) and train warns where its
flags differ (jobs.calibration_notice.options_warning; cp / vpp / tp_overlap: reference.layout, layout_warning).

Uncalibrated steps train / calibrate predict for these logs (H100, megatron; s): llama-3-8b tp 2: 0.825 (--tp-overlap 0
0.840, --no-sequence-parallel 0.838, --sequence-parallel 0.825); llama-3-8b ZeRO-3 seq 8,192: 0.827 (--dp-overlap 0
0.959, --attention-kernel flash1 0.892, --grad-dtype fp32 0.827, bf16 0.821, --cp 2 0.863); qwen3-30b-a3b ep 8 tp 2:
0.933 (--etp 1 0.969); ep 8 tp 1: 0.535 (--ep-dispatcher flex 0.511); llama-3-8b tp 2 pp 2: 0.957 (--vpp 2 0.911);
llama-3-8b ZeRO-3 --gpus-per-node 4: 0.851; on 16 GPUs 0.823 (--nic-gbit-per-gpu 100 0.898). The three MoE steps
host-bound under ZeRO are those since 7d46318e (the host stretch hides the data-parallel traffic: --etp 1 1.054, ep 8
0.585, flex 0.562 before); read off the tool, they pin the round trip's inputs, not a measurement.
"""

import json

import pytest

MEGATRON = ("--framework", "megatron", "--recompute", "none", "--micro-batch", "1")
DENSE = ("--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--tp", "1", "--pp", "1", "--seq-len", "8192",
         "--zero", "3", "--global-batch", "8") + MEGATRON
TP2 = ("--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--tp", "2", "--pp", "1", "--seq-len", "4096",
       "--zero", "1", "--global-batch", "16") + MEGATRON
PIPELINE = ("--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--tp", "2", "--pp", "2", "--seq-len", "4096",
            "--zero", "1", "--global-batch", "16") + MEGATRON
DENSE_16 = ("--model", "llama-3-8b", "--gpu", "h100", "--gpus", "16", "--tp", "1", "--pp", "1", "--seq-len", "8192",
            "--zero", "3", "--global-batch", "16") + MEGATRON
MOE = ("--model", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "16", "--tp", "1", "--pp", "1", "--ep", "8",
       "--seq-len", "4096", "--zero", "3", "--global-batch", "16") + MEGATRON
MOE_TP2 = ("--model", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "16", "--tp", "2", "--pp", "1", "--ep", "8",
           "--seq-len", "4096", "--zero", "1", "--global-batch", "16") + MEGATRON
CASES = {  # (layout, the option, train's uncalibrated step without the option, with it: s, hand-read above)
    "tp-overlap 0": (TP2, ("--tp-overlap", "0"), 0.825385, 0.840274),
    "dp-overlap 0": (DENSE, ("--dp-overlap", "0"), 0.826855, 0.959174),
    "no sequence parallel": (TP2, ("--no-sequence-parallel",), 0.825385, 0.837742),
    "sequence parallel": (TP2, ("--sequence-parallel",), 0.825385, 0.825385),
    "etp 1": (MOE_TP2, ("--etp", "1"), 0.933103, 0.968785),
    "ep-dispatcher flex": (MOE, ("--ep-dispatcher", "flex"), 0.534729, 0.511492),
    "attention-kernel flash1": (DENSE, ("--attention-kernel", "flash1"), 0.826855, 0.891763),
    "grad-dtype fp32": (DENSE, ("--grad-dtype", "fp32"), 0.826855, 0.826855),  # Megatron-Core's default already
    "grad-dtype bf16": (DENSE, ("--grad-dtype", "bf16"), 0.826855, 0.821193),
    "cp 2": (DENSE, ("--cp", "2"), 0.826855, 0.863378),
    "vpp 2": (PIPELINE, ("--vpp", "2"), 0.956954, 0.911246),
    "gpus-per-node 4": (DENSE, ("--gpus-per-node", "4"), 0.826855, 0.850788),  # ZeRO-3 traffic over the NIC
    "nic-gbit-per-gpu 100": (DENSE_16, ("--nic-gbit-per-gpu", "100"), 0.823227, 0.897845),  # two nodes of 8
}


def train_flags(flags: tuple[str, ...]) -> tuple[str, ...]:
    """train's flags for the log's layout: the layout pinned (cp and vpp 1 unless the case gives them)."""
    pinned = tuple(x for name in ("--cp", "--vpp") if name not in flags for x in (name, "1"))
    return ("--tokens", "1T", "--mfu", "predicted") + pinned + flags


@pytest.fixture(scope="module")
def log(one_second_log):
    return one_second_log  # conftest: five 1.0 s steps


@pytest.mark.parametrize("name", list(CASES))
def test_train_reproduces_a_log_calibrated_with_the_option(run_json, log, tmp_path, name):
    layout, option, without, with_it = CASES[name]
    flags = layout + option
    out = tmp_path / "cal.json"
    run_json("calibrate", str(log), *flags, "--out", str(out))
    default = run_json("train", *train_flags(flags))["results"]
    assert default["io_step_seconds"] == pytest.approx(with_it, rel=1e-5)
    assert run_json("train", *train_flags(layout))["results"]["io_step_seconds"] == pytest.approx(without, rel=1e-5)
    # calibrate timed the log with train's step for the same flags, option included
    assert json.loads(out.read_text())["measurements"][0]["step_default_s"] == pytest.approx(
        default["io_step_seconds"], rel=1e-9)
    calibrated = run_json("train", *train_flags(flags), "--calibration", str(out))["results"]
    assert calibrated["io_step_seconds"] == pytest.approx(1.0, rel=1e-6)
    assert "calibration_warning" not in calibrated  # the same flags: nothing to tell


def test_the_file_records_the_options(run_json, log, tmp_path):
    out = tmp_path / "cal.json"
    run_json("calibrate", str(log), *TP2, "--tp-overlap", "0", "--no-sequence-parallel", "--grad-dtype", "bf16",
             "--out", str(out))
    ref = json.loads(out.read_text())["reference"]
    assert ref["layout"] == {"cp": 1, "vpp": 1, "tp_overlap": 0.0}
    assert ref["options"]["sequence_parallel"] is False and ref["options"]["grad_dtype"] == "bf16"
    assert ref["options"]["dp_overlap"] is None  # not given: read by no step (its 0.9 caps nothing)
    assert ref["options"]["attention_kernel"] == "flash"  # train's default, not given


@pytest.mark.parametrize("calibrated, planned, told", [
    (("--grad-dtype", "bf16"), (), "timed its log with --grad-dtype bf16, planned with --grad-dtype (not given)"),
    (("--no-sequence-parallel",), ("--sequence-parallel",), "--sequence-parallel off, planned with "
                                                            "--sequence-parallel on"),
    (("--attention-kernel", "flash1"), ("--attention-kernel", "flash"), "--attention-kernel flash1, planned with "
                                                                          "--attention-kernel flash"),
    (("--dp-overlap", "0"), ("--dp-overlap", "0.5"), "--dp-overlap 0, planned with --dp-overlap 0.5"),
])
def test_another_option_at_train_is_told(run_json, log, tmp_path, calibrated, planned, told):
    out = tmp_path / "cal.json"
    run_json("calibrate", str(log), *TP2, *calibrated, "--out", str(out))
    results = run_json("train", *train_flags(TP2 + planned), "--calibration", str(out))["results"]
    assert told in results["calibration_warning"]
    assert results["io_step_seconds"] != pytest.approx(1.0, rel=1e-4)  # not the log's step: why it is told


def test_another_vpp_at_train_is_told(run_json, log, tmp_path):
    """--vpp given to calibrate is what reference.layout holds (the existing layout warning compares it)."""
    out = tmp_path / "cal.json"
    run_json("calibrate", str(log), *PIPELINE, "--vpp", "2", "--out", str(out))
    results = run_json("train", *train_flags(PIPELINE), "--calibration", str(out))["results"]
    assert "calibration timed its log at --vpp 2" in results["calibration_warning"]


@pytest.mark.parametrize("flags, field", [
    (("--tp-overlap", "2"), "tp_overlap"),
    (("--dp-overlap", "abc"), "dp_overlap"),
    (("--attention-kernel", "flash9"), "attention_kernel"),
    (("--grad-dtype", "fp8"), "grad_dtype"),
    (("--cp", "0"), "cp"),
    (("--vpp", "2"), "vpp"),  # with --pp 1
    (("--etp", "2"), "etp"),  # a dense model
    (("--framework", "torchtitan", "--grad-dtype", "fp32"), "grad_dtype"),
    (("--no-sequence-parallel",), "sequence_parallel"),  # with --tp 1
    (("--recompute-layers", "99", "--recompute", "full"), "recompute_layers"),
    (("--lora-rank", "8"), "lora_rank"),
    (("--compile",), "compile"),
])
def test_bad_options_are_refused_as_train_refuses_them(run_cli, log, flags, field):
    from helpers import field_refusal

    pairs = zip(DENSE[::2], DENSE[1::2])  # the flags the case gives in place of DENSE's
    layout = tuple(x for name, value in pairs if name not in flags for x in (name, value))
    trained = field_refusal(run_cli("train", *train_flags(layout + flags)), field)
    assert field_refusal(run_cli("calibrate", str(log), *layout, *flags), field) == trained


@pytest.mark.parametrize("options, field", [
    ({"attention_kernel": "flash9"}, "calibration: reference.options: attention_kernel"),
    ({"grad_dtyp": "fp32"}, "calibration"),
    ({"sequence_parallel": {"a": 1}}, "calibration"),
])
def test_a_file_with_bad_options_is_refused(run_cli, log, tmp_path, options, field):
    from helpers import field_refusal

    out = tmp_path / "cal.json"
    assert run_cli("calibrate", str(log), *DENSE, "--out", str(out))[0] == 0
    doc = json.loads(out.read_text())
    doc["reference"]["options"].update(options)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    field_refusal(run_cli("train", *train_flags(DENSE), "--calibration", str(bad)), field)


MEMORY_LOG = "step,step_time_s,memory_gib\n1,1.0,40\n2,1.0,40\n3,1.0,40\n4,1.0,40\n5,1.0,40\n"
TP2_LAYOUT = tuple(x for name, value in zip(TP2[::2], TP2[1::2]) if name not in ("--framework", "--recompute")
                   for x in (name, value))
MEMORY_CASES = {  # calibrate's memory prediction is train's and memory's (allocated peak per GPU, bytes)
    "megatron": TP2_LAYOUT + ("--framework", "megatron", "--recompute", "none"),
    "megatron grad-dtype bf16": TP2_LAYOUT + ("--framework", "megatron", "--recompute", "none", "--grad-dtype", "bf16"),
    "megatron recompute-modules mlp": TP2_LAYOUT + ("--framework", "megatron", "--recompute-modules", "mlp"),
    "megatron recipe fp8": TP2_LAYOUT + ("--framework", "megatron", "--recompute", "none", "--recipe", "fp8"),
    "megatron cp 2": TP2_LAYOUT + ("--framework", "megatron", "--recompute", "none", "--cp", "2"),
    "megatron pp 2 vpp 2": PIPELINE + ("--vpp", "2"),
    "torchtitan": TP2_LAYOUT + ("--framework", "torchtitan", "--recompute", "none"),
    "generic": TP2_LAYOUT + ("--framework", "generic", "--recompute", "none"),
}


@pytest.fixture(scope="module")
def memory_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("step_options_memory") / "steps.csv"
    path.write_text(MEMORY_LOG)
    return path


def calibrated_peak(run_json, memory_log, tmp_path, flags) -> float:
    out = tmp_path / "cal.json"
    run_json("calibrate", str(memory_log), *flags, "--out", str(out))
    return json.loads(out.read_text())["measurements"][0]["memory_default_bytes"]


@pytest.mark.parametrize("name", list(MEMORY_CASES))
def test_calibrate_predicts_the_peak_train_and_memory_do(run_json, memory_log, tmp_path, name):
    """Session 26: a log's memory is predicted with train's memory builder (jobs.memory.settings, through
    calibrate.train_step.train_case), not the log format's defaults: llama-3-8b tp 2 on 8 H100, megatron, was
    34.51 GiB at calibrate and 42.68 GiB (45,831,999,488 B) at train and memory."""
    flags = MEMORY_CASES[name]
    peak = calibrated_peak(run_json, memory_log, tmp_path, flags)
    assert peak == pytest.approx(run_json("memory", *flags)["results"]["peak_allocated"], rel=1e-12)
    assert peak == pytest.approx(run_json("train", *train_flags(flags))["results"]["mem_peak_allocated"], rel=1e-12)


def test_grad_dtype_moves_the_calibrated_peak_by_the_gradient_buffer(run_json, memory_log, tmp_path):
    """--grad-dtype bf16 under megatron: gradients at 2 B in place of Megatron-Core's fp32 4 B (grad_reduce_in_fp32),
    on llama-3-8b's 4,015,263,744 parameters a GPU at tp 2 (memory's peak_weights: 8,030,527,488 B at 2 B; ZeRO-1 keeps
    every gradient): 2 B x that = 8,030,527,488 B less (45,831,999,488 -> 37,801,472,000)."""
    fp32 = calibrated_peak(run_json, memory_log, tmp_path, MEMORY_CASES["megatron"])
    bf16 = calibrated_peak(run_json, memory_log, tmp_path, MEMORY_CASES["megatron grad-dtype bf16"])
    assert fp32 - bf16 == pytest.approx(2 * 4_015_263_744, rel=1e-9)


@pytest.mark.parametrize("planned, told", [
    ((), "calibration timed its log with --grad-dtype bf16, planned with --grad-dtype (not given)"),
    (("--grad-dtype", "bf16"), None)])
def test_memory_tells_a_calibration_timed_with_other_step_options(run_json, memory_log, tmp_path, planned, told):
    """`memory --calibration` said nothing where the file was timed with other step options (train, plan and budget
    do: jobs.calibration_notice), so a memory factor fitted against bf16 gradients was read at Megatron-Core's fp32
    gradients (8,030,527,488 B more a GPU, the test above) without a word. Through the same notice now; silent where
    the flags are the log's."""
    out = tmp_path / "cal.json"
    flags = MEMORY_CASES["megatron"]
    run_json("calibrate", str(memory_log), *flags, "--grad-dtype", "bf16", "--out", str(out))
    results = run_json("memory", *flags, *planned, "--calibration", str(out))["results"]
    assert (told in results["calibration_warning"]) if told else results.get("calibration_warning") is None
