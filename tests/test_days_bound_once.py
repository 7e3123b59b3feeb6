"""--days' bound is written once (final8 SHOULD): schema.types.MAX_DAYS, read by the schema's days parser and by
the MFU refusal's offer (jobs.training.mfu_refusal.needed_words), which repeated 36_500 as MOST_DAYS."""

import pytest

from gpuplan.errors import InputError
from gpuplan.jobs.training import mfu_refusal
from gpuplan.jobs.training.schema import TrainingInputs
from gpuplan.schema import types


def test_one_bound_for_the_schema_and_the_refusal():
    assert mfu_refusal.MAX_DAYS is types.MAX_DAYS == 36_500  # a century
    assert TrainingInputs(params="7B", tokens="2T", days=types.MAX_DAYS).days == types.MAX_DAYS
    with pytest.raises(InputError, match="days: got"):
        TrainingInputs(params="7B", tokens="2T", days=types.MAX_DAYS + 1)
    offer = mfu_refusal.needed_words(8, 1800.0, (types.MAX_DAYS + 1) * 86_400.0, 8)
    assert offer.endswith("more than the 36,500 --days takes")
