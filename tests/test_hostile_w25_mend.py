"""Mend of hostile wave 25 (session 23, helper H2, after reviewer R2). Each case failed before its fix:

(1) a trainer_state.json written by transformers 5.19+ for a run resumed from a checkpoint, or stopped early, was
    refused (train_runtime x train_steps_per_second was required to be max_steps: 4.x's speed_metrics divides
    max_steps by the runtime, 5.19 on the steps the train() call ran, global_step - _initial_global_step, 5.25.0
    trainer.py L2044-2052; 5.18.0 has no _initial_global_step); a 5.19+ resumed file now calibrates at
    train_runtime / the steps since the resume; a pre-5.19 resumed file (whose rates cannot tell) is refused naming
    train_loss where its losses show the resume (4.57.1 trainer.py L2815-2817: the call's loss over global_step),
    else calibrates with a note saying what it cannot tell (it calibrated 2x off, silently);
(2) - (4): see the cases below.
"""

from __future__ import annotations

import json

import pytest
from helpers import field_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

HF_FLAGS = ("--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--seq-len", "512")


def _state(runtime: float, steps_per_s: float, global_step: int, max_steps: int, losses=(), evals=(),
           train_loss: float = 2.0) -> dict:
    """A trainer_state.json as the Trainer saves it: loss entries, evaluation entries, the final speed_metrics entry
    (train_samples_per_second = 8 sequences a step x steps/s)."""
    history = [{"loss": loss, "step": step} for step, loss in losses]
    history += [{"eval_loss": 1.0, "eval_runtime": seconds, "step": step} for step, seconds in evals]
    history.sort(key=lambda e: e["step"])
    history.append({"step": global_step, "train_runtime": runtime, "train_steps_per_second": steps_per_s,
                    "train_samples_per_second": round(8 * steps_per_s, 3), "train_loss": train_loss, "epoch": 1.0})
    return {"log_history": history, "global_step": global_step, "max_steps": max_steps}


def _parse(state: dict):
    from gpuplan.adapters.training_logs import parse_hf_entries

    log = parse_hf_entries(state["log_history"], "s.json", state["global_step"], state["max_steps"])
    return log.records[0].step_time_s, log.meta.get("note", "")


def _calibrate(run_cli, tmp_path, state: dict):
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps(state), encoding="utf-8")
    return run_cli("calibrate", str(path), *HF_FLAGS), str(path)


# ---- (1) the Trainer's step counts ----------------------------------------------------------------------------------

def test_1_a_519_resumed_run_is_timed_over_the_steps_since_the_resume(run_cli, tmp_path):
    # R2's file: 1,000 steps run since a resume at 1,000, 1,000 s: 1.0 steps/s (5.19+), 1.0 s a step (was refused)
    state = _state(1000.0, 1.0, 2000, 2000, losses=[(1000, 2.1)])
    assert _parse(state) == (pytest.approx(1.0, rel=1e-9), "s.json: timed over the 1,000 steps after step 1,000 (a "
                             "run resumed from a checkpoint: train_runtime x train_steps_per_second)")
    (code, out, err), path = _calibrate(run_cli, tmp_path, state)
    assert code == 0 and f"{path}: timed over the 1,000 steps after step 1,000" in out, err


def test_1_its_evaluations_before_the_resume_are_not_taken_from_its_runtime():
    # evaluations of 50 s at 500, 1,000 (before the resume at 1,000) and 1,500, 2,000 (after): 1,000 steps x 1.0 s +
    # 2 x 50 s = 1,100 s; round(1,000 / 1,100, 3) = 0.909 steps/s; step time (1,100 - 100) / 1,000 = 1.0 s
    evals = [(500, 50.0), (1000, 50.0), (1500, 50.0), (2000, 50.0)]
    step, _ = _parse(_state(1100.0, 0.909, 2000, 2000, evals=evals))
    assert step == pytest.approx(1.0, rel=1e-9)


def test_1_an_early_stopped_run_of_either_writer_is_timed_over_its_steps():
    # 1,200 of 2,000 steps in 1,200 s: 5.19+ writes 1,200 / 1,200 = 1.0 steps/s (was refused), 4.x 2,000 / 1,200 =
    # 1.667; both are 1.0 s a step; only the 4.x file could also be a resumed run, and says so
    assert _parse(_state(1200.0, 1.0, 1200, 2000, losses=[(600, 2.1)])) == (pytest.approx(1.0, rel=1e-9), "")
    step, note = _parse(_state(1200.0, 1.667, 1200, 2000, losses=[(600, 2.1)]))
    assert step == pytest.approx(1.0, rel=1e-9) and note.startswith("s.json: timed as 1,200 steps from step 0; "
                                                                     "transformers before 5.19 writes the same rates")


def _decreasing(first: int = 100) -> list[tuple[int, float]]:
    """A loss logged every 100 steps to 2,000, each the interval's mean of a loss 3 - 0.001 x step: 3 - 0.001 x (s -
    50) at step s. Over all 2,000 steps the mean is 2.0; over steps 1,001-2,000, 1.5."""
    return [(s, 3.0 - 0.001 * (s - 50)) for s in range(first, 2001, 100)]


def test_1_a_pre_519_resumed_run_whose_losses_show_it_is_refused(run_cli, tmp_path):
    # resumed at 1,000 under 4.x: 1,000 steps in 1,000 s, steps/s written 2,000 / 1,000 = 2.0; train_loss = the
    # call's 1,000 steps x 1.5 / global_step 2,000 = 0.75, 37.5 % of the logged mean 2.0 (it calibrated 0.5 s a step)
    state = _state(1000.0, 2.0, 2000, 2000, losses=_decreasing(), train_loss=0.75)
    line = field_refusal(_calibrate(run_cli, tmp_path, state)[0], "train_loss")
    assert line.startswith("error: train_loss: got 0.75; in ") and (
        ": 38% of the mean loss logged over steps 1-2,000; transformers before 5.19 divides the loss of the steps one "
        "train() call ran by global_step") in line, line


def test_1_the_same_run_not_resumed_is_answered_without_a_note():
    # 2,000 steps in 2,000 s, train_loss 2.0 = the logged mean: 1.0 s a step
    assert _parse(_state(2000.0, 1.0, 2000, 2000, losses=_decreasing())) == (pytest.approx(1.0, rel=1e-9), "")


def test_1_where_the_losses_cannot_say_the_answer_says_so():
    # R2's 4.x resumed file: one loss at step 1,000 of 2,000 logs too little to compare train_loss with
    step, note = _parse(_state(1000.0, 2.0, 2000, 2000, losses=[(1000, 2.1)]))
    assert step == pytest.approx(0.5, rel=1e-9) and "(the step time would be train_runtime / those steps)" in note


@pytest.mark.parametrize("steps_per_s, where", [(1.6, "between"), (2.5, "above both")])
def test_1_a_rate_no_trainer_writes_is_refused(run_cli, tmp_path, steps_per_s, where):
    # 1,000 s x 1.6 = 1,600 steps: neither max_steps 2,000 (before 5.19) nor at most global_step 1,200 (5.19 on)
    line = field_refusal(_calibrate(run_cli, tmp_path, _state(1000.0, steps_per_s, 1200, 2000))[0],
                         "train_steps_per_second")
    assert f"steps, {where} global_step 1,200 and max_steps 2,000; the Trainer divides max_steps" in line, line


# ---- (2) infer's default context under vLLM ------------------------------------------------------------------------

TINY = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 8, "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 4096}


@pytest.mark.parametrize("extra, context, source", [
    ({"model_max_length": 2048}, 2048, "model_max_length"),
    ({"seq_length": 1024}, 1024, "seq_length"),
    ({"rope_scaling": {"type": "linear", "factor": 0.25}}, 1024, "max_position_embeddings x rope_scaling factor 0.25"),
])
def test_2_the_default_context_is_vllms_length_where_it_is_below_4096(run_json, client, tmp_path, extra, context,
                                                                        source):
    # min(4,096, 4,096 positions) = 4,096 was refused 'context: got 4096' under vLLM, --context never given
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps({**TINY, **extra}), encoding="utf-8")
    answer = run_json("infer", "--model", str(path), "--gpu", "h100", "--no-search")
    note = (f"context {context:,} (the default, --context not given): vLLM's max_model_len for tiny, from "
            f"{source}, below min(4,096, its 4,096 positions)")
    assert answer["inputs"]["context"] == context and note in answer["notes"], answer["notes"]
    web = client.post("/api/inference", json={"config": {**TINY, **extra}, "gpu": "h100", "search": False})
    assert web.status_code == 200, web.text[:300]
    assert web.json()["inputs"]["context"] == context  # the body's config is named by its type
    assert note.replace("for tiny", "for llama") in web.json()["notes"], web.json()["notes"]
    # another engine reads the positions: 4,096
    sglang = run_json("infer", "--model", str(path), "--gpu", "h100", "--engine", "sglang", "--no-search")
    assert sglang["inputs"]["context"] == 4096


# ---- (3) a config with no length key: its class's default -----------------------------------------------------------

# the class position defaults against the installed classes: tests/test_class_shapes.py (CLASS_DEFAULTS)


def test_3_falcon_7b_past_falcon_configs_2048_is_refused_under_vllm(run_cli):
    # tiiuae/falcon-7b's config.json states no length: vLLM builds FalconConfig's 2,048 (was answered with a note)
    line = field_refusal(run_cli("infer", "falcon-7b", "--gpu", "h100", "--context", "4096", "--no-search"), "context")
    assert line.startswith("error: context: got 4096; must be at most 2,048: vLLM refuses a max_model_len above "
                           "falcon-7b's 2,048 (FalconConfig's default max_position_embeddings: config.json states "
                           "none)"), line


def test_3_a_qwen2_config_with_no_length_reads_qwen2configs_32768(run_json, tmp_path):
    # a qwen2 config.json stating no length: Qwen2Config builds 32,768 positions (was 'maximum of 2,048' at 32,768).
    # The catalog's qwen2.5-1.5b stood for it until s24 (helper PL), when its config gained the base config.json's
    # 131072; the catalog entry's config less that key is the same ask
    from gpuplan.catalog import model_entry

    config = {k: v for k, v in model_entry("qwen2.5-1.5b")["config"].items() if k != "max_position_embeddings"}
    path = tmp_path / "qwen2.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    answer = run_json("infer", "--model", str(path), "--gpu", "h100", "--context", "32768", "--no-search")
    assert not any("exceeds the model's maximum" in note for note in answer["notes"]), answer["notes"]
    assert "max_position_embeddings left out: Qwen2Config's default 32,768, as transformers builds it" in \
        answer["notes"]
    assert answer["inputs"]["context"] == 32768
