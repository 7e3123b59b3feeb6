"""English and Chinese labels and messages for the web page and ``gpuplan report --lang zh``.

The catalogs are the page's own JSON files (``gpuplan/web/static/i18n/{en,zh}.json``), so the
page and the CLI show the same words. Only words change: numbers, units and formulas are left
as the report formatted them. A report is translated by line key where the label is fixed, and
by leading phrase where it carries a number ("Memory per GPU (dp 8 x tp 1 ...)" keeps its
parenthesis); anything without a translation stays in English.

Stdlib only; nothing is read until a language is asked for.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from functools import cache
from importlib import resources
from typing import Any, Callable

from gpuplan.errors import InputError

LANGS = ("en", "zh")
DEFAULT_LANG = "en"


def check_lang(lang: str | None) -> str:
    """``lang`` lower-cased, or InputError naming the valid choices."""
    value = (lang or DEFAULT_LANG).strip().lower()
    if value not in LANGS:
        raise InputError("lang", lang, f"must be one of {', '.join(LANGS)}")
    return value


@cache
def catalog(lang: str) -> dict[str, Any]:
    """The whole message catalog of ``lang`` (parsed JSON)."""
    path = resources.files("gpuplan.web") / "static" / "i18n" / f"{check_lang(lang)}.json"
    return json.loads(path.read_text(encoding="utf-8"))


def translator(lang: str) -> Callable[..., str]:
    """``t("messages.wrote", path="x")``: the ``lang`` text of a dotted key, formatted; falls back
    to English, then to the key itself."""
    chosen, english = catalog(lang), catalog(DEFAULT_LANG)

    def t(key: str, **values: Any) -> str:
        text = _lookup(chosen, key)
        if text is None:
            text = _lookup(english, key)
        if text is None:
            return key
        return text.format(**values) if values else text

    return t


def _lookup(tree: dict[str, Any], key: str) -> str | None:
    node: Any = tree
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, str) else None


def phrase(text: str, lang: str) -> str:
    """Translate a title or label: a pattern with ``{}`` slots that matches the whole text (the
    slots, numbers mostly, are carried over), else an exact phrase, else the longest known
    leading phrase (the rest is kept); otherwise ``text`` unchanged."""
    if lang == DEFAULT_LANG or not text:
        return text
    for pattern, target in _patterns(lang):
        match = pattern.fullmatch(text)
        if match:
            return target.format(*match.groups())
    phrases: dict[str, str] = catalog(lang).get("phrases", {})
    if text in phrases:
        return phrases[text]
    best = max((p for p in phrases if "{}" not in p and text.startswith(p)), key=len, default=None)
    if not best:
        return text
    rest = text[len(best):]
    return phrases[best] + (rest.lstrip() if phrases[best].endswith(("：", "，")) else rest)


@cache
def _patterns(lang: str) -> tuple[tuple[re.Pattern[str], str], ...]:
    """The catalog's ``{}`` phrases as regular expressions, most specific (longest) first."""
    phrases = [(k, v) for k, v in catalog(lang).get("phrases", {}).items() if "{}" in k]
    phrases.sort(key=lambda kv: len(kv[0].replace("{}", "")), reverse=True)
    return tuple((re.compile("(.+?)".join(re.escape(part) for part in k.split("{}")), re.S), v)
                 for k, v in phrases)


def translate_report(report, lang: str):
    """A copy of ``report`` (gpuplan.report.model.Report) with labels and titles in ``lang``.

    Keys, values, units, display texts, formulas, sources and notes are unchanged, so the
    numbers are the same in every language.
    """
    lang = check_lang(lang)
    if lang == DEFAULT_LANG:
        return report
    table = catalog(lang)
    lines, inputs, assumptions = table.get("lines", {}), table.get("inputs", {}), table.get("assumptions", {})
    columns = table.get("columns", {})

    def line(item, names: dict[str, str]):
        return replace(item, label=names.get(item.key) or phrase(item.label, lang))

    return replace(
        report,
        title=phrase(report.title, lang),
        inputs=tuple(line(item, inputs) for item in report.inputs),
        assumptions=tuple(line(a, assumptions) for a in report.assumptions),
        sections=tuple(replace(s, title=phrase(s.title, lang), lines=tuple(line(x, lines) for x in s.lines))
                       for s in report.sections),
        tables=tuple(replace(t, title=phrase(t.title, lang), columns=tuple(columns.get(c, c) for c in t.columns))
                     for t in report.tables),
    )
