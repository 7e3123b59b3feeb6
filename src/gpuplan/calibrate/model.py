"""The Calibration object and its JSON file.

Every factor is defined against gpuplan's own prediction for the same model, layout and
accelerator (see gpuplan.calibrate.predict):

* ``compute_time``      measured / predicted seconds of matmuls, elementwise ops, LM head and
                        optimizer step (1 = the step model was right); under an eager stack
                        (--framework hf, core.time) the matmuls alone
* ``attention_time``    measured / predicted seconds of the attention kernels
* ``memory_time``       eager stacks: measured / predicted seconds of the memory-bound kernels
                        (norms, RoPE, activations, casts, loss, optimizer)
* ``host_time``         eager stacks: measured / predicted host issue time where it exceeds the GPU's
* ``comm_time``         measured / predicted exposed communication seconds
* ``activation_memory`` measured / predicted activation bytes at the start of backward
* ``memory_overhead``   bytes measured above the prediction that do not scale with activations
                        (allocator rounding, workspaces, what the model leaves out), per GPU

A factor that the measurements cannot identify keeps its default (1, or 0 bytes) with status
'not identified'; one fitted from as many measurements as factors has an unknown uncertainty
(stderr None, status 'single').
"""

from __future__ import annotations

import difflib
import math
import sys
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from gpuplan.errors import InputError, shown

SCHEMA_VERSION = 2
READS = (1, 2)
"""Schema versions this gpuplan reads (1: before memory_time / host_time and the environment)."""
KIND = "gpuplan.calibration"
FACTOR_NAMES = ("compute_time", "attention_time", "comm_time", "activation_memory", "memory_overhead",
                "memory_time", "host_time")
OPTIONAL_FACTORS = ("memory_time", "host_time")
STATUSES = ("fitted", "single", "tied", "not identified")


@dataclass(frozen=True)
class Factor:
    """One correction factor with its uncertainty and provenance."""

    value: float
    default: float
    unit: str
    """'x' (a ratio) or 'bytes'."""
    status: str = "not identified"
    stderr: float | None = None
    """Standard error from the fit's residuals; None when unknown (no residual degrees of freedom)."""
    low: float | None = None
    high: float | None = None
    """value +- 2 stderr, or the spread of the per-measurement ratios; None when unknown."""
    n_measurements: int = 0
    sources: tuple[str, ...] = ()
    note: str = ""

    @property
    def applied(self) -> bool:
        """False when the factor is the default (not identified by the measurements)."""
        return self.status != "not identified"


def default_factor(name: str, note: str = "no measurement identifies it") -> Factor:
    unit = "bytes" if name == "memory_overhead" else "x"
    return Factor(0.0 if unit == "bytes" else 1.0, 0.0 if unit == "bytes" else 1.0, unit, note=note)


@dataclass(frozen=True)
class Reference:
    """Where the factors were measured: they are exact there and extrapolated elsewhere."""

    gpus: tuple[str, ...]
    """Catalog accelerator ids ('cpu' for the CPU stand-in)."""
    models: tuple[str, ...]
    gemm_dim: float
    """Smallest GEMM dimension per GPU of the measurements (median): the GEMM efficiency is
    calibrated at this dimension and carried to others by the step model's d/(d + d_half)."""
    attention_efficiency: float
    """The step model's default attention efficiency on the reference accelerator."""
    framework: str = ""
    """The framework the measurements ran ('hf' for trials); '' in files before schema 2."""
    environment: dict = field(default_factory=dict)
    """Device, GPU, torch / transformers / peft versions of the (first) measurement."""
    dtype: str = ""
    """The compute dtype the factors were fitted at (the measurements' --dtype, or --recipe fp8's: fp8), ', '-joined
    where they differ; '' in files before session 25. A plan at another dtype is told (jobs.calibration_notice)."""
    layout: dict = field(default_factory=dict)
    """What calibrate timed the (first) log's layout at: {"cp": --cp or 1, "vpp": --vpp or 1, "tp_overlap": the
    share of TP communication hidden, core.time.step.StepSettings.tp_overlap}; {} in files before session 25 and for
    trials. A plan at another --cp / --vpp / --tp-overlap is told (jobs.calibration_notice.layout_warning)."""
    options: dict = field(default_factory=dict)
    """The other step options train parsed for the (first) log (calibrate.step_options.RECORDED_OPTIONS: given, or
    train's default; null for --dp-overlap not given), as JSON holds them: {"grad_dtype": "fp32", "sequence_parallel":
    true, ...}; {} in files before session 26 and for trials. A plan with another is told
    (jobs.calibration_notice.options_warning)."""


@dataclass(frozen=True)
class MeasurementFit:
    """One measurement: measured, gpuplan's default prediction, and the calibrated prediction."""

    source: str
    kind: str
    model: str
    gpu: str
    world_size: int
    step_measured_s: float | None = None
    step_default_s: float | None = None
    step_calibrated_s: float | None = None
    memory_measured_bytes: float | None = None
    memory_default_bytes: float | None = None
    memory_calibrated_bytes: float | None = None
    memory_kind: str | None = None
    used_for: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Calibration:
    compute_time: Factor
    attention_time: Factor
    comm_time: Factor
    activation_memory: Factor
    memory_overhead: Factor
    reference: Reference
    memory_time: Factor = field(default_factory=lambda: default_factor("memory_time", "not fitted"))
    host_time: Factor = field(default_factory=lambda: default_factor("host_time", "not fitted"))
    measurements: tuple[MeasurementFit, ...] = ()
    notes: tuple[str, ...] = field(default=())
    schema_version: int = SCHEMA_VERSION

    def factor(self, name: str) -> Factor:
        return getattr(self, name)


def calibration_to_dict(cal: Calibration) -> dict[str, Any]:
    return {"schema_version": cal.schema_version, "kind": KIND,
            **{k: v for k, v in asdict(cal).items() if k != "schema_version"}}


TOP_KEYS = ("schema_version", "kind", "reference", "measurements", "notes")
"""A calibration document's keys besides its factors (calibration_to_dict)."""


def calibration_from_dict(data: Any, source: str, expected: str = "") -> Calibration:
    """A Calibration from its JSON document; ``source`` is what a refusal quotes, ``expected`` what it asks for (a
    file's words unless given: the Python API's Calibration object names the object, review of wave 18 N6)."""
    expected = expected or "a gpuplan calibration file (written by `gpuplan calibrate --out`)"
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise InputError("calibration", source, f"is not {expected}")
    if data.get("schema_version") not in READS:
        raise InputError("calibration", source, f"has schema_version {data.get('schema_version')!r}; "
                         f"this gpuplan reads {', '.join(map(str, READS))}")
    try:
        top = [k for k in data if k not in TOP_KEYS + FACTOR_NAMES]
        if top:  # a misspelt optional factor was read as absent, silently (hostile wave 29)
            close = difflib.get_close_matches(str(top[0]), TOP_KEYS + FACTOR_NAMES, n=1)
            raise ValueError(f"{top[0]!s:.40} is not a key of a calibration" + (f" (did you mean {close[0]}?)" if close
                                                                               else ""))
        reference = _build(Reference, data["reference"], "reference")  # each field of its declared type
        factors = {name: _factor(data[name], name, reference.gpus) for name in FACTOR_NAMES  # bounds by reference
                   if name not in OPTIONAL_FACTORS or name in data}
        if not all(isinstance(k, str) and isinstance(v, str | int | float) for k, v in reference.environment.items()):
            raise ValueError("reference.environment must map names to text or numbers")
        _check_vocabulary(reference)
        if any(k not in LAYOUT_KEYS or isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 2**20
               for k, v in reference.layout.items()):
            raise ValueError(f"reference.layout must map {', '.join(LAYOUT_KEYS)} to numbers from 0")
        _check_options(reference.options)
        if not (1 <= reference.gemm_dim <= 2**24 and reference.attention_efficiency <= 1):  # a size, a share
            raise ValueError("reference.gemm_dim must be 1 to 2^24 and reference.attention_efficiency at most 1")
        measurements = tuple(_build(MeasurementFit, m, f"measurements[{i}]")
                             for i, m in enumerate(_items(data.get("measurements", ()), "measurements")))
        notes = tuple(_items(data.get("notes", ()), "notes"))
        if not all(isinstance(note, str) for note in notes):
            raise ValueError("notes must be a list of text")
    except InputError:  # a factor's bound: names its own path (calibration: compute_time.value)
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError("calibration", source, f"is incomplete or malformed ({exc}); expected {expected}") from None
    return Calibration(**factors, reference=reference, measurements=measurements, notes=notes)


LAYOUT_KEYS = ("cp", "vpp", "tp_overlap")
"""reference.layout's keys: Reference.layout."""


def _check_options(options: dict) -> None:
    """reference.options: each key one of calibrate.step_options.RECORDED_OPTIONS, each value null, true / false, a
    finite number, text or a list of text (each checked against calibrate's field for it where a plan reads it:
    calibrate.train_step.check_recorded, which needs the schema this loader does not import)."""
    from gpuplan.calibrate.step_options import RECORDED_OPTIONS

    unknown = [k for k in options if k not in RECORDED_OPTIONS]
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), RECORDED_OPTIONS, n=1)
        raise ValueError(f"reference.options.{unknown[0]!s:.40} is not a step option calibrate records"
                         + (f" (did you mean {close[0]}?)" if close else ""))
    for key, value in options.items():
        if not (all(isinstance(v, str) for v in value) if isinstance(value, list) else
                value is None or isinstance(value, bool | str) or _of_kind(value, "float")):
            raise ValueError(f"reference.options.{key} must be null, true / false, a number, text or a list of text, "
                             f"not {shown(value)}")


def _check_vocabulary(reference: Reference) -> None:
    """reference.framework and each of reference.dtype's ', '-joined words name a framework (core.frameworks.FRAMEWORKS,
    the schema's --framework) and a compute dtype (schema.vocabulary.DTYPES); '' (files before session 25) stays
    valid. "jax" / "megatronn" / "fp7" were read silently and quoted back in the plan's warning (review R2 S2-5)."""
    from gpuplan.core.frameworks import FRAMEWORKS
    from gpuplan.core.precision import COMPUTE_DTYPES as DTYPES  # schema.vocabulary.DTYPES

    if reference.framework and reference.framework not in FRAMEWORKS:
        raise InputError("calibration: reference.framework", f"{reference.framework:.40}",
                         f"is not a framework; one of {', '.join(FRAMEWORKS)} (or '' in files before session 25)")
    bad = [d for d in reference.dtype.split(", ") if d not in DTYPES] if reference.dtype else []
    if bad:
        raise InputError("calibration: reference.dtype", f"{bad[0]:.40}",
                         f"is not a compute dtype; one of {', '.join(DTYPES)}, ', '-joined where the measurements differ (or '' in files "
                         "before session 25)")


MAX_RATIO = 1e3
"""The widest ratio a calibration holds: a band's ends (value -+ 2 stderr, _check_band) and the time factors of a CPU
stand-in, which describe that CPU and are applied to no GPU plan (calibrate/compatibility.py). The project's own CPU
trials fit 59.5 (tests/test_calibrate.py's loop: a Llama 2 layers wide 64, whose GEMMs run far below the 1024^3 rate
the stand-in is built on)."""
FACTOR_RANGE = (0.1, 10.0)
"""Every other ratio factor's value (measured / predicted: seconds of a class, or activation bytes). Sources: the
fitter holds each eager class within 0.25-5 (calibrate.classes.LOWER_BOUND, their rooflines, and UPPER_BOUND); the
project's own GPU data fit 0.86 (compute_time, the two H200 trials of tests/fixtures/h200), 1.60 and 0.50
(compute_time, activation_memory: the Megatron Mixtral log of tests/fixtures/logs; the 0.50 read its first iteration's
peak as a steady one and is no longer fitted, calibrate.predict.memory_parts) and 1.69 (the HF Trainer state of
tests/fixtures/logs, llama-3.1-8b on one H100); across the 1,791 published cases `gpuplan validate` scores, measured /
predicted runs from 0.49 (throughput of a B300 MoE run: 2.05x the time predicted) to 2.88 (GPU-hours of llama3.1-8b
at the default MFU 0.40). 10 and 0.1 are over 3x past the widest of them and 2x past the fitter's own 5x, 2.5x below
its 0.25: beyond them the measured run is another run than the one described. It was 0.001-1000 for every factor
(compute_time 1000 timed a step 1,000x slower than predicted, answered; hostile wave 27b)."""
RANGE_WHY = ("the fitter's classes stay within 0.25-5 and the published runs gpuplan validates within 0.49-2.9 of its "
             "prediction; past that the measured run is not the one described (docs/calibration.md)")
TIME_FACTORS = ("compute_time", "attention_time", "comm_time", "memory_time", "host_time")
MAX_OVERHEAD_BYTES = float(2**40)
"""A fixed memory overhead beyond 1 TiB either way is more than any accelerator holds."""


def ratio_range(name: str, reference_gpus: tuple[str, ...]) -> tuple[float, float, str]:
    """(low, high, why) a ratio factor's value must lie in: FACTOR_RANGE, or 1/MAX_RATIO-MAX_RATIO for the time factors
    of a CPU stand-in (``reference_gpus`` ('cpu',)). The loader and the fitter (calibrate/fit.py) read the same."""
    if name in TIME_FACTORS and tuple(reference_gpus) == ("cpu",):
        return 1 / MAX_RATIO, MAX_RATIO, ("a CPU stand-in's time factor describes that CPU and is applied to no GPU "
                                          "plan; it is read within 0.001 to 1000")
    low, high = FACTOR_RANGE
    return low, high, (f"a ratio factor is measured / predicted time (or activation bytes) and must be within {low:g} "
                       f"to {high:g}: {RANGE_WHY}")


def _factor(raw: dict, name: str, reference_gpus: tuple[str, ...]) -> Factor:
    _check_value(raw, name, reference_gpus)
    factor = _build(Factor, raw, name)  # the other fields, each of its kind (_of_kind)
    if factor.status not in STATUSES:
        raise ValueError(f"bad factor {raw!r}")
    if factor.unit != default_factor(name).unit:  # a ratio marked 'bytes' escaped the ratio bound (wave 7)
        raise ValueError(f"{name}.unit must be {default_factor(name).unit!r}, not {factor.unit!r}")
    _check_band(factor, name)
    return factor


def _check_value(raw: Any, name: str, reference_gpus: tuple[str, ...]) -> None:
    """A factor's value, read before its other fields and refused naming its path (calibration: compute_time.value)
    with the range it must lie in: a ratio's ratio_range, a byte overhead's +-1 TiB. Hostile wave 28: a subnormal
    (1e-320), text ('10'), a boolean or null was refused as the whole document 'incomplete or malformed', NaN / inf
    so at the Python door only, and an integer past float range (10**400) ended in OverflowError there."""
    if not isinstance(raw, dict) or "value" not in raw:
        return  # _build names what is missing
    value = raw["value"]
    if default_factor(name).unit == "x":
        low, high, why = ratio_range(name, reference_gpus)
    else:
        low, high, why = -MAX_OVERHEAD_BYTES, MAX_OVERHEAD_BYTES, ("a fixed memory overhead in bytes must be within "
                                                                   "+-1 TiB (2^40 B), more than any accelerator holds")
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number:
        raise InputError(f"calibration: {name}.value", value, f"is not a number; {why}")
    if not low <= value <= high:  # NaN fails it; an int compares exactly (10**400 overflows no float)
        raise InputError(f"calibration: {name}.value", value, why)
    if 0 < abs(value) < sys.float_info.min:  # a byte overhead's 1e-320: within the bound, but no float read
        raise InputError(f"calibration: {name}.value", value, f"is subnormal (0 < |value| < 2.2e-308); {why}")


def _check_band(factor: Factor, name: str) -> None:
    """The uncertainty as calibrate.fit / calibrate.classes write it: stderr >= 0 and low <= value <= high (value
    -+ 2 stderr, a ratio's low clipped at 0), both ends or neither, within the value's own bound. A band outside it
    was printed as read (wave 21): 'activation memory ... -5x - 1e+300x' and a 300-digit TiB range, inverted."""
    bound = MAX_RATIO if factor.unit == "x" else MAX_OVERHEAD_BYTES
    floor = 0.0 if factor.unit == "x" else -bound
    if factor.stderr is not None and not 0 <= factor.stderr <= bound:
        raise ValueError(f"{name}.stderr {factor.stderr:g}: must be 0 to {bound:g}")
    if (factor.low is None) != (factor.high is None):
        raise ValueError(f"{name}: low and high come together (value -+ 2 stderr), or neither")
    if factor.low is not None and not floor <= factor.low <= factor.value <= factor.high <= bound:  # type: ignore
        raise ValueError(f"{name} band {factor.low:g} to {factor.high:g}: must hold its value {factor.value:g} "
                         f"within {floor:g} to {bound:g}")


POSITIVE_FIELDS = ("gemm_dim", "attention_efficiency", "world_size")
"""Fields that are 0 or less in no measurement (a GEMM size, an efficiency, a GPU count)."""
KIND_WORDS = {"float": "a finite number", "float | None": "a finite number or null", "int": "a whole number >= 0",
              "str": "text", "str | None": "text or null", "tuple[str, ...]": "a list of text", "dict": "a mapping"}


def _build(cls, raw: Any, where: str = ""):
    """``cls`` from a mapping, each field of the type its dataclass declares (wave 7: a factor given as a
    number, a 'default' given as text or a gemm_dim of 0 ended in an internal error or was taken)."""
    where = where or cls.__name__
    if not isinstance(raw, dict):
        raise TypeError(f"{where} must be a mapping, not {type(raw).__name__}")
    kinds = {f.name: str(f.type) for f in fields(cls)}
    unknown = [k for k in raw if k not in kinds]
    if unknown:  # a misspelt optional field was read as absent, silently (hostile wave 29)
        close = difflib.get_close_matches(str(unknown[0]), kinds, n=1)
        raise ValueError(f"{where}.{unknown[0]!s:.40} is not a field of it"
                         + (f" (did you mean {close[0]}?)" if close else f"; its fields: {', '.join(kinds)}"))
    missing = [f.name for f in fields(cls) if f.name not in raw
               and f.default is MISSING and f.default_factory is MISSING]
    if missing:  # was 'Factor.__init__() missing 1 required positional argument' (hostile wave 29)
        raise ValueError(f"{where}.{missing[0]} is missing")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
    for key, value in values.items():
        if not _of_kind(value, kinds[key]) or (key in POSITIVE_FIELDS and not value > 0):
            raise ValueError(f"{where}.{key} must be {KIND_WORDS.get(kinds[key], kinds[key])}"
                             f"{' above 0' if key in POSITIVE_FIELDS else ''}, not {shown(value)}")
    return cls(**values)


def _of_kind(value: Any, kind: str) -> bool:
    """Whether ``value`` is of a dataclass field's declared type (the annotations of this module)."""
    if value is None:
        return "None" in kind
    if isinstance(value, bool):
        return False
    if kind.startswith(("float", "int")):
        finite = math.isfinite(value) if isinstance(value, float) else isinstance(value, int) and \
            value.bit_length() <= 1023  # math.isfinite(10**400) raised OverflowError (hostile wave 28)
        return finite and (kind.startswith("float") or (isinstance(value, int) and value >= 0)) and \
            not 0 < abs(value) < sys.float_info.min
    if kind.startswith("tuple"):
        return all(isinstance(item, str) for item in value) if isinstance(value, tuple) else False
    return isinstance(value, dict) if kind == "dict" else isinstance(value, str)


def _items(value: Any, where: str) -> list:
    if not isinstance(value, list | tuple):
        raise TypeError(f"{where} must be a list, not {type(value).__name__}")
    return list(value)


def save_calibration(cal: Calibration, path: str | Path) -> Path:
    """Write the calibration JSON atomically (a temporary file renamed over ``path``)."""
    from gpuplan.adapters.files import write_json_atomic

    return write_json_atomic(path, calibration_to_dict(cal))


def load_calibration(path: str | Path) -> Calibration:
    """Read a calibration file; InputError naming the file when it is not one."""
    from gpuplan.adapters.files import read_json

    return calibration_from_dict(read_json(path, "calibration"), str(path))
