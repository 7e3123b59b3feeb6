"""`plan --gpus 64,128` is a list, not a range (wave 11 hostile sweep, docs/cli.md): the no-completion refusal
said 'on 64-128 GPUs'. The parser keeps the shape (jobs.plan.schema.CountsAsked) and the refusal says the list."""

import pytest

from gpuplan import plan_report
from gpuplan.errors import InputError
from gpuplan.jobs.plan.schema import CountsAsked, PlanInputs, gpu_counts


@pytest.mark.parametrize("written, counts, words", [
    ("64,128", (64, 128), "64 or 128"),
    ("64, 96 ,128", (64, 96, 128), "64, 96 or 128"),
    ("1024", (1024,), "1,024"),
    ("64-128", (64, 128), "64-128"),
    ("100-300", (100, 128, 256, 300), "100-300"),  # powers of two in range and both ends
    ([64, 128], (64, 128), "64 or 128"),
])
def test_the_parser_keeps_list_or_range(written, counts, words):
    parsed = gpu_counts(written)
    assert parsed == counts and str(parsed) == words


def test_a_parsed_value_parses_to_itself_and_dumps_as_a_tuple():
    ask = PlanInputs(model="llama-3.1-8b", tokens="1T", gpu="h100", gpus="64-128")
    assert isinstance(ask.gpus, CountsAsked) and ask.gpus.span
    assert gpu_counts(ask.gpus) is ask.gpus
    assert ask.model_dump()["gpus"] == (64, 128) and type(ask.model_dump()["gpus"]) is tuple


@pytest.mark.parametrize("gpus, where", [("64,128", "on 64 or 128 GPUs"), ("64-128", "on 64-128 GPUs")])
def test_the_no_completion_refusal_says_what_was_written(gpus, where):
    """2e11 tokens a step at 0.01 failures a GPU-hour: each step outlasts the time between failures on 64 and on
    128 GPUs, so plan refuses naming the counts asked."""
    ask = {"model": "llama-3.1-8b", "tokens": "1e14", "gpu": "h100", "gpus": gpus,
           "global_batch_tokens": 2e11, "failure_rate": 0.01}
    with pytest.raises(InputError) as caught:
        plan_report(ask)
    assert f"{where} failures come faster" in str(caught.value)
