"""Review s21 R3 mends the lead made: BudgetSettings built directly refuses a restart the schema refuses (S3), and an
MFU past the peak prints the digits that show it is past (N8)."""

import math
from dataclasses import replace

import pytest

from gpuplan.core.units import format_percent_past
from gpuplan.errors import InputError
from gpuplan.jobs.budget.bounds import MAX_RESTART_SECONDS
from gpuplan.jobs.budget.model import BudgetSettings, validate_settings


@pytest.mark.parametrize("seconds", [math.nan, 1e30, 0.0, -1.0, MAX_RESTART_SECONDS * 1.001])
def test_a_restart_outside_the_schemas_bound_is_refused_in_its_words(seconds):
    """The schema takes --restart in (0, one week]: 7 x 86,400 = 604,800 s; the settings check says the same."""
    with pytest.raises(InputError) as refused:
        validate_settings(replace(BudgetSettings(), restart_seconds=seconds))
    assert str(refused.value).startswith("restart_seconds: got ")
    assert str(refused.value).endswith("must be > 0 and <= 604800 s")


def test_a_week_of_restart_is_taken():
    assert MAX_RESTART_SECONDS == 604_800
    validate_settings(replace(BudgetSettings(), restart_seconds=604_800.0))


@pytest.mark.parametrize("share, shown", [(1.0004, "100.04%"), (69.035, "6,903.5%"), (328.49, "32,849.0%"),
                                          (1.00000001, "100.000001%")])
def test_an_mfu_past_the_peak_reads_past_it(share, shown):
    """':.1%' printed 1.0004 as '100.0%' in a refusal that says it is faster than the peak."""
    assert format_percent_past(share) == shown
