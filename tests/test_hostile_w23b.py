"""Hostile inputs, wave 23 b (2026-12-07, helper H2): four refusals of the training jobs (jobs/training, jobs/budget,
jobs/plan) that broke the house rule (one line naming the input field and what would be valid, exit status 2, the
same at every door, numbers echoed as typed):

(1) a typed --days was echoed as a float: `plan llama-3.1-405b --tokens 1e18 --gpu h100 --days 36500` said
    'days: got 36500.0' (jobs/plan/deadline.py), `budget ... --days 36500 --eval-interval 1 --eval-iters 1000000` the
    same (jobs/training/timing.py), and a budget plan file's `days: 1` 'got 1.0'; each now quotes the whole number
    (errors.whole_or), as every refusal of a whole number does ('days: got 36500');
(2) `budget --model llama-3.1-405b --gpu h100 --tokens 1e18 --days 36500 --mfu 0.001` said 'at 0% MFU' (':.0%' of
    0.001); the MFU now reads with three significant digits (core.units.format_percent: 'at 0.1% MFU'), and so does
    --comm-allowance in the deadline refusals ('with the 0% communication allowance' for 0.001);
(3) jobs/budget/model.validate_settings (a BudgetSettings built directly) wrote its own bounds: 'failure_rate: got
    0.5; must be >= 1e-09 and <= 0.01' without the unit the schema's refusal gives, 'spot_preemptions ... must be 0 or
    more' (the schema takes at most 1,000), eval_interval's 'a whole number of optimizer steps from 1 to
    1,000,000,000', host_copy's 'at least 1e3 bytes/s (1 kB/s a node)' (it is a GPU's rate); each now says the
    schema's bound words (schema.bound_words), in the unit that door reads;
(4) a search where layouts exist but none fits memory (jobs/plan/search.search_on) named a field that is no input:
    'memory: got '594.4 GiB at best''; it now names --gpus where they were given (or the searched range stops short of
    a count that fits) and the model / --params where no count up to 64x the largest searched fits
    (jobs/plan/no_fit.py), the least memory a GPU kept in the words.
"""

from __future__ import annotations

import json
import re

import pytest
from helpers import field_refusal, four_door_refusal, web_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

H100_BF16 = 989.4e12  # H100 SXM5 dense BF16 FLOP/s (NVIDIA H100 datasheet; the catalog's h100 peak)
COMM = 1.2  # the 20% communication allowance the refusal names (jobs.training: the article's default)
NUMBER = r"[\d,]+(?:\.\d+)?"


def _needed_gpus(params: float, tokens: float, mfu: float, days: float) -> float:
    """GPUs to train 6 x params x tokens FLOPs (Kaplan et al. 2020's 6N per token) in ``days`` at ``mfu`` of the H100's
    dense BF16 peak with the 20% communication allowance: the budget's count before failures, to within the attention
    and LM-head FLOPs the exact count adds (under 1% at these sizes)."""
    return 6 * params * tokens * COMM / (H100_BF16 * mfu * days * 86400)


def _gpus_said(line: str) -> float:
    return float(re.search(r"the budget needs ([\d,]+) GPUs", line).group(1).replace(",", ""))


# ---- (1) days echoed as typed -------------------------------------------------------------------------------------

def test_1_plan_quotes_the_days_typed(run_cli):
    err = field_refusal(run_cli("plan", "llama-3.1-405b", "--tokens", "1e18", "--gpu", "h100", "--days", "36500"),
                        "days")
    assert re.fullmatch(rf"error: days: got 36500; no searched GPU count meets it with failures and checkpoints: the "
                        rf"fastest layout needs {NUMBER} days before failures and checkpoints, {NUMBER} days with "
                        rf"them, on {NUMBER} GPUs\n", err), err


def test_1_budget_quotes_the_days_typed_at_every_door(run_cli, client, tmp_path):
    ask = {"model": "llama-3.1-8b", "tokens": "1e18", "gpu": "h100", "days": 36500, "eval_interval": 1,
           "eval_iters": 1000000}
    line = four_door_refusal(run_cli, client, tmp_path, "budget", "budget", ask, "days", "days: got 36500;")
    assert re.fullmatch(rf"days: got 36500; no GPU count up to 10,000,000 meets it with the 20% communication "
                        rf"allowance, failures, checkpoints and in-loop evaluation \(more GPUs fail more often; the "
                        rf"fastest is about {NUMBER} days on {NUMBER} GPUs\); give more days or fewer tokens", line), line


def test_1_a_budget_plan_file_day_is_quoted_as_written(run_cli, tmp_path):
    plan = tmp_path / "budget.yaml"
    plan.write_text("model: llama-3.1-8b\ntokens: 1e18\ngpu: h100\ndays: 1\n", encoding="utf-8")
    err = field_refusal(run_cli("budget", str(plan)), f"{plan}: days")
    assert re.fullmatch(rf"error: {re.escape(str(plan))}: days: got 1; the budget needs {NUMBER} GPUs at 40% MFU "
                        r"before failures, more than the 10,000,000 the planner lays out; give more days, fewer "
                        r"tokens or --gpus\n", err), err
    # Llama 3.1 8B: 8.03e9 parameters (Meta's model card) -> 1.69e9 GPUs in one day at 40%
    assert _gpus_said(err) == pytest.approx(_needed_gpus(8.03e9, 1e18, 0.4, 1), rel=0.01)


# ---- (2) the MFU in the refusal is the one given ------------------------------------------------------------------

def test_2_a_small_mfu_is_said_as_given(run_cli, client):
    import gpuplan

    ask = {"model": "llama-3.1-405b", "gpu": "h100", "tokens": "1e18", "days": 36500, "mfu": 0.001}
    err = field_refusal(run_cli("budget", "--model", "llama-3.1-405b", "--gpu", "h100", "--tokens", "1e18", "--days",
                                "36500", "--mfu", "0.001"), "days")
    assert re.fullmatch(rf"error: days: got 36500; the budget needs {NUMBER} GPUs at 0.1% MFU before failures, more "
                        r"than the 10,000,000 the planner lays out; give more days, fewer tokens or --gpus\n", err), err
    # Llama 3.1 405B: 405.85e9 parameters (Meta's model card) -> 9.37e8 GPUs for 100 years at 0.1%
    assert _gpus_said(err) == pytest.approx(_needed_gpus(405.85e9, 1e18, 0.001, 36500), rel=0.01)
    assert f"error: {web_refusal(client.post('/api/budget', json=ask), 'days')}\n" == err
    with pytest.raises(gpuplan.InputError) as api:
        gpuplan.estimate_budget(gpuplan.BudgetInputs(**ask))
    assert f"error: {api.value}\n" == err
    err = field_refusal(run_cli("budget", "--model", "llama-3.1-405b", "--gpu", "h100", "--tokens", "1e18", "--days",
                                "36500", "--mfu", "0.0015"), "days")
    assert " at 0.15% MFU before failures" in err  # three significant digits, not '0%' nor a rounded '0.2%'
    err = field_refusal(run_cli("budget", "llama-3.1-8b", "--tokens", "1e18", "--gpu", "h100", "--days", "36500",
                                "--eval-interval", "1", "--eval-iters", "1000000", "--comm-allowance", "0.001"), "days")
    assert " meets it with the 0.1% communication allowance, " in err, err  # the allowance given, not '0%'


# ---- (3) BudgetSettings' bounds in the schema's words -------------------------------------------------------------

@pytest.mark.parametrize("setting, flag, value, words", [
    ("failure_rate", "failure-rate", 0.5, "must be >= 1e-09 and <= 0.01 interruptions a GPU-hour"),
    ("failure_rate", "failure-rate", 1e-300, "must be >= 1e-09 and <= 0.01 interruptions a GPU-hour"),
    ("spot_preemptions", "spot-preemption", 1001, "must be >= 0 and <= 1000 reclaims a node-month"),
    ("spot_preemptions", "spot-preemption", -1, "must be >= 0 and <= 1000 reclaims a node-month"),
    ("eval_interval", "eval-interval", 2e9, "must be >= 1 and <= 1000000000 optimizer steps"),
])
def test_3_budget_settings_say_the_schemas_bound(run_cli, setting, flag, value, words):
    from gpuplan.errors import InputError
    from gpuplan.jobs.budget.model import BudgetSettings, validate_settings

    with pytest.raises(InputError) as caught:
        validate_settings(BudgetSettings(**{setting: value}))
    assert str(caught.value) == f"{setting}: got {value!r}; {words}"
    typed = f"{value:g}" if isinstance(value, float) else str(value)
    err = field_refusal(run_cli("budget", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "64", "--tokens", "1T",
                                f"--{flag}={typed}"), flag.replace("-", "_"))
    assert err.endswith(f"; {words}\n"), err  # the CLI's (schema) refusal: the same words


def test_3_the_settings_rates_are_said_in_their_own_unit():
    """BudgetSettings reads the storage and host-copy rates in bytes/s (the schema's GB/s x 1e9): the schema's bounds,
    1e-6 to 1e6 GB/s, in that unit, a node's for storage and a GPU's for the host copy."""
    from gpuplan.errors import InputError
    from gpuplan.jobs.budget.model import BudgetSettings, validate_settings

    for setting, value, per in (("host_copy", 1.0, "a GPU"), ("storage_read", 1e16, "a node"),
                                ("storage_write", 999.0, "a node")):
        with pytest.raises(InputError) as caught:
            validate_settings(BudgetSettings(**{setting: value}))
        assert str(caught.value) == f"{setting}: got {value!r}; must be >= 1000 and <= 1e+15 bytes/s {per}"
    with pytest.raises(InputError) as caught:
        validate_settings(BudgetSettings(eval_interval=10, eval_iters=1.5))
    assert str(caught.value) == "eval_iters: got 1.5; must be a whole number"  # the schema's words (T.count)


# ---- (4) no layout fits: the input that would fix it --------------------------------------------------------------

def _deep_config(tmp_path, hidden: int, ffn: int, heads: int) -> str:
    """A Llama config.json of 10,000 layers (hidden ``hidden``, ``ffn`` intermediate, ``heads`` heads, 8 KV heads)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden, "intermediate_size": ffn,
        "num_attention_heads": heads, "num_key_value_heads": 8, "num_hidden_layers": 10000, "vocab_size": 128256,
        "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}), encoding="utf-8")
    return str(path)


FITS_NOT = (r"no layout fits NVIDIA H100 80GB SXM5 \(79.65 GiB\) with the 5% margin on {gpus} GPUs? \(at best "
            rf"{NUMBER} GiB a GPU\)")


def test_4_given_gpus_are_named_at_every_door(run_cli, tmp_path):
    """16384 wide, 10,000 deep (~3.2e13 parameters): 16 B a parameter of model states is far past 80 GiB on 1,024
    GPUs, so the refusal names --gpus (as typed) and the count that fits, never 'memory'."""
    import gpuplan

    model = _deep_config(tmp_path, 16384, 53248, 128)
    err = field_refusal(run_cli("plan", "--model", model, "--tokens", "1e18", "--gpu", "h100", "--gpus", "1024"),
                        "gpus")
    assert re.fullmatch(r"error: gpus: got 1024; " + FITS_NOT.format(gpus="1,024") + r"; the smallest common cluster "
                        r"size that fits is ([\d,]+) GPUs \(--gpus (\d+)\); or use more memory per GPU or a shorter "
                        r"sequence\n", err), err
    plan = tmp_path / "ask.yaml"
    plan.write_text(f"model: {model}\ntokens: 1e18\ngpu: h100\ngpus: 1024\n", encoding="utf-8")
    assert field_refusal(run_cli("plan", str(plan)), f"{plan}: gpus") == err.replace("error: ", f"error: {plan}: ")
    with pytest.raises(gpuplan.InputError) as api:
        gpuplan.plan_report(gpuplan.PlanInputs(model=model, tokens="1e18", gpu="h100", gpus="1024"))
    assert f"error: {api.value}\n" == err
    ranged = field_refusal(run_cli("plan", "--model", model, "--tokens", "1e18", "--gpu", "h100", "--gpus",
                                   "512-1024"), "gpus")
    assert ranged.startswith("error: gpus: got '512-1024'; no layout fits"), ranged  # the range as typed


def test_4_with_no_count_that_fits_the_size_is_named_at_every_door(run_cli, client, tmp_path):
    """1e15 parameters: 16 B each of model states over 131,072 x 64 GPUs is ~1.9 TB a GPU, more than any H100 holds:
    the refusal names --params as typed (the model is what is too large), nothing about memory as a field."""
    import gpuplan

    ask = {"params": "1e15", "tokens": "1e18", "gpu": "h100"}
    err = field_refusal(run_cli("plan", "--params", "1e15", "--tokens", "1e18", "--gpu", "h100"), "params")
    assert re.fullmatch(r"error: params: got '1e15'; " + FITS_NOT.format(gpus="131,072") + r", nor on a common "
                        r"cluster size up to 64x as many; give fewer parameters, a GPU with more memory \(--gpu\) or a "
                        r"shorter sequence \(--seq-len\)\n", err), err
    plan = tmp_path / "ask.yaml"
    plan.write_text("".join(f"{k}: {v}\n" for k, v in ask.items()), encoding="utf-8")
    # YAML reads 1e15 as a number: quoted as the number read, whole (errors.whole_or), as a plan file's number is
    assert field_refusal(run_cli("plan", str(plan)), f"{plan}: params") == err.replace(
        "error: params: got '1e15'", f"error: {plan}: params: got 1000000000000000")
    assert f"error: {web_refusal(client.post('/api/plan', json=ask), 'params')}\n" == err
    with pytest.raises(gpuplan.InputError) as api:
        gpuplan.plan_report(gpuplan.PlanInputs(**ask))
    assert f"error: {api.value}\n" == err


def test_4_a_rerun_refused_for_memory_still_says_memory():
    """jobs.plan.offer words a re-run's refusal by its field; a no-fit refusal names the input to change, so the offer
    says its cause ('was refused on memory'), as it did when the field was 'memory'."""
    from gpuplan.jobs.plan.no_fit import NoFitInMemory
    from gpuplan.jobs.plan.offer import NoCompletion, answering_offer, offer_words

    first = NoCompletion("global_batch_tokens", 200, f"no run completes ({offer_words('100')}, or fewer GPUs)", "100")

    def rerun(batch):
        raise NoFitInMemory("gpus", 8, "no layout fits")

    with pytest.raises(NoCompletion) as caught:
        answering_offer(lambda: (_ for _ in ()).throw(first), rerun)
    assert "(100 tokens a step) was refused on memory" in str(caught.value), caught.value
