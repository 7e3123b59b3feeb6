"""--batch-ramp: a run's smaller global batches before its steady one, as ordered phases of (tokens, batch).

One field for `train`, `budget`, `plan`, a plan file, the web API and the Python API (TrainingInputs and
PlanInputs take BatchRampFields). Text: phases separated by commas, each ``TOKENS:BATCH``, the batch in
sequences, or in tokens per step with a ``tok`` suffix, or a linear ramp ``FROM-TO`` over the phase:

* DeepSeek-V3 (arXiv:2412.19437 Sec. 4.2: batch "gradually increased from 3072 to 15360 in the training
  of the first 469B tokens"): ``--batch-ramp 469B:3072-15360`` (with --global-batch 15360 --seq-len 4K);
* Llama 3 405B (arXiv:2407.21783 Sec. 3.4.1: "an initial batch size of 4M tokens ... double these values to
  a batch size of 8M ... after pre-training 252M tokens. We double the batch size again to 16M after
  pre-training on 2.87T tokens"): ``--batch-ramp 252M:4Mtok,2.618T:8Mtok`` (with --global-batch-tokens 16M;
  the second phase is 2.87T - 252M tokens long).

A plan file or an API body may give the same text, a list of such texts, or a list of mappings
``{tokens: 469B, global_batch: 3072}`` / ``{tokens: ..., global_batch_tokens: 4M}`` / ``{tokens: ..., from:
3072, to: 15360}``. The planner times each phase on the chosen layout (planner.batch_ramp)."""

# No `from __future__ import annotations` here: pydantic reads the field's annotation as the object it is.

from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import PlainSerializer, model_validator

from gpuplan.core import units
from gpuplan.errors import InputError
from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V
from gpuplan.schema.base import JobInputs
from gpuplan.schema.list_field import ListRule, read_list
from gpuplan.schema.unseen_text import REFUSAL as UNSEEN_REFUSAL, unseen

FIELD = "batch_ramp"
MAX_PHASES = 32
"""Phases one ramp may give: a fixed-increment ramp (BLOOM 176B's Megatron-DeepSpeed --rampup-batch-size: 192 ->
2,048 by 16, 116 steps) is given here as one linear phase; Megatron-Core at core_v0.18.0 deprecates
--rampup-batch-size for --step-batch-size-schedule, a list of (threshold, batch) entries
(megatron/core/num_microbatches_calculator.py@core_v0.18.0 L90-104); stated schedules name 2-3 (Llama 3 405B 2,
PaLM 2: arXiv:2204.02311 Sec. 5). Each phase is timed on the chosen layout per ranked candidate
(planner.batch_ramp), so the count bounds the work."""
MAX_RAMP_TEXT = 1024
"""Characters the text form may hold (the other text fields' schema.types.MAX_TEXT is 256, which held ~19 phases
of '2.618T:8Mtok,'): 32 phases of up to 31 characters each with their commas."""
LINEAR_STEPS = 256
"""A linear phase FROM-TO is read as this many equal-token steps at their middle batches; each runs at its
runnable batch (planner.batch_ramp.runnable_batch), and ramp_timing times each distinct runnable batch once (or,
past EXACT_BATCHES of them, interpolates), so the step count sets only how finely each runnable batch's token
share is read (to 1/256 of the phase), not the work. With 4 steps (the reading before review w16 R6 S2)
llama-3.1-70b's 1T:64-1024 on dp64 tp4 pp4 vpp20 (1,024 H100) read x1.066, 16 steps x1.160 (the midpoints alias
with the runnable batches, multiples of 64), 256 steps x1.1213 against the exact x1.1188 (each runnable batch at the
continuous ramp's token share: 0.23% high; tests/test_batch_ramp_input.py holds it within 0.5%)."""
MAPPING_KEYS = (frozenset({"tokens", "global_batch"}), frozenset({"tokens", "global_batch_tokens"}),
                frozenset({"tokens", "from", "to"}))
"""A phase mapping's keys: one batch, in sequences, in tokens or as a linear FROM-TO (wave 18: {tokens,
global_batch, global_batch_tokens} was read as its global_batch and {tokens, from, to, global_batch} as from-to,
the other key unsaid)."""
FORMS = ("TOKENS:BATCH phases separated by commas, the batch in sequences, in tokens with a 'tok' suffix, or "
         "linear FROM-TO, e.g. 469B:3072-15360 or 252M:4Mtok,2.618T:8Mtok")


@dataclass(frozen=True)
class RampPhase:
    """One phase: ``tokens`` trained at a batch from ``start`` to ``end`` (equal: a constant batch), in sequences
    (``in_tokens`` False) or tokens per step."""

    tokens: float
    start: float
    end: float
    in_tokens: bool = False
    given: str = field(default="", compare=False)
    """The phase's text as typed (refusals echo it); '' for a pair or a mapping."""

    def text(self) -> str:
        unit = "tok" if self.in_tokens else ""
        batch = f"{_short(self.start)}{unit}" if self.start == self.end else \
            f"{_short(self.start)}{unit}-{_short(self.end)}{unit}"
        return f"{_short(self.tokens)}:{batch}"

    def sequences(self, seq_len: int) -> list[tuple[float, float]]:
        """(tokens, global batch in sequences) steps of the phase: one, or LINEAR_STEPS for FROM-TO."""
        per = float(seq_len) if self.in_tokens else 1.0
        if self.start == self.end:
            return [(self.tokens, self.start / per)]
        return [(self.tokens / LINEAR_STEPS, (self.start + (self.end - self.start) * (i + 0.5) / LINEAR_STEPS) / per)
                for i in range(LINEAR_STEPS)]


def typed_text(phases) -> str:
    """The phases as typed, comma-separated (each phase's own text where it came as a pair or a mapping): what a
    refusal and the inputs' echo show (review w16 R6 N2 / N10)."""
    return ",".join(p.given or p.text() for p in phases)


def _short(x: float) -> str:
    for suffix, size in (("T", 1e12), ("B", 1e9), ("M", 1e6)):  # below 1e15: 1e30 reads '1e+30', not '1e+18T'
        if size <= x < 1e15 and x / size == round(x / size, 4):
            return f"{x / size:g}{suffix}"
    return f"{x:g}"


def _batch(text: Any, whole: Any) -> tuple[Any, bool]:
    """'3072' -> ('3072', False), '4Mtok' -> ('4M', True): the batch as given and its unit (_batch_value reads it)."""
    raw = str(text).strip()
    if raw.lower().endswith("tok"):
        return raw[:-3], True
    return (raw if not isinstance(text, int | float) else text), False


def _batch_value(given: Any, in_tokens: bool, whole: Any) -> tuple[float, bool]:
    """('3072', False) -> (3072, False), ('4M', True) -> (4e6, True): the batch read and checked."""
    try:
        value = units.parse_count(given, FIELD)
    except InputError:  # '0', '-64', 'nan', '1e400': said as the tokens' refusal says it (wave 18)
        raise InputError(FIELD, whole, f"each phase's batch a positive count; {FORMS}") from None
    if not in_tokens and value != int(value):
        raise InputError(FIELD, whole, "a batch in sequences is a whole number (or give tokens: 4Mtok)")
    if value > V.MAX_BATCH * (V.MAX_SEQ_LEN if in_tokens else 1):
        raise InputError(FIELD, whole, f"a batch of at most {V.MAX_BATCH:,} sequences")
    return value, in_tokens


def _phase(item: Any, whole: Any) -> RampPhase:
    """One phase from 'TOKENS:BATCH' text, a [tokens, batch] pair or a mapping."""
    if isinstance(item, RampPhase):  # checked again as its mapping: a hand-built RampPhase(nan, 64, 64) passed the
        # Python API unchecked and hung the estimate (wave 18); the batches go in as (value, unit), not as text (a
        # numpy float's repr 'np.float64(4000000.0)tok' was refused: review of wave 18, S2)
        unit = bool(item.in_tokens)
        again = _checked(item.tokens, (item.start, unit), (item.end, unit), "", whole)
        given = item.given.strip() if isinstance(item.given, str) and len(item.given) <= MAX_RAMP_TEXT else ""
        try:  # its typed text kept only where it reads as this phase (review S3: '1B:999' was echoed for 1B:64)
            kept = given if given and _phase(given, whole) == again else ""
        except InputError:
            kept = ""
        return RampPhase(again.tokens, again.start, again.end, again.in_tokens, kept)
    if isinstance(item, dict):
        item = {key: value for key, value in item.items() if value is not None}  # a null key is unsaid (review N3)
        tokens = item.get("tokens")
        if "from" in item or "to" in item:
            start, end = item.get("from"), item.get("to")
        else:
            one = item.get("global_batch", f"{item['global_batch_tokens']}tok" if "global_batch_tokens" in item
                           else None)
            start = end = one
        if tokens is None or start is None or end is None or frozenset(item) not in MAPPING_KEYS:  # one batch each
            raise InputError(FIELD, whole, "a phase mapping is {tokens, global_batch} or {tokens, "
                             "global_batch_tokens} or {tokens, from, to}")
    elif isinstance(item, list | tuple) and len(item) == 2:
        tokens, start = item
        end = start
    elif isinstance(item, str) and item.count(":") == 1:
        tokens, batch = item.split(":")
        start, _, end = batch.strip().partition("-") if "-" in batch.strip()[1:] else (batch, "", batch)
    else:
        raise InputError(FIELD, whole, FORMS)
    return _checked(tokens, _batch(start, whole), _batch(end, whole), item.strip() if isinstance(item, str) else "",
                    whole)


def _checked(tokens: Any, low_end: tuple[Any, bool], high_end: tuple[Any, bool], given: str, whole: Any) -> RampPhase:
    """A phase from its tokens and its two ends, each (batch, in tokens), the batches checked by _batch's rules."""
    try:
        count = units.parse_count(tokens if not isinstance(tokens, str) else tokens.strip(), FIELD)
    except InputError:
        raise InputError(FIELD, whole, f"each phase's tokens a positive count; {FORMS}") from None
    (low, low_tok), (high, high_tok) = (_batch_value(*end, whole) for end in (low_end, high_end))
    if low_tok != high_tok:
        raise InputError(FIELD, whole, "a linear phase gives both ends in one unit (sequences, or tokens: 'tok')")
    if high < low:  # FROM = TO is answered as the constant phase (wave 18, tests/test_hostile_w18.py test_1)
        raise InputError(FIELD, whole, "a linear phase does not shrink its batch: FROM-TO with FROM at most TO")
    return RampPhase(count, low, high, low_tok, given)


def _shown(phase: RampPhase) -> str:
    """A hand-built phase as a refusal quotes it: its values' text (its given text is not yet checked)."""
    try:
        return phase.text()
    except (TypeError, ValueError):  # RampPhase('1B', ...): values that are not numbers
        return f"{phase.tokens}:{phase.start}-{phase.end}"


def _long_text(value: str) -> None:
    """Text past schema.types.MAX_TEXT (up to MAX_RAMP_TEXT), checked as
    schema.types.name checks a name (schema.unseen_text, before trimming: wave 20's rule; this check was ASCII-only
    and let a bidirectional override, a zero-width space or a C1 control through, or refused it as a bad count)."""
    first = next((at for at, char in enumerate(value) if unseen(char)), None)
    if first is not None:  # quoted as 40 characters around it (the web API cuts a quoted value at 80)
        start = max(0, first - 20)
        raise InputError(FIELD, ("..." if start else "") + value[start:start + 40] +
                         ("..." if start + 40 < len(value) else ""), UNSEEN_REFUSAL)


RAMP_LIST = ListRule(FIELD, FORMS, "phases", lambda item: _phase(item, item), MAX_PHASES, distinct=False)
"""--batch-ramp's phases (schema.list_field's rules: an empty phase refused naming its position); a sequence, so a
phase given twice is not refused: it runs twice, in order."""


def parse_batch_ramp(value: Any, info=None) -> tuple[RampPhase, ...]:
    """The phases of --batch-ramp text, a list of texts / pairs / mappings, or phases already parsed."""
    if value is None:
        return ()
    quoted = None
    if isinstance(value, str) and value.strip():
        if len(value.strip()) > MAX_RAMP_TEXT:
            raise InputError(FIELD, value.strip()[:40] + "...", f"is longer than {MAX_RAMP_TEXT} characters; give "
                             "a list of phases (a plan file, the APIs)")
        if len(value) <= T.MAX_TEXT:  # unseen characters refused, before the phases are read
            T.name(value, info)
        else:
            _long_text(value)
    elif isinstance(value, list | tuple) and value and all(isinstance(item, RampPhase) for item in value):
        quoted = ",".join(_shown(item) for item in value)  # a refusal quotes the phases' text, not the dataclass
        # repr (review of wave 18, N6)
    return read_list(value, RAMP_LIST, quoted)


BatchRamp = Annotated[T.typed(tuple[RampPhase, ...], parse_batch_ramp, {"anyOf": [
    {"type": "string", "maxLength": MAX_RAMP_TEXT}, {"type": "array", "maxItems": MAX_PHASES}]}),
                      PlainSerializer(lambda phases: ",".join(p.text() for p in phases), return_type=str)]


class BatchRampFields(JobInputs):
    """--batch-ramp and its checks against the steady batch, the tokens and the time mode."""

    batch_ramp: Annotated[BatchRamp | None, V.field(
        None, "Smaller global batches before the steady one (--global-batch / --global-batch-tokens): phases "
        "TOKENS:BATCH in order, the batch in sequences, in tokens with 'tok', or linear FROM-TO, e.g. "
        "469B:3072-15360 (DeepSeek-V3) or 252M:4Mtok,2.618T:8Mtok (Llama 3 405B). Each phase is timed on the chosen "
        "layout (planner/batch_ramp.py); needs a predicted time (--mfu predicted, plan).", "none")]

    @model_validator(mode="after")
    def _ramp_rules(self) -> "BatchRampFields":
        if not self.batch_ramp:
            return self
        text = typed_text(self.batch_ramp)
        if not getattr(self, "time_predicted", True):
            if getattr(self, "mfu", None) == "predicted":  # not predicted with --mfu predicted: --gpus and --days
                return self  # given too, which TrainingInputs._two_of_three refuses ('give at most two'), not this
                # rule's 'give --mfu predicted' (wave 18; review N5)
            raise InputError(FIELD, text, "is timed by the step model on the chosen layout: give --mfu predicted "
                             "(a given or solved MFU is the run's average already)")
        seq_len = int(getattr(self, "seq_len"))
        steady = self.target_batch(seq_len)  # type: ignore[attr-defined]
        for phase in self.batch_ramp:  # phases are lengths in training order; a later phase may run a smaller
            # batch ('2B:512,1B:64'): Megatron-Core's --step-batch-size-schedule checks only its first threshold 0,
            # strictly growing thresholds and batches > 0 (num_microbatches_calculator.py@core_v0.18.0 L536-556), so
            # 512 then 64 runs; the time is a sum over phases, whatever their order (review of wave 18, M1)
            low, high = (x / (seq_len if phase.in_tokens else 1) for x in (phase.start, phase.end))
            if low < 1:
                raise InputError(FIELD, text, f"each phase's batch holds at least one sequence of --seq-len "
                                 f"{seq_len:,} tokens")
            if phase.tokens < low * seq_len:  # review w16 R6 N3: '1:1' or '0.5:512' was answered x1.000
                raise InputError(FIELD, text, f"each phase trains at least one step of its batch: "
                                 f"{phase.given or phase.text()} is {phase.tokens:,.6g} tokens, one step of "
                                 f"{low:,.6g} sequences x {seq_len:,} tokens is {low * seq_len:,.6g}")
            if low >= steady or high > steady:
                raise InputError(FIELD, text, f"each phase's batch must be below the steady batch ({steady:,.6g} "
                                 f"sequence{'' if steady == 1 else 's'} of {seq_len:,} tokens: --global-batch / "
                                 "--global-batch-tokens)")
        ramp_tokens = sum(p.tokens for p in self.batch_ramp)
        tokens = float(getattr(self, "tokens"))
        if ramp_tokens >= tokens:
            raise InputError(FIELD, text, f"the phases' tokens ({ramp_tokens:,.4g}) must be fewer than --tokens "
                             f"({tokens:,.4g}): the rest runs at the steady batch")
        return self

    def ramp_phases(self) -> list[tuple[float, float]]:
        """(tokens, global batch in sequences) steps of the ramp, in order; [] without one."""
        seq_len = int(getattr(self, "seq_len"))
        return [step for phase in (self.batch_ramp or ()) for step in phase.sequences(seq_len)]
