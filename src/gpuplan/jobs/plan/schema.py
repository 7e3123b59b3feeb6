"""The inputs of ``gpuplan plan``: a model, a token budget, a GPU type and the GPU counts (or a
deadline) to search, and the knobs of the step model."""

# No `from __future__ import annotations` here: pydantic then reads the fields' annotations as the
# objects they are, not as text it compiles and evaluates per field when the class is made (issue 39).

from typing import Annotated, Any

from pydantic import PlainSerializer, PlainValidator, WithJsonSchema

from gpuplan.adapters.quant_fields import listing
from gpuplan.errors import InputError
from gpuplan.jobs.budget.fields import BudgetFields
from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V
from gpuplan.schema.batch_ramp_field import BatchRampFields
from gpuplan.schema.list_field import ListRule, list_schema, read_list
from gpuplan.schema.model_fields import ModelFields
from gpuplan.schema.training_fields import LayoutFields, SetupFields, StepFields

RANK_BY = ("time", "cost", "gpus")
MAX_COUNTS = 256
"""GPU counts one plan may search (a list or a range): bounds the work per request, as the API's
web.bounds.MAX_API_GPU_COUNTS. 4,096 (1,2,...,4096 for llama-2-7b) took 17 s and 984k layouts;
256 irregular counts with their fallbacks (1,3,...,511 for llama-3.1-405b) take ~1.2 s."""


def _one(value: Any, field: str) -> int:
    return int(T.count(V.MAX_GPUS, whole=True)(value, None)) if not isinstance(value, str) else \
        int(T.count(V.MAX_GPUS, whole=True)(value.strip(), None))


class CountsAsked(tuple):
    """GPU counts as --gpus wrote them: ``span`` True for a range low-high, False for one count or a list, so a
    message says 'on 64-128 GPUs' for a range and 'on 64 or 128 GPUs' for the list 64,128 (a list read as a
    range was a wave 11 finding). A tuple of ints otherwise; `str` is the wording."""

    def __new__(cls, counts, span: bool = False):
        made = super().__new__(cls, counts)
        made.span = span
        return made

    def __str__(self) -> str:
        return f"{min(self):,}-{max(self):,}" if self.span else listing(tuple(f"{c:,}" for c in self))


GPU_LIST_FORMS = "whole GPU counts, e.g. 1024 or 256,512 or 512-4096"
"""What --gpus takes: one count, a list or a range (every refusal of its form ends with it)."""


def _count_entry(text: Any) -> int:
    """One entry of a --gpus list: a whole GPU count (a word is told the field's forms, not a count's)."""
    try:
        return _one(text, "gpus")
    except InputError as exc:
        raise InputError("gpus", text, GPU_LIST_FORMS if "expected" in exc.expected else exc.expected) from None


GPU_LIST = ListRule("gpus", GPU_LIST_FORMS, "GPU counts", _count_entry, MAX_COUNTS)
"""--gpus as a list (schema.list_field's rules: an empty entry or a count given twice refused, naming it)."""


def gpu_counts(value: Any, info=None) -> tuple[int, ...]:
    """'1024' -> (1024,), '256,512,1024' -> those, '512-4096' -> the powers of two in range and both ends
    (planner.space.power_counts), so a range without a power of two keeps both ends: '100-120' -> (100, 120),
    where it stood for 100 alone and the rest was dropped silently (wave 9). Returned as CountsAsked (list or
    range kept). A list is read by schema.list_field (GPU_LIST): '8,,16' and '8,8' are refused."""
    span, asked = False, value if isinstance(value, CountsAsked) else None
    if asked is not None:  # checked again as the list it holds (wave 18: the Python API took CountsAsked((0,)) or
        value, span = tuple(asked), asked.span  # ((nan,)) unchecked, and () raised IndexError); kept where it passes
    text = value.strip() if isinstance(value, str) else ""
    if "-" in text and not text.startswith("-") and "," not in text:
        try:
            low, high = (_one(x, "gpus") for x in text.split("-", 1))
        except InputError as exc:
            raise InputError("gpus", value, GPU_LIST_FORMS if "expected" in exc.expected else
                             _empty_end(value) or exc.expected) from None
        if low > high:
            raise InputError("gpus", text, "a range low-high with low <= high, e.g. 512-4096")
        from gpuplan.planner.space import power_counts  # lazy: planner.space loads numpy (test_startup)

        counts, span = power_counts(low, high), True
        if len(counts) > MAX_COUNTS:
            raise InputError("gpus", f"{len(counts):,} GPU counts", f"1 to {MAX_COUNTS:,} GPU counts")
    elif isinstance(value, bool):
        raise InputError("gpus", value, GPU_LIST_FORMS)
    else:
        counts = read_list(value, GPU_LIST)
    made = CountsAsked(counts, span)
    return asked if asked is not None and tuple(asked) == tuple(made) else made


def _empty_end(value: Any) -> str | None:
    """What a range with an empty end ('8-') should be, where the end's own refusal read 'must not be empty' (wave
    14: `--gpus 8-` said only that); None for any other value."""
    text = value.strip() if isinstance(value, str) else ""
    if "" in (part.strip() for part in text.split("-", 1)):
        return "a GPU range needs both ends, low-high (e.g. 8-64), or give one count (e.g. 8)"
    return None


def _f(default, help: str, shown: str | None = None):
    return V.field(default, help, shown)


GpuCounts = Annotated[tuple[int, ...], PlainValidator(gpu_counts), PlainSerializer(tuple, return_type=tuple[int, ...]),
                      WithJsonSchema({"anyOf": [{"type": "number"}, *list_schema({"type": "number"}, MAX_COUNTS, 4096)[
                          "anyOf"]]})]
"""PlainValidator (T.typed's BeforeValidator would rebuild a plain tuple): CountsAsked reaches the job as parsed;
dumped as the plain tuple it was (pydantic's tuple serializer warns on a subclass)."""


class PlanInputs(ModelFields, LayoutFields, SetupFields, StepFields, BudgetFields, BatchRampFields):
    """What the layout search needs (degrees given are fixed: `plan --tp 8 --pp 4` checks that
    layout), plus the budget assumptions of the chosen layout."""

    tokens: V.Tokens
    gpu: V.Gpu
    gpus: Annotated[GpuCounts | None, V.GPU_COUNT]
    days: V.Days
    seq_len: V.SeqLen
    dtype: V.Dtype
    rank_by: Annotated[T.choice(*RANK_BY), _f("time", "Rank layouts by time, cost or gpus.")]
    top: Annotated[T.typed(int, T.count(1000, whole=True)), _f(10, "Layouts to show.")]
    calibration: V.Calibration
    explain: Annotated[T.Bool, _f(False, "Show the chosen layout's communication collective by collective (bytes, "
                                         "link, time, exposed time) instead of the top layouts.")]
    exhaustive: Annotated[T.Bool, _f(False, "Time every layout and recompute mode (no pruning): the reference the "
                                            "pruned search is tested against.")]

    @property
    def time_predicted(self) -> bool:
        """Always: `plan` times each layout by its modelled step (it takes no --mfu), as `train --mfu predicted` does
        (TrainingInputs.time_predicted; jobs.plan.shard_group_told reads it)."""
        return True

    def adjust_spec(self, spec):
        """The model with gpu_range_note among its notes (after sequence_note, schema.model_fields.job_spec), then
        the other field groups' checks."""
        note = gpu_range_note(self)
        if note is not None:
            from dataclasses import replace

            spec = replace(spec, notes=(*spec.notes, note))
        return super().adjust_spec(spec)

    @property
    def gpu_counts(self) -> tuple[int, ...]:
        """Counts --gpus names; not given: powers of two from 8 to 16,384 (a deadline search takes the
        common cluster sizes up to 131,072 instead, then the counts between the two that bracket the answer:
        jobs/plan/deadline.py)."""
        return self.gpus or tuple(2**k for k in range(3, 15))

    @property
    def batch_tokens(self) -> float:
        """Tokens per step asked for (--global-batch-tokens or --global-batch x --seq-len)."""
        return self.target_batch(self.seq_len) * self.seq_len


def gpu_range_note(inputs: PlanInputs) -> str | None:
    """The note a plan carries where --gpus was a range (low-high) and --days a deadline: the range stands for its
    powers of two and both ends (gpu_counts), so the deadline's fewest GPUs are chosen among those only, where a
    plan without --gpus also searches the counts between two common sizes (jobs.plan.deadline.counts_between):
    `plan --gpus 100-300 --days 10` answered 256 GPUs (7.97 days) and said nothing of the ~200 that also meet the
    10 days (wave 8). None otherwise."""
    from gpuplan.core.units import plural
    from gpuplan.schema.base import typed_values

    counts, days = inputs.gpu_counts, inputs.days
    typed = typed_values(inputs).get("gpus")
    if days is None or not counts or not isinstance(typed, str) or "-" not in typed.strip()[1:]:
        return None
    searched = ", ".join(f"{c:,}" for c in counts)
    return (f"--gpus {typed.strip()} searched {plural(len(counts), 'GPU count')} ({searched}: a range stands for its "
            "powers of two and both ends), not the counts between them: leave --gpus out for the fewest GPUs that "
            "meet the deadline, or list the counts to compare (--gpus 160,192,224)")
