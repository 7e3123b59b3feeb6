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


_CHIP = re.compile(r"\bchip(?=s?\b)")
"""'chip' as a word ('chips', 'chip-hours', 'per chip'): a TPU answer's device noun (schema.tpu_rules.device_noun)."""
_ENGLISH_GPU = re.compile(r"(?<=[A-Za-z] )GPU(?=s?\b)")
"""'GPU' after an English word: part of an untranslated English tail."""
_SPACED = re.compile(r"(?<=[\u2e80-\u9fff\uff00-\uffef·]) (?=芯片)|(?<=芯片) (?=[\u2e80-\u9fff\uff00-\uffef·])")
"""The space that set the Latin 'GPU' apart from Chinese characters ('每 GPU 峰值'), dropped beside 芯片."""


def translate_report(report, lang: str):
    """A copy of ``report`` (gpuplan.report.model.Report) with labels and titles in ``lang``.

    Keys, values, units, display texts, formulas, sources and notes are unchanged, so the
    numbers are the same in every language. A TPU's answer (``report.device_noun`` 'chip', set by
    schema.tpu_rules.in_device_words) is translated as its GPU wording would be ('chip' put back to 'GPU': by key
    first, then by phrase), its own XLA labels by the catalog's ``tpu_lines``, and then every 'GPU' in its labels,
    titles and columns reads 芯片 (its own XLA labels: catalog ``tpu_lines``, by English label).
    """
    lang = check_lang(lang)
    if lang == DEFAULT_LANG:
        return report
    table = catalog(lang)
    lines, inputs, assumptions = table.get("lines", {}), table.get("inputs", {}), table.get("assumptions", {})
    columns = table.get("columns", {})
    chip = getattr(report, "device_noun", "GPU") == "chip"
    tpu_lines: dict[str, str] = table.get("tpu_lines", {}) if chip else {}

    def device(text: str) -> str:
        if not chip:
            return text
        text = _ENGLISH_GPU.sub("chip", text)  # an untranslated English tail keeps English words ('worst chip: ...')
        return _SPACED.sub("", text.replace("GPU", "芯片"))

    def line(item, names: dict[str, str]):
        english = _CHIP.sub("GPU", item.label) if chip else item.label
        shown = tpu_lines.get(english) or names.get(item.key) or phrase(english, lang)
        return replace(item, label=item.label if chip and shown == english else device(shown))  # untranslated: as is

    def title(text: str) -> str:
        return device(phrase(_CHIP.sub("GPU", text) if chip else text, lang))

    return replace(
        report,
        title=title(report.title),
        inputs=tuple(line(item, inputs) for item in report.inputs),
        assumptions=tuple(line(a, assumptions) for a in report.assumptions),
        sections=tuple(replace(s, title=title(s.title), lines=tuple(line(x, lines) for x in s.lines))
                       for s in report.sections),
        tables=tuple(replace(t, title=title(t.title), columns=tuple(device(columns.get(c, c)) for c in t.columns))
                     for t in report.tables),
    )
