"""The inputs of ``gpuplan report``: a plan file and where the documents go."""

from __future__ import annotations

from typing import Annotated, Any

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


class ReportInputs(JobInputs):
    """What to report and where to write it."""

    plan: Annotated[T.Name, V.field(..., "A plan file (.yaml/.yml/.toml) with the fields of gpuplan train, "
                                         "memory, plan (and serving fields for inference).")]
    out: V.Out
    markdown: Annotated[T.Name | None, V.field(None, "Also write Markdown here; its plots go to a <name>-plots "
                                                     "folder beside it.", "none")]
    lang: Annotated[T.choice("en", "zh"), V.field("en", "Language of labels and messages: en or zh.")]
    sections: Annotated[T.typed(tuple[str, ...], _sections, {"type": "string"}) | None, V.field(
        None, "Comma-separated from budget, memory, plan, inference.", "budget,memory,plan (+inference with "
        "serving fields)")]
    plots: Annotated[T.Bool, V.field(True, "Draw the plots (needs the plot extra: matplotlib).")]
