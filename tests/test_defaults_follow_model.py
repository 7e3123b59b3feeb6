"""Defaults that follow the model, and Python API refusals that quote what the caller passed.

* A sequence length left to its 4,096-token default follows a learned position table shorter than it (GPT-2's
  n_positions 1,024: schema.model_fields.ModelFields.follow_model), through every door (CLI, plan file, web API,
  Python API), with a note; a typed length past the table stays refused; RoPE models keep the default.
* The Python API quotes the text passed (`days='90min'`), not the value it became (0.0625 days), for checks at
  construction (JobInputs) and in the estimate (the estimates gpuplan exports: schema.base.as_passed).
"""

import pytest

from helpers import one_line_refusal

NOTE = ("sequence length 1,024: gpt2's learned position table has 1,024 rows, fewer than the 4,096-token default "
        "(--seq-len sets it, up to 1,024)")


def test_plan_gpt2_without_seq_len_answers_at_its_1024_positions(run_cli, run_json):
    """Refused before ('seq_len: got 4096; is past gpt2's 1,024 learned positions'): now planned at 1,024, said so."""
    report = run_json("plan", "gpt2", "--gpus", "8", "--gpu", "h100", "--micro-batch", "8", "--tp", "1")
    assert NOTE in report["notes"]
    typed = run_json("plan", "gpt2", "--gpus", "8", "--gpu", "h100", "--micro-batch", "8", "--tp", "1",
                     "--seq-len", "1024")
    assert typed["results"] == report["results"]  # the same plan as --seq-len 1024 typed
    assert NOTE not in typed["notes"]


@pytest.mark.parametrize("typed", ["2048", "4096", "4K"])
def test_a_typed_length_past_the_table_stays_refused(run_cli, typed):
    code, _, err = run_cli("plan", "gpt2", "--gpus", "8", "--gpu", "h100", "--seq-len", typed)
    one_line_refusal(code, err, "seq_len: got ")
    assert "is past gpt2's 1,024 learned positions" in err and "at most 1,024" in err


def test_train_memory_and_a_plan_file(run_json, tmp_path):
    train = run_json("train", "gpt2", "--gpus", "8", "--gpu", "h100", "--tokens", "10B")
    assert NOTE in train["notes"]
    memory = run_json("memory", "gpt2", "--gpu", "h100")
    assert NOTE in memory["notes"]
    plan_file = tmp_path / "gpt2.yaml"
    plan_file.write_text("model: gpt2\ngpu: h100\n", encoding="utf-8")
    assert run_json("memory", str(plan_file))["results"] == memory["results"]


def test_python_api_and_web_api():
    from gpuplan import MemoryInputs, PlanInputs, TrainingInputs, estimate_memory
    from gpuplan.web import service

    for schema in (PlanInputs, TrainingInputs, MemoryInputs):
        inputs = schema(model="gpt2", gpu="h100")
        assert inputs.seq_len == 1024 and "seq_len" not in inputs.given  # still the default, the model's
    assert PlanInputs.parse({"model": "gpt2"}).seq_len == 1024
    assert PlanInputs(model="gpt2").replace(gpus=8).seq_len == 1024
    assert NOTE in estimate_memory(MemoryInputs(model="gpt2", gpu="h100")).notes
    assert NOTE in service.estimate("memory", {"model": "gpt2", "gpu": "h100"})["notes"]


def test_checks_read_the_length_the_model_set():
    """A cross-field check runs after the default followed the model: 2,048 tokens of global batch hold two
    1,024-token sequences (refused against 4,096 before); 512 hold none."""
    from gpuplan import InputError, PlanInputs

    assert PlanInputs(model="gpt2", global_batch_tokens=2048).seq_len == 1024
    with pytest.raises(InputError, match=r"must hold at least one sequence of --seq-len 1,024 tokens"):
        PlanInputs(model="gpt2", global_batch_tokens=512)


@pytest.mark.parametrize("model", ["llama-3.1-8b", None])
def test_rope_models_and_bare_counts_keep_the_default(model):
    """llama-3.1-8b's positions (131,072) are past the default: kept; a bare parameter count has no model to
    follow. (falcon-7b's max_position_embeddings of 2,048 is followed since wave 16: tests/test_seq_default_w16.py.)"""
    from gpuplan import PlanInputs

    inputs = PlanInputs(model=model) if model else PlanInputs(params="7B")
    assert inputs.seq_len == 4096
    assert not any(n.startswith("sequence length") for n in inputs.spec().notes)


def test_an_unknown_model_is_refused_where_it_always_was():
    """follow_model reads the model at construction; one it cannot read is refused by the job, as before."""
    from gpuplan import InputError, PlanInputs, plan_report

    inputs = PlanInputs(model="no-such-model-xyz")
    assert inputs.seq_len == 4096
    with pytest.raises(InputError, match=r"^model: got 'no-such-model-xyz'; not in the catalog"):
        plan_report(inputs)


# 3T tokens (was 2T): since 0d4052f (Megatron's DP syncs chunk by chunk under the interleaved schedule) 2T meets 90 min
# on 122,880 H100s (dp7680 tp2 pp4 vpp8 cp2, 1.49 h with failures); 3T needs 2.19 h with them at the fastest layout
DEADLINE = dict(model="llama-3.1-8b", tokens="3T", gpu="h100", days="90min")


def test_api_refusal_quotes_the_text_passed_in_the_estimate():
    """plan_report refused `days='90min'` quoting 0.0625 (the CLI and web doors already quoted '90min')."""
    from gpuplan import InputError, PlanInputs, plan_report

    for inputs in (PlanInputs(**DEADLINE), dict(DEADLINE)):
        with pytest.raises(InputError) as caught:
            plan_report(inputs)
        assert str(caught.value).startswith("days: got '90min'; no searched GPU count meets it"), caught.value
        assert caught.value.value == "90min"


def test_a_changed_field_quotes_its_new_value():
    """model_copy(update=...) replaces the value the text became: the refusal quotes the value given then."""
    from gpuplan import InputError, PlanInputs, plan_report

    with pytest.raises(InputError, match=r"^days: got 0\.06; "):
        plan_report(PlanInputs(**DEADLINE).model_copy(update={"days": 0.06}))
    kept = PlanInputs(**DEADLINE).replace(tokens="4T")  # days untouched: its text kept
    with pytest.raises(InputError, match=r"^days: got '90min'; "):
        plan_report(kept)


def test_a_changed_field_given_as_text_quotes_that_text():
    """replace / model_copy(update=...) with text: the refusal quotes the new text (final read: the copy kept the
    other fields' text and dropped the change's, so days='90min' given in the update was refused as 0.0625)."""
    from gpuplan import InputError, PlanInputs, plan_report

    week = PlanInputs(**(DEADLINE | {"days": "7"}))
    for changed in (week.replace(days="90min"), week.model_copy(update={"days": "90min"})):
        with pytest.raises(InputError, match=r"^days: got '90min'; "):
            plan_report(changed)


@pytest.mark.parametrize("old, new, seq_len", [("gpt2", "llama-2-7b", 4096), ("llama-2-7b", "gpt2", 1024)])
def test_model_copy_follows_the_new_model(old, new, seq_len):
    """model_copy(update=...) is checked again as replace is (pydantic's own does not validate): gpt2 -> llama-2-7b
    kept gpt2's followed 1,024 silently, llama-2-7b -> gpt2 was refused quoting 'seq_len: got 4096', a value the
    caller never typed."""
    from gpuplan import MemoryInputs

    copy = MemoryInputs(model=old).model_copy(update={"model": new})
    assert copy.seq_len == seq_len == MemoryInputs(model=old).replace(model=new).seq_len
    assert "seq_len" not in copy.given and copy == MemoryInputs(model=new)


def test_a_plain_model_copy_keeps_the_text_passed():
    """model_copy() without changes, copy.copy and copy.deepcopy (review wave7 r4 NOTE 10): the refusal still quotes
    '90min', not 0.0625."""
    from gpuplan import InputError, PlanInputs, plan_report

    import copy

    for copied in (PlanInputs(**DEADLINE).model_copy(), copy.copy(PlanInputs(**DEADLINE)),
                   copy.deepcopy(PlanInputs(**DEADLINE))):
        with pytest.raises(InputError, match=r"^days: got '90min'; "):
            plan_report(copied)


def test_api_refusal_quotes_the_text_passed_at_construction():
    """A cross-field check at construction quoted the converted count: '2K' tokens as 2000.0."""
    from gpuplan import InputError, PlanInputs

    with pytest.raises(InputError) as caught:
        PlanInputs(params="7B", global_batch_tokens="2K")
    assert str(caught.value) == ("global_batch_tokens: got '2K'; must hold at least one sequence of --seq-len "
                                 "4,096 tokens")
    with pytest.raises(InputError, match=r"^global_batch_tokens: got '2K'; "):
        PlanInputs.parse({"params": "7B", "global_batch_tokens": "2K"})


def test_the_cli_quotes_as_before(run_cli):
    code, _, err = run_cli("plan", "llama-3.1-8b", "--tokens", "3T", "--gpu", "h100", "--days", "90min")  # 3T: DEADLINE
    one_line_refusal(code, err, "days: got '90min'; no searched GPU count meets it")


def test_measure_and_profile_follow_the_table_too():
    """The jobs that build the model for real (profile.schema.RealModelInputs) read the same rule: `measure gpt2`
    and `profile gpt2` were refused at the default; a typed 2,048 still is."""
    from gpuplan import InputError
    from gpuplan.jobs.measure.estimate import sequence_note
    from gpuplan.jobs.measure.schema import MeasureInputs
    from gpuplan.profile.schema import TrialInputs

    for schema in (MeasureInputs, TrialInputs):
        inputs = schema(model="gpt2")
        assert inputs.seq_len == 1024 and NOTE in inputs.spec().notes
        assert sequence_note(inputs, inputs.spec()) == NOTE
        with pytest.raises(InputError, match=r"^seq_len: got 2048; is past gpt2's 1,024 learned positions"):
            schema(model="gpt2", seq_len=2048).spec()
