"""The inputs of ``gpuplan report``: a plan file and where the documents go."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema

from gpuplan.errors import InputError
from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V
from gpuplan.schema.base import JobInputs
from gpuplan.schema.list_field import ListRule, list_schema, read_list

SECTIONS = ("budget", "memory", "plan", "inference")
DEFAULT_SECTIONS = ("budget", "memory", "plan")


def _section(name: Any) -> str:
    """One entry of --sections: a section's name, any case."""
    if not isinstance(name, str) or name.strip().lower() not in SECTIONS:  # trimmed as a one-word choice is
        raise InputError("sections", name, f"comma-separated names from {', '.join(SECTIONS)}")
    return name.strip().lower()


SECTION_LIST = ListRule("sections", f"comma-separated names from {', '.join(SECTIONS)}", "sections", _section,
                        len(SECTIONS))
"""--sections' list (schema.list_field's rules): 'budget,' names its empty entry, 'budget,budget' the name given
twice (it was kept once, silently)."""


def _sections(value: Any, info) -> tuple[str, ...]:
    return read_list(value, SECTION_LIST)


SECTIONS_SCHEMA = list_schema({"type": "string"}, len(SECTIONS), 200)


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
    sections: Annotated[T.typed(tuple[str, ...], _sections, SECTIONS_SCHEMA) | None, V.field(
        None, "Comma-separated from budget, memory, plan, inference.", "budget,memory,plan (+inference with "
        "serving fields)")]
    plots: Annotated[T.Bool, V.field(True, "Draw the plots (needs the plot extra: matplotlib).")]
