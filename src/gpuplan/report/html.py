"""Self-contained HTML and Markdown documents of one or more Reports with their plots
(``gpuplan report PLANFILE --out report.html [--markdown report.md]``).

The HTML file needs nothing else: styles are inline and each plot is an SVG image embedded as a
data URI. The Markdown file links its plots as SVG files in a folder beside it. Labels come
from :mod:`gpuplan.report.i18n` (``lang``); values, units and formulas are the report's own. Rendering
only: every number is read from the Report.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from html import escape
from typing import Any, Callable

from gpuplan.report.model import Report
from gpuplan.report.render import cell, markdown_table, md_text, range_text, table_markdown

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI","Noto Sans","PingFang SC","Microsoft YaHei",sans-serif;
margin:0 auto;max-width:1100px;padding:1rem 1.5rem;color:#1d2733}
h1{font-size:1.6rem}h2{border-bottom:2px solid #4e79a7;padding-bottom:.2rem;margin-top:2.5rem}
h3{font-size:1.05rem;margin:1.4rem 0 .4rem}table{border-collapse:collapse;width:100%;margin:.3rem 0}
th,td{border:1px solid #d8dee6;padding:.25rem .45rem;text-align:left;vertical-align:top}
th{background:#f1f4f8}td.num{text-align:right}td.formula{color:#5a6775;font-size:.85em}
figure{margin:1rem 0}figure img{max-width:100%;height:auto}figcaption{color:#5a6775;font-size:.9em}
.note{color:#8a5a00}nav a{margin-right:1rem}small{color:#5a6775}
"""


@dataclass(frozen=True)
class Documents:
    """What ``gpuplan report`` writes: the HTML text, the Markdown text, and the Markdown's
    plot files (relative path -> bytes)."""

    html: str
    markdown: str
    images: dict[str, bytes] = field(default_factory=dict)


def build_documents(reports: list[Report], lang: str = "en", plots: bool = True, source: str = "",
                    image_dir: str = "report-plots") -> Documents:
    """Translate ``reports`` into ``lang``, draw their charts (``plots``), and lay out both
    documents. matplotlib is needed only when ``plots`` is true."""
    from gpuplan import __version__
    from gpuplan.report.device_words import for_display
    from gpuplan.report.i18n import check_lang, translate_report, translator

    lang = check_lang(lang)
    t = translator(lang)
    notes: list[str] = []
    figures: list[list[Any]] = [[] for _ in reports]
    if plots:
        figures, note = _draw_all(reports, lang)
        notes += [note] if note else []
    translated = [for_display(translate_report(r, lang)) for r in reports]  # a TPU's titles in chips (device_words)
    title = t("report.document_title", plan=source or "gpuplan")
    intro = t("report.generated", version=__version__, plan=source or "-")
    images = {f"{image_dir}/{i + 1}-{fig.name}.svg": fig.data for i, figs in enumerate(figures) for fig in figs}
    return Documents(html_document(title, intro, translated, figures, t, lang, notes),
                     markdown_document(title, intro, translated, figures, t, notes, image_dir), images)


def _draw_all(reports: list[Report], lang: str):
    """SVG figures per report; Chinese labels only with a CJK font (else English + a note)."""
    from gpuplan.report.i18n import translator
    from gpuplan.report.plots import chart_series, cjk_font, draw

    font = cjk_font() if lang == "zh" else None
    plot_lang = lang if lang == "en" or font else "en"
    note = translator(lang)("messages.no_cjk_font") if plot_lang != lang else ""
    t = translator(plot_lang)
    return [draw(chart_series(r), t, "svg", font) for r in reports], note


# ----------------------------------------------------------------------------- HTML
def html_document(title: str, intro: str, reports: list[Report], figures: list[list[Any]], t: Callable[..., str],
                  lang: str, notes: list[str]) -> str:
    nav = " ".join(f'<a href="#report-{i + 1}">{escape(r.title)}</a>' for i, r in enumerate(reports))
    body = [f"<h1>{escape(title)}</h1>", f"<p><small>{escape(intro)}</small></p>",
            *(f'<p class="note">{escape(n)}</p>' for n in notes),
            f"<nav><strong>{escape(t('report.contents'))}:</strong> {nav}</nav>"]
    for i, (report, figs) in enumerate(zip(reports, figures)):
        body.append(f'<section id="report-{i + 1}">{report_html(report, figs, t)}</section>')
    html_lang = "zh-CN" if lang == "zh" else "en"
    return (f'<!doctype html>\n<html lang="{html_lang}">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")


def report_html(report: Report, figures: list[Any], t: Callable[..., str]) -> str:
    """One report: its plots, inputs, result sections, tables, assumptions and notes."""
    out = [f"<h2>{escape(report.title)}</h2>"]
    for fig in figures:
        uri = f"data:{fig.mime};base64,{base64.b64encode(fig.data).decode('ascii')}"
        out.append(f'<figure data-chart="{escape(fig.name)}"><img alt="{escape(fig.title)}" src="{uri}">'
                   f"<figcaption>{escape(fig.title)}</figcaption></figure>")
    if report.inputs:
        out.append(_html_table(t("report.inputs"), (t("report.input"), t("report.value")),
                               [(line.label, line.display) for line in report.inputs]))
    for section in report.sections:
        rows = [(line.label, line.display, range_text(line), line.formula) for line in section.lines]
        out.append(_html_table(section.title, (t("report.quantity"), t("report.value"), t("report.range"),
                                               t("report.formula")), rows, numeric=(1, 2), formula=3))
    for table in report.tables:
        out.append(_html_table(table.title, table.columns, [tuple(cell(v) for v in row) for row in table.rows]))
    if report.assumptions:
        rows = [(a.label, f"{a.value}" + (f" ({t('report.set')})" if a.user_set else ""), a.source, a.flag)
                for a in report.assumptions]
        out.append(_html_table(t("report.assumptions"), (t("report.assumption"), t("report.value"),
                                                         t("report.source"), t("report.flag")), rows))
    if report.notes:
        items = "".join(f"<li>{escape(n)}</li>" for n in report.notes)
        out.append(f"<h3>{escape(t('report.notes'))}</h3><ul>{items}</ul>")
    return "\n".join(out)


def _html_table(title: str, columns, rows, numeric: tuple[int, ...] = (), formula: int | None = None) -> str:
    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)

    def cell(i: int, value: Any) -> str:
        cls = ' class="num"' if i in numeric else (' class="formula"' if i == formula else "")
        return f"<td{cls}>{escape(str(value))}</td>"

    body = "".join("<tr>" + "".join(cell(i, v) for i, v in enumerate(row)) + "</tr>" for row in rows)
    return f"<h3>{escape(title)}</h3>\n<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# ----------------------------------------------------------------------------- Markdown
def markdown_document(title: str, intro: str, reports: list[Report], figures: list[list[Any]],
                      t: Callable[..., str], notes: list[str], image_dir: str) -> str:
    out = [f"# {md_text(title)}", "", f"_{md_text(intro)}_", ""] + [f"> {md_text(n)}\n" for n in notes]
    for i, (report, figs) in enumerate(zip(reports, figures)):
        out += [f"## {md_text(report.title)}", ""]
        out += [f"![{md_text(fig.title)}]({image_dir}/{i + 1}-{fig.name}.svg)\n" for fig in figs]
        out += report_markdown(report, t)
    return "\n".join(out).rstrip() + "\n"


def report_markdown(report: Report, t: Callable[..., str]) -> list[str]:
    """One report's tables in Markdown, headings in the translator's language (the layout of
    gpuplan.report.render.to_markdown, one heading level down)."""
    out: list[str] = []
    if report.inputs:
        out += markdown_table(t("report.inputs"), (t("report.input"), t("report.value")),
                              [(line.label, line.display) for line in report.inputs])
    for section in report.sections:
        out += markdown_table(section.title, (t("report.quantity"), t("report.value"), t("report.range"),
                                              t("report.formula")),
                              [(line.label, line.display, range_text(line), line.formula) for line in section.lines])
    for table in report.tables:
        out += table_markdown(table)  # md_text formats each value as cell does
    if report.assumptions:
        out += markdown_table(t("report.assumptions"), (t("report.assumption"), t("report.value"), t("report.source"),
                                                        t("report.flag")),
                              [(a.label, f"{a.value}" + (f" ({t('report.set')})" if a.user_set else ""), a.source,
                                f"`{a.flag}`" if a.flag else "") for a in report.assumptions])
    if report.notes:
        out += [f"### {t('report.notes')}", ""] + [f"- {md_text(n)}" for n in report.notes] + [""]
    return out

