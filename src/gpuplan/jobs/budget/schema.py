"""The inputs of ``gpuplan train`` / ``gpuplan budget``: the training inputs plus every budget
assumption (data, checkpoints, failures, prices, spot, contingency shares) as a field
(jobs/budget/fields.py)."""

# No `from __future__ import annotations` here: pydantic then reads the fields' annotations as the
# objects they are, not as text it compiles and evaluates per field when the class is made (issue 39).

from typing import Annotated

from pydantic import model_validator

from gpuplan.errors import InputError
from gpuplan.jobs.budget.fields import CONTINGENCY_NAMES, WEEK, BudgetFields
from gpuplan.jobs.training.schema import TrainingInputs
from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V

__all__ = ["BudgetFields", "BudgetInputs", "CONTINGENCY_NAMES"]


class BudgetInputs(TrainingInputs, BudgetFields):
    """Training inputs plus the budget's own assumptions (each also a flag of train and budget).
    ``--contingency X`` replaces the named contingency shares with one bare share X."""

    @model_validator(mode="after")
    def _one_contingency(self) -> "BudgetInputs":
        named = [f"contingency_{n}" for n in CONTINGENCY_NAMES if f"contingency_{n}" in self.given]
        if "contingency" in self.given and named:
            raise InputError("contingency", self.contingency, f"give the bare share or the named ones "
                             f"({', '.join(named)}), not both")
        if self.spot_price is not None and self.spot_discount is not None:
            raise InputError("spot_discount", self.spot_discount, "give --spot-price (USD per GPU-hour) or "
                             "--spot-discount (off on-demand), not both")
        return self

    step_time: Annotated[T.typed(float, T.seconds(WEEK, examples="6s or 1.5min")) | None, V.field(
        None, "Measured step time, e.g. 6s: sets the input-rate check of the I/O section only (the wall-clock comes "
        "from --mfu or the planner).", "derived")]  # examples: `--step-time 6` was told '30min, 2h or 90s' (r3); they show the unit only, and a
    # step under ~1 s is refused on ordinary asks as too fast for the model (review w10 r4 S3: 800ms, dropped)
