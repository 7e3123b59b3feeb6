"""Session 19, helper D1: the training side's debt and one defect.

Defect: --batch-ramp text past schema.types.MAX_TEXT (256 characters, up to batch_ramp_field.MAX_RAMP_TEXT) was
checked for ASCII controls only, where text up to 256 characters goes through schema.types.name and its unseen-text
rule (schema/unseen_text.py, wave 20). A bidirectional override (U+202E) or a zero-width space (U+200B) inside a long
ramp was refused as a bad count ('each phase's tokens a positive count'), and a C1 control (U+0085) or a line
separator (U+2028) at its end was trimmed away and the ramp answered. Both lengths now say the one rule's words."""

import subprocess
import sys

import pytest
from helpers import four_door_refusal, one_line_refusal

from gpuplan.schema.unseen_text import REFUSAL

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

TRAIN = {"model": "llama-3-8b", "gpu": "h100", "gpus": 64, "mfu": "predicted", "tokens": "1T", "global_batch": 512}
LONG = ",".join(["1000000000:64"] * 30)
"""A ramp of 30 phases of 1e9 tokens at 64 sequences: 30 x 14 - 1 = 419 characters, past MAX_TEXT (256), 3e10 tokens
of the 1e12 asked; answered as it is (test_a_long_ramp_without_one_is_answered)."""


def test_the_long_ramp_is_long_and_answered_without_an_unseen_character():
    """The control: the text below is refused for the character, not for being long (the long path reads it)."""
    from gpuplan import TrainingInputs

    assert 256 < len(LONG) <= 1024
    assert len(TrainingInputs(**TRAIN, batch_ramp=LONG).batch_ramp) == 30


@pytest.mark.parametrize("job, route", [("train", "training"), ("budget", "budget"), ("plan", "plan")])
@pytest.mark.parametrize("ramp", [LONG[:100] + "\u202e" + LONG[100:], LONG + "\u200b", "\u2066" + LONG])
def test_a_long_ramp_with_a_bidi_or_zero_width_character_is_refused_at_every_door(run_cli, client, tmp_path, job,
                                                                                  route, ramp):
    """CLI flag, plan file (YAML holds U+202E / U+200B / U+2066 in a plain scalar), web body and Python API give one
    line naming batch_ramp with the unseen-text words; before, each was refused as a bad count ('each phase's tokens
    a positive count' / 'each phase's batch a positive count')."""
    ask = {k: v for k, v in TRAIN.items() if not (job == "plan" and k == "mfu")}
    four_door_refusal(run_cli, client, tmp_path, job, route, {**ask, "batch_ramp": ramp}, "batch_ramp", REFUSAL)


@pytest.mark.parametrize("ramp", [LONG + "\x85", LONG + "\u2028", "\u2029" + LONG])
def test_a_long_ramp_ending_in_a_c1_control_or_a_line_separator_is_refused(run_cli, client, ramp):
    """str.strip() takes U+0085 / U+2028 / U+2029 as white space: before, they were trimmed off and the ramp answered
    (exit 0). Three doors (a YAML plan file reads these as line breaks, not as the value's characters)."""
    from gpuplan import InputError, TrainingInputs

    flags = [f"--{k.replace('_', '-')}={v}" for k, v in TRAIN.items() if k != "model"]
    code, out, err = run_cli("train", "--model", TRAIN["model"], *flags, f"--batch-ramp={ramp}")
    one_line_refusal(code, err, REFUSAL)
    assert err.startswith("error: batch_ramp: ") and out == "", err
    response = client.post("/api/training", json={**TRAIN, "batch_ramp": ramp})
    assert response.status_code == 422 and response.json()["field"] == "batch_ramp", response.text
    assert REFUSAL in response.json()["message"]
    with pytest.raises(InputError, match="batch_ramp: .*must not contain control characters"):
        TrainingInputs(**TRAIN, batch_ramp=ramp)


def test_short_and_long_ramps_say_the_same_words():
    """One rule at both lengths: the short text (schema.types.name) and the long text refuse U+202E alike."""
    from gpuplan import InputError, TrainingInputs

    said = []
    for ramp in ("1000000000:64\u202e", LONG + "\u202e"):
        with pytest.raises(InputError) as refused:
            TrainingInputs(**TRAIN, batch_ramp=ramp)
        said.append((refused.value.field, refused.value.expected))
    assert said == [("batch_ramp", REFUSAL)] * 2


def test_the_installed_command_exits_2_with_one_line():
    """Through the user's door: a `gpuplan train` process (python -m gpuplan) with a long ramp holding U+202E."""
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in TRAIN.items() if k != "model"]
    done = subprocess.run([sys.executable, "-m", "gpuplan", "train", "--model", TRAIN["model"], *flags,
                           f"--batch-ramp={LONG[:50]}\u202e{LONG[50:]}"], capture_output=True, text=True, timeout=60)
    one_line_refusal(done.returncode, done.stderr, REFUSAL)
    assert done.stderr.startswith("error: batch_ramp: ") and "\u202e" not in done.stderr and done.stdout == ""


# ---- errors.whole_or: the one "whole number or not" quoting (profile sweep / schema, plan's completes) ---------------

@pytest.mark.parametrize("value, quoted", [(180.0, "180"), (10.5, "10.5"), (2e11, "200000000000"),
                                           (float("inf"), "inf"), (7, "7")])
def test_a_whole_number_is_quoted_without_its_point(value, quoted):
    """180.0 is quoted 'got 180' (int), 10.5 as it is: the rule the three refusals each wrote out before."""
    from gpuplan.errors import InputError, whole_or

    assert repr(whole_or(value)) == quoted and type(whole_or(value)) is (int if quoted.isdigit() else float)
    assert str(InputError("sweep_budget", whole_or(value), "x")) == f"sweep_budget: got {quoted}; x"


# ---- core/comm/per_gpu_params.routed_per_gpu: routed experts per GPU, one expression ---------------------------------

def test_routed_experts_per_gpu_by_hand():
    """Mixtral 8x7B's routed experts: 32 layers x 8 experts x 3 matrices x 4,096 x 14,336 = 45,097,156,608 parameters
    (no expert biases). At ep 8, pp 2: etp 1 -> / 16 = 2,818,572,288; etp None (= tp 2) -> / 32 = 1,409,286,144.
    params_per_gpu is the dense part / (tp x pp) plus that, expert_share the routed part's share."""
    from gpuplan.catalog import load_model
    from gpuplan.core.comm.per_gpu_params import expert_share, params_per_gpu, routed_per_gpu
    from gpuplan.core.model.spec import count_parameters
    from gpuplan.core.time.step_settings import StepSettings

    spec = load_model("mixtral-8x7b")
    assert count_parameters(spec).routed_experts == 32 * 8 * 3 * 4096 * 14336 == 45_097_156_608
    assert routed_per_gpu(spec, tp=2, pp=2, ep=8, expert_tp=1) == 2_818_572_288
    assert routed_per_gpu(spec, tp=2, pp=2, ep=8, expert_tp=None) == 1_409_286_144
    dense = count_parameters(spec).total - 45_097_156_608
    held = params_per_gpu(spec, 2, 2, 8, 1)
    assert held == dense / 4 + 2_818_572_288
    share = expert_share(spec, StepSettings(seq_len=4096, dtype="bf16", expert_tp=1), 2, 2, 8)
    assert float(share) == pytest.approx(2_818_572_288 / held, rel=1e-15)


# ---- experts replicated over tp: time reads memory's fact (core.expert_layout) -----------------------------------------

@pytest.mark.parametrize("name", ["megatron", "generic", "torchtitan", "deepspeed", "hf"])
def test_time_and_memory_read_one_replication_fact(name):
    """DeepSpeed-MoE keeps whole experts on every TP rank (core.expert_layout: enable_expert_tensor_parallelism
    defaults to False); the others do not. Time (dp_costs.experts_replicated, from the step's dp_schedule) and memory
    (expert_layout_fields, from the framework) say the same for each framework."""
    from gpuplan.core.comm.dp_costs import experts_replicated
    from gpuplan.core.comm.dp_overlap import schedule_for
    from gpuplan.core.expert_layout import expert_layout_fields
    from gpuplan.core.time.step_settings import StepSettings

    time_says = experts_replicated(StepSettings(seq_len=4096, dtype="bf16", dp_schedule=schedule_for(name)))
    assert time_says == expert_layout_fields(name)["experts_replicated_over_tp"] == (name == "deepspeed")


def test_time_follows_the_framework_list_not_the_schedule_name(monkeypatch):
    """Before, time tested dp_schedule == 'deepspeed' itself: emptying memory's list left time's answer True. Now
    both follow core.expert_layout.EXPERTS_REPLICATED_OVER_TP; a list splitting the frameworks of one schedule
    (megatron and generic both run 'megatron') is refused rather than read one way."""
    import gpuplan.core.expert_layout as L
    from gpuplan.core.comm.dp_costs import experts_replicated
    from gpuplan.core.time.step_settings import StepSettings

    deepspeed = StepSettings(seq_len=4096, dtype="bf16", dp_schedule="deepspeed")
    assert experts_replicated(deepspeed)
    monkeypatch.setattr(L, "EXPERTS_REPLICATED_OVER_TP", ())
    assert not experts_replicated(deepspeed) and not L.expert_layout_fields("deepspeed")["experts_replicated_over_tp"]
    monkeypatch.setattr(L, "EXPERTS_REPLICATED_OVER_TP", ("megatron",))
    with pytest.raises(ValueError, match="share a data-parallel schedule"):
        experts_replicated(StepSettings(seq_len=4096, dtype="bf16", dp_schedule="megatron"))


# ---- --gpus as counts: one normalisation (schema.layout_rules.gpu_counts) for the etp rule and the data-group rule ---

def test_gpu_counts_and_the_etp_rule_read_one_list(run_cli):
    """gpu_counts: one count alone, plan's list as given, none as (). The etp rule reads it: etp 2 x ep 8 = 16
    divides no count of 24,40 (24 / 16 = 1.5, 40 / 16 = 2.5) and is refused naming etp; 24,32 has 32 = 2 x 16."""
    from helpers import field_refusal

    from gpuplan.schema.layout_rules import gpu_counts

    assert gpu_counts(64) == (64,) and gpu_counts((24, 40)) == (24, 40) and gpu_counts(None) == ()
    ask = ("plan", "mixtral-8x7b", "--gpu", "h100", "--etp", "2", "--ep", "8", "--tokens", "1T")
    field_refusal(run_cli(*ask, "--gpus", "24,40"), "etp", "x ep 8 = 16 must divide a pipeline stage's GPUs (24 / pp 1 "
                  "for every count given)")
    code, _, err = run_cli(*ask, "--gpus", "24,32")
    assert code == 0, err



def test_a_linear_phases_rule_reads_as_it_is_checked(run_cli):
    """H1 wave 21's found list: the refusal said 'FROM below TO' while '1B:64-64' is answered (as 1B:64, wave 18's
    choice: tests/test_hostile_w18.py test_1); the rule now reads 'FROM at most TO'."""
    code, out, err = run_cli("train", "--batch-ramp", "1B:128-64", "--mfu", "predicted", "--global-batch", "512")
    assert code == 2 and err.count("\n") == 1
    assert "batch_ramp: got '1B:128-64'; a linear phase does not shrink its batch: FROM-TO with FROM at most TO" in err


def test_a_fitted_band_is_clipped_to_the_bound_its_loader_reads():
    """Review s19 N6: calibrate.fit wrote value + 2 stderr unclipped while calibrate.model._check_band refuses a high
    end above the value's bound (1e3 for a ratio): a fit of 900 +- 100 (high 1,100) wrote a file its own loader
    refused. The band is clipped at the bound as the ratio's low end is at 0."""
    from gpuplan.calibrate import fit as F
    from gpuplan.calibrate.model import MAX_RATIO, _check_band

    solution = F._Solution(values={"k": 900.0}, stderr={"k": 100.0}, n=3)
    factor = F._factor("compute", solution, "k", ("t",))
    assert (factor.low, factor.high) == (700.0, MAX_RATIO)
    _check_band(factor, "compute")  # reads back


@pytest.mark.parametrize("token, value", [("100,", 100.0), ("7,282,", 7282.0), ("7,282", 7282.0), ("6,5", None),
                                          ("6,5,", None), ("7,0,0,0", None), ("1,,", None)])
def test_a_number_followed_by_a_field_comma_reads(token, value):
    """Review s19 N7: the log regexes' number pattern takes a comma that follows the number ('step 100, loss',
    'tps: 7,282, tflops'); wave 21's thousands rule refused '100,' where it had read 100. A single trailing comma is the
    field's separator; a decimal comma stays refused."""
    from gpuplan.adapters.training_logs import _num

    assert _num(token) == value
