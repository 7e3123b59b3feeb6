"""A --seq-len left to its default is min(4,096, the model's position limit) at every training door (review w16 R7
N7: `plan palm-540b` and `plan pythia-70m` planned 4,096-token sequences on 2,048-position models, with no note).
The limit (schema.model_fields.position_limit) is a learned position table (GPT-2's n_positions 1,024: followed
since wave 6) or else max_position_embeddings (PaLM's 2,048, arXiv:2204.02311 Sec. 5: "sequence length of 2048");
a typed --seq-len is kept (RoPE models may run past their trained length), and the answer says why in a note and
in the sequence-length assumption. No validate row moves (every row on such a model states its seq_len)."""

import pytest

from gpuplan import BudgetInputs, MemoryInputs, PlanInputs, TrainingInputs, estimate_memory, estimate_training

SCHEMAS = (TrainingInputs, PlanInputs, BudgetInputs, MemoryInputs)


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.__name__)
@pytest.mark.parametrize("model, seq_len", [("gpt2", 1024), ("palm-540b", 2048), ("pythia-70m", 2048),
                                            ("llama-3.1-8b", 4096)])
def test_the_default_is_the_models_limit_where_that_is_shorter(schema, model, seq_len):
    inputs = schema(model=model)
    assert inputs.seq_len == seq_len and "seq_len" not in inputs.given


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.__name__)
def test_a_typed_length_is_kept(schema):
    """PaLM at 4,096 typed: planned as typed (a RoPE model has no table to run out of)."""
    assert schema(model="palm-540b", seq_len=4096).seq_len == 4096


def test_the_answer_says_so():
    """The note (spec notes: train, plan, memory, measure answers) and the assumption's source (train / budget)."""
    note = ("sequence length 2,048: pythia-70m's max_position_embeddings is 2,048, below the 4,096-token default "
            "(--seq-len sets it; a longer one is planned as typed)")
    assert note in estimate_memory(MemoryInputs(model="pythia-70m", gpu="h100")).notes
    assert note not in estimate_memory(MemoryInputs(model="pythia-70m", gpu="h100", seq_len=2048)).notes
    assert not any(n.startswith("sequence length") for n in MemoryInputs(model="llama-3.1-8b").spec().notes)
    train = estimate_training(TrainingInputs(model="pythia-70m", gpu="h100", gpus=8, tokens="1B"))
    assert note in train.notes
    line = train.assumption("seq_len")
    assert line.value == 2048 and line.source.startswith("the model's position limit (learned table or "
                                                          "max_position_embeddings): the 4096 default is past it")


def test_the_web_door_reads_the_same_limit():
    """web.models.door_position_limit (a catalog entry or the pasted config only): the same 2,048 and note."""
    from gpuplan.web import service

    answer = service.estimate("memory", {"model": "palm-540b", "gpu": "tpu-v4"})
    assert any(n.startswith("sequence length 2,048: palm-540b's max_position_embeddings is 2,048") for n in
               answer["notes"])
