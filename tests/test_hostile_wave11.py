"""Hostile inputs, wave 11 (2026-12-06): what a fresh sweep of the doors found after session 9's changes
(gpt_bigcode config reading, the vLLM --speculative release gates, completion refusals that offer a re-run batch,
--spot-price, the training-log adapters, budget / plan / memory / measure), and three leftovers fixed at their
cause. Each refusal is one line naming the field and what is valid (exit status 2, 4xx on the web, no traceback).
SWEEP_SIZES_PLACEHOLDER
"""

import pytest
from helpers import field_refusal

from gpuplan.core import units
from gpuplan.errors import InputError

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite


# ---- (a) one message source for a duration's unknown unit ----------------------------------------------------

def test_the_core_duration_parser_names_the_examples_it_is_given():
    """core.units.parse_duration takes the field's ``examples`` (schema.types re-worded its refusal before: two
    copies of 'expected a duration such as'); the default stays a deadline's."""
    with pytest.raises(InputError) as refusal:
        units.parse_duration("6x", "step_time", examples="6s or 1.5min")
    assert refusal.value.expected == "expected a duration such as 6s or 1.5min"
    with pytest.raises(InputError) as refusal:
        units.parse_duration("3x", "days")
    assert refusal.value.expected == "expected a duration such as 7d, 36h, 90min or 2w"


@pytest.mark.parametrize(("flag", "text", "field", "examples"), [
    ("--step-time", "6x", "step_time", "6s or 1.5min"),
    ("--restart", "30x", "restart", "30min, 2h or 90s"),
    ("--days", "3x", "days", "7d, 36h, 90min or 2w"),
])
def test_an_unknown_duration_unit_names_the_fields_examples(run_cli, flag, text, field, examples):
    field_refusal(run_cli("budget", "llama-3.1-8b", "--gpus", "64", flag, text), field,
                  f"expected a duration such as {examples}")
