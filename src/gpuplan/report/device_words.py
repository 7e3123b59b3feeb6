"""A TPU answer's device noun applied at render time (review w17 S2).

schema.tpu_rules.in_device_words rewords a TPU answer's line labels and display texts at source ('chips',
'chip-hours') and sets Report.device_noun to 'chip'; the words a program looks up stay in GPU words there: section
and table titles (budget.estimate finds the 'GPU time' section by title; to_dict keys tables by title), table
columns (the JSON's record keys), formulas, assumption labels and notes. for_display puts the noun into those on a
copy made for the text, Markdown and HTML renderers only (commands.build.emit, report.html.build_documents), never
into the JSON or CSV. A GPU's report (device_noun 'GPU') is returned as it is, so its output is byte-identical.
Units: none.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpuplan.schema.tpu_rules import GPU_WORD  # the one word pattern in_device_words rewords the lines by


def for_display(report: Any) -> Any:
    """``report`` with its title, section titles, formulas, table titles and columns, assumption labels and values,
    and notes in its device_noun (the answer-first view's summary_table / summary_columns follow the table's words;
    assumption sources are quotations and cited files, kept as written); any report whose noun is 'GPU' (or that
    has none): ``report`` itself."""
    noun = getattr(report, "device_noun", "GPU")
    if noun == "GPU":
        return report

    def w(text):
        return GPU_WORD.sub(noun, text) if isinstance(text, str) else text

    return replace(
        report,
        title=w(report.title),
        sections=tuple(replace(s, title=w(s.title), lines=tuple(replace(line, formula=w(line.formula))
                                                                  for line in s.lines)) for s in report.sections),
        tables=tuple(replace(t, title=w(t.title), columns=tuple(w(c) for c in t.columns)) for t in report.tables),
        assumptions=tuple(replace(a, label=w(a.label), value=w(a.value)) for a in report.assumptions),
        notes=tuple(w(note) for note in report.notes),
        summary_table=w(report.summary_table),
        summary_columns=tuple(w(c) for c in report.summary_columns),
    )
