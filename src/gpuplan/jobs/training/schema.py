"""The inputs of the training estimate (``gpuplan train``'s compute and time part; the Python
API ``estimate_training``). Every field is a CLI flag, a plan-file key and an API body field."""

# No `from __future__ import annotations` here: pydantic then reads the fields' annotations as the
# objects they are, not as text it compiles and evaluates per field when the class is made (issue 39).

import re
from typing import Annotated, Any, Literal

from pydantic import model_validator

from gpuplan.errors import InputError
from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V
from gpuplan.schema.batch_ramp_field import BatchRampFields
from gpuplan.schema.model_fields import ModelFields
from gpuplan.schema.training_fields import LayoutFields, SetupFields, StepFields

# Defaults, each shown in the report's assumptions with its source.
DEFAULT_MFU = 0.40  # article: industry 30-50%, its example uses 40% on A100
DEFAULT_COMM_ALLOWANCE = (0.10, 0.20, 0.30)  # article: add 10-30% at scale; midpoint expected
DEFAULT_CONTINGENCY = 0.20  # article: 20% for restarts, tuning and hardware failures
DEFAULT_DAYS = 7.0  # article: "to finish in 7 days"
DEFAULT_PARAMS = 7e9  # article: the 7B example


MFU_RANGE = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(%?)\s*-\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(%?)")
"""'30-50%', '30%-50%', '0.3-0.5': two plain numbers (no exponents, no signs) and a dash."""


def _mfu(value: Any, info) -> Any:
    """0.4, 40%, 'predicted', or a range '30-50%' / '0.3-0.5' (low, high)."""
    if isinstance(value, str) and value.strip().lower() == "predicted":
        return "predicted"
    if isinstance(value, list | tuple) and len(value) == 2:
        low, high = (T.fraction(v, info) for v in value)
    elif isinstance(value, str) and (match := MFU_RANGE.fullmatch(value.strip())):
        left, left_percent, right, right_percent = match.groups()
        if left_percent and not right_percent:
            raise InputError("mfu", value, "a range low-high with both ends in the same unit, e.g. 30-50% or 0.3-0.5")
        percent = "%" if right_percent else ""
        try:
            low, high = (T.fraction(part + percent, info) for part in (left, right))
        except InputError:
            raise InputError("mfu", value, "a range low-high inside (0, 100%], e.g. 30-50% or 0.3-0.5") from None
    elif isinstance(value, str) and "-" in value.strip()[1:] and "e" not in value.lower():
        raise InputError("mfu", value, "expected 0.4, 40%, a range such as 30-50% or 0.3-0.5, or predicted")
    else:
        return _mfu_floor(T.fraction(value, info), value)
    if not low < high:
        raise InputError("mfu", value, "a range low-high with low < high, e.g. 30-50%")
    return (_mfu_floor(low, value), high)


def _mfu_floor(mfu: float, value: Any) -> float:
    """An MFU of at least 0.1%, the floor of every kernel efficiency (schema.types.efficiency): --mfu
    1e-300 with --gpus ran the clock past float range (a ZeroDivisionError, exit 70)."""
    if mfu < 0.001:
        raise InputError("mfu", value, "must be at least 0.001 (0.1%) and at most 1 (100%)")
    return mfu


Mfu = T.typed(float | Literal["predicted"] | tuple[float, float], _mfu)


class TrainingInputs(ModelFields, LayoutFields, SetupFields, StepFields, BatchRampFields):
    """What a training estimate needs. Give at most two of gpus / days / mfu: the third is
    solved (mfu defaults to 0.40 when only one of gpus / days is given; with neither, the
    article's 7 days)."""

    tokens: V.Tokens
    gpu: V.Gpu
    gpus: V.GpuCount
    days: V.Days
    mfu: Annotated[Mfu | None, V.field(None, "Model FLOPs utilisation: 0.4 or 40%, a range 30-50% (low / "
                                       "expected / high), or 'predicted' (the planner's layout on these GPUs, "
                                       "with the validation band).", "0.40 (the article)")]
    dtype: V.Dtype
    flops_method: Annotated[T.choice("6nd", "exact"), V.field("6nd", "FLOPs count: 6nd (the article's 6·N·D) or "
                                                              "exact (attention and LM head included).")]
    seq_len: V.SeqLen
    attention_flops: Annotated[T.choice("full", "causal"), V.field(
        "full", "Attention FLOPs convention of the exact count: full (PaLM/Megatron MFU) or causal (halved).")]
    comm_allowance: Annotated[V.Share | None, V.field(None, "Communication allowance on compute time, e.g. 0.2 or "
                                                      "20% (0: the MFU is end-to-end).", "20% (10-30%)")]
    contingency: Annotated[V.Share, V.field(DEFAULT_CONTINGENCY, "Bare contingency share of the compute "
                                            "GPU-hours (the article's 20%); given, it replaces the budget's "
                                            "named shares.", "20%; budget: named shares")]
    calibration: V.Calibration

    @model_validator(mode="after")
    def _two_of_three(self) -> "TrainingInputs":
        if self.gpus is not None and self.days is not None and self.mfu is not None:
            raise InputError("gpus/days/mfu", "all three", "give at most two; the third is solved")
        if self.comm_allowance and self.time_predicted:  # it was read as 0 and said nothing (wave 6)
            raise InputError("comm_allowance", self.comm_allowance, "applies when the MFU is given (--mfu 0.4); with "
                             "--mfu predicted, --calibration or fixed degrees the step model prices communication "
                             "collective by collective (give --mfu, or drop --comm-allowance)")
        if self.attention_flops == "causal" and self.time_predicted:  # was replaced by 'full', unsaid (wave 7)
            raise InputError("attention_flops", "causal", "applies when the MFU is given (--mfu 0.4); a predicted "
                             "time counts every key ('full', PaLM / Megatron MFU) as the step model runs them (give "
                             "--mfu, or drop --attention-flops)")
        return self

    @property
    def time_predicted(self) -> bool:
        """Time from the layout's modelled step, not from an MFU: --mfu predicted, or no --mfu with a
        calibration or fixed degrees (gpus and days both given: the MFU is solved)."""
        if self.gpus is not None and self.days is not None:
            return False
        return self.predict_mfu or (self.mfu is None and (self.calibration is not None or self.layout_given))

    # ---- resolved values (defaults that depend on other inputs) ---------------------------
    @property
    def predict_mfu(self) -> bool:
        return self.mfu == "predicted"

    @property
    def mfu_value(self) -> float | None:
        """The MFU to plan with: as given, the middle of a range, None when predicted or solved."""
        if self.mfu is None or self.mfu == "predicted":
            return None
        if isinstance(self.mfu, tuple):
            return sum(self.mfu) / 2
        return float(self.mfu)

    @property
    def mfu_band(self) -> tuple[float, float] | None:
        return self.mfu if isinstance(self.mfu, tuple) else None

    @property
    def recompute_mode(self) -> str:
        return self.recompute_given or "none"

    def builtin_defaults_used(self) -> list[str]:
        """The article's defaults that filled missing inputs (shown as a note)."""
        used = []
        if self.model is None and self.params is None:
            used.append("params=7B")
        for name, text in (("tokens", "tokens=2T"), ("gpu", "gpu=a100")):
            if name not in self.given:
                used.append(text)
        if self.gpus is None and self.days is None:
            used.append("days=7")
        return used
