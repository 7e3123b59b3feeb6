"""Session 25, helper X1: --compare reads a list by plan --gpus' rule (an empty entry refused; session 26: by
schema.list_field, which names the entry's position and refuses a repeat, tests/test_list_field_doors_s26.py),
and the job inputs' inherited pydantic doors (model_validate, model_validate_json) refuse as the constructors do:
one InputError naming the field, a JSON key given twice refused as the web API refuses it."""

import pytest
from helpers import four_door_refusal, web_refusal

import gpuplan
from gpuplan import InputError
EMPTY_ENTRY = "is empty; give GPU names separated by commas, e.g. h100,b200"

# ---- (1) --compare with an empty entry: refused at every door, in plan --gpus '8,,16''s words ------------------------


@pytest.mark.parametrize("text, position", [("a100,", "2 of 2"), ("a100,,h100", "2 of 3"), ("a100, ,h100", "2 of 3")])
def test_compare_with_an_empty_entry_is_refused_at_every_door(run_cli, client, tmp_path, text, position):
    """`memory --compare a100,` dropped the empty entry silently (the verdict table showed a100 alone)."""
    line = four_door_refusal(run_cli, client, tmp_path, "memory", "memory", {"model": "llama-3.1-8b", "compare": text},
                             "compare", EMPTY_ENTRY)
    assert line == f"compare: got {text!r}; entry {position} is empty; give GPU names separated by commas, e.g. " \
                   "h100,b200"


def test_compare_as_a_list_with_an_empty_entry_is_refused(client):
    """A JSON / Python list with an empty name is the same empty entry."""
    web_refusal(client.post("/api/memory", json={"model": "llama-3.1-8b", "compare": ["a100", ""]}), "compare",
                EMPTY_ENTRY)
    with pytest.raises(InputError, match="entry 2 of 2 is empty"):
        gpuplan.MemoryInputs(model="llama-3.1-8b", compare=["a100", " "])


def test_compare_given_a_name_twice_is_refused_as_gpus_and_sections_are():
    """Session 25 kept a repeat once (one verdict row a GPU), as plan --gpus 8,8 and report --sections budget,budget
    kept theirs; session 26 refuses all three (schema.list_field: nothing silently accepted), naming the name."""
    with pytest.raises(InputError) as twice:
        gpuplan.MemoryInputs(model="llama-3.1-8b", gpu="h100", compare="a100,a100")
    assert str(twice.value) == "compare: got 'a100,a100'; 'a100' is given twice (entries 1 and 2); give each once: " \
                               "GPU names separated by commas, e.g. h100,b200"


# ---- (2) model_validate / model_validate_json: InputError in the project's words --------------------------------------

SCHEMAS = ["TrainingInputs", "PlanInputs", "MemoryInputs", "BudgetInputs", "InferenceInputs"]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_model_validate_refuses_as_the_constructor_does(schema):
    """It raised pydantic's ValidationError (a multi-line message, no field named first)."""
    cls = getattr(gpuplan, schema)
    with pytest.raises(InputError) as direct:
        cls(model="llama-3.1-8b", gpus="lots")
    with pytest.raises(InputError) as validated:
        cls.model_validate({"model": "llama-3.1-8b", "gpus": "lots"})
    assert str(validated.value) == str(direct.value) and str(direct.value).startswith("gpus: got 'lots'; ")
    with pytest.raises(InputError, match="^inputs: got 'list'; expected a mapping"):
        cls.model_validate([("model", "llama-3.1-8b")])
    assert cls.model_validate({"model": "llama-3.1-8b"}) == cls(model="llama-3.1-8b")


@pytest.mark.parametrize("schema", SCHEMAS)
def test_model_validate_json_refuses_a_key_given_twice_as_the_web_does(schema):
    """{"gpus": 8, "gpus": 16} was read as 16 (pydantic keeps the last); the web API refuses it."""
    cls = getattr(gpuplan, schema)
    with pytest.raises(InputError) as twice:
        cls.model_validate_json('{"model": "llama-3.1-8b", "gpus": 8, "gpus": 16}')
    assert str(twice.value) == "gpus: got 'twice'; is given more than once in the JSON; give each field once"
    with pytest.raises(InputError, match="^gpus: got 'lots'; "):
        cls.model_validate_json(b'{"model": "llama-3.1-8b", "gpus": "lots"}')
    with pytest.raises(InputError, match="^gpus: got 'null'; give a value"):
        cls.model_validate_json('{"model": "llama-3.1-8b", "gpus": null}')
    assert cls.model_validate_json('{"model": "llama-3.1-8b", "gpus": 8}').gpus in (8, (8,))


def test_model_validate_json_names_a_nested_key_twice_and_bad_json():
    with pytest.raises(InputError, match=r"^inputs: got \"key 'a' twice\"; a JSON object gives each key once"):
        gpuplan.MemoryInputs.model_validate_json('{"model": "llama-3.1-8b", "calibration": {"a": 1, "a": 2}}')
    with pytest.raises(InputError, match="^inputs: got 'str'; is not one valid JSON object"):
        gpuplan.MemoryInputs.model_validate_json('{"model": ')
    with pytest.raises(InputError, match="^inputs: got 'list'; expected a JSON object"):
        gpuplan.MemoryInputs.model_validate_json("[1]")


def test_a_field_named_self_is_an_unknown_field_at_both_doors():
    """MemoryInputs(self=1) ended in a bare TypeError (JobInputs.__init__'s self was not positional-only), and so
    would model_validate({"self": 1}), which is the constructor."""
    for door in (lambda: gpuplan.MemoryInputs(self=1), lambda: gpuplan.MemoryInputs.model_validate({"self": 1})):
        with pytest.raises(InputError, match="^self: got 1; unknown field; "):
            door()
