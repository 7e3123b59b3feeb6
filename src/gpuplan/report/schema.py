"""The inputs of ``gpuplan report``: a plan file and where the documents go."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema

from gpuplan.errors import InputError
from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V
from gpuplan.schema.base import JobInputs

SECTIONS = ("budget", "memory", "plan", "inference")
DEFAULT_SECTIONS = ("budget", "memory", "plan")


def _sections(value: Any, info) -> tuple[str, ...]:
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    chosen = tuple(dict.fromkeys(str(part).strip().lower() for part in items))
    if not chosen or any(s not in SECTIONS for s in chosen):  # '' too: 'budget,,memory' as --gpus '8,,16' is refused
        raise InputError("sections", value, f"comma-separated names from {', '.join(SECTIONS)}")
    return chosen


def _plan_path(value: Any, info) -> str:
    """The plan file as the user named it: a name with a control character (a tab) is a file name the shell can
    pass, and train / infer / memory / plan read such a plan, naming it escaped in refusals (adapters.plan_file.
    refusals_name, errors.printable); report refused it (wave 14) though it writes only to --out / --markdown,
    never a file named after the plan, and its document shows the name escaped (commands.report). Text without
    control characters reads as T.Name does (trimmed); with one, it is kept as typed, since trimming would name
    another file (T.name's ``controls``)."""
    return T.name(value, info, controls=True)


PlanPath = Annotated[str, BeforeValidator(_plan_path), WithJsonSchema({"type": "string", "maxLength": T.MAX_TEXT})]


class ReportInputs(JobInputs):
    """What to report and where to write it."""

    plan: Annotated[PlanPath, V.field(..., "A plan file (.yaml/.yml/.toml) with the fields of gpuplan train, "
                                         "memory, plan (and serving fields for inference).")]
    out: V.Out
    markdown: Annotated[T.Name | None, V.field(None, "Also write Markdown here; its plots go to a <name>-plots "
                                                     "folder beside it.", "none")]
    lang: Annotated[T.choice("en", "zh"), V.field("en", "Language of labels and messages: en or zh.")]
    sections: Annotated[T.typed(tuple[str, ...], _sections, {"type": "string"}) | None, V.field(
        None, "Comma-separated from budget, memory, plan, inference.", "budget,memory,plan (+inference with "
        "serving fields)")]
    plots: Annotated[T.Bool, V.field(True, "Draw the plots (needs the plot extra: matplotlib).")]
