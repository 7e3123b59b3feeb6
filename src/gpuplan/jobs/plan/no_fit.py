"""The refusal of a search where layouts exist on the counts searched but none fits the GPU's memory
(jobs.plan.search.search_on: `plan`, and `train --mfu predicted` / `budget` for a deadline), naming the input that
would fix it. It named 'memory: got '4729.8 GiB at best'' (helper H2, s21): memory is not an input. Where --gpus was
given it names --gpus, as train's refusal on a count does (planner.plan.best_plan: 'gpus: got 1024; no layout fits
...'); with none given, the searched range ends below a count that fits (--gpus offered, planner.plan.more_gpus_hint)
or no count fits at all, and the model (or --params) is what is too large for the GPU."""

from __future__ import annotations

from gpuplan.errors import InputError, whole_or
from gpuplan.planner.plan import more_gpus_hint
from gpuplan.schema.base import typed_values


class NoFitInMemory(InputError):
    """A no_fit_refusal: its field is the input to change (gpus, model, params), its cause memory, which
    jobs.plan.offer says of a re-run it refused ('the batch tried ... was refused on memory')."""

    cause = "memory"


def no_fit_refusal(inputs, enough: int | None, what: str, note: str = "") -> InputError:
    """The one line for ``what`` ('no layout fits <GPU> (<memory>) with the 5% margin on N GPUs (at best X GiB a
    GPU)'); ``enough``: the smallest common cluster size that fits (planner.plan.smallest_fitting_count), None where
    none up to 64x the largest count searched does; ``note``: the sequence-split note (planner), '' or '; ...'."""
    given = getattr(inputs, "gpus", None)
    if given:  # plan's counts as written (CountsAsked: '512-4096', '256,512'), train's / budget's one count
        return NoFitInMemory("gpus", _as_given(inputs, "gpus", given), f"{what}; {more_gpus_hint(enough)}{note}")
    if enough is not None:  # none given: the default range stops short of the count that fits
        return NoFitInMemory("gpus", None, f"{what}, the largest count searched without --gpus; "
                             f"{more_gpus_hint(enough)}{note}")
    model, params = getattr(inputs, "model", None), getattr(inputs, "params", None)
    field, value = ("params", _as_given(inputs, "params", params)) if model is None and params is not None else \
        ("model", model)
    size = "fewer parameters" if field == "params" else "a smaller model"
    return NoFitInMemory(field, value, f"{what}, nor on a common cluster size up to 64x as many; give {size}, a GPU "
                         f"with more memory (--gpu) or a shorter sequence (--seq-len){note}")


def _as_given(inputs, name: str, value):
    """``value`` of field ``name`` as the caller wrote it: the text typed (a flag, a quoted plan-file value, a Python
    API string: schema.base.typed_values), else the number ('gpus: 1024' in a file, not '1,024' as CountsAsked
    words it; a whole float as an int, errors.whole_or), else the counts' wording ('256,512')."""
    typed = typed_values(inputs).get(name)
    if isinstance(typed, str):  # a plain whole number unquoted ('gpus: got 1024', as train's), else the text quoted
        return int(typed) if typed.strip().isdigit() else typed.strip()
    if isinstance(value, tuple) and len(value) == 1:
        value = value[0]
    return whole_or(value) if isinstance(value, int | float) else str(value)
