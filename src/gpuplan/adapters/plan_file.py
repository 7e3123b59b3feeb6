"""Plan files: the same inputs as the CLI flags, from YAML or TOML.

A plan file is a flat mapping of input names to values (``tokens: 2T``, ``gpu: h100``,
``days: 7``), checked by the job's schema like the flags (unknown keys refused, naming the valid
ones). Reading goes through adapters.files: regular files only, 1 MiB at most, UTF-8, no YAML
aliases, no duplicate keys, bounded nesting.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gpuplan.errors import CAMPAIGN_KEY, STAGES_NULL_TEXT, InputError, null_refusal, printable

PLAN_SUFFIXES = (".yaml", ".yml", ".toml")


def is_plan_file(text: str | None) -> bool:
    return bool(text) and str(text).lower().endswith(PLAN_SUFFIXES)


def read_plan_file(path: str | Path) -> dict[str, Any]:
    """Parse a YAML/TOML plan file into a dict (the keys are checked by the job's schema)."""
    from gpuplan.adapters.files import MAX_BYTES, read_text
    from gpuplan.adapters.plan_formats import parse_toml, parse_yaml

    text = read_text(path, "plan file", MAX_BYTES["plan file"])
    if str(path).lower().endswith(".toml"):
        data = parse_toml(text.removeprefix("\ufeff"), "plan file", path)  # a BOM, as YAML allows it
    else:
        data = parse_yaml(text, "plan file", path)
    if data is None or data == {}:  # empty, comments only, or `null`: nothing was planned
        raise InputError("plan file", str(path), "has no fields; a plan file maps input names to values, e.g. "
                         "model: llama-3.1-8b")
    if not isinstance(data, dict):
        raise InputError("plan file", str(path), "expected a mapping of input names to values")
    from gpuplan.schema.base import key_refusal  # the schema's words (session 25)

    for odd in (key for key in data if not isinstance(key, str)):  # YAML's `1: 2` / `true: x` at the top level
        raise key_refusal(odd, data[odd], str(path))
    empty = next((key for key, value in data.items() if value is None), None)
    if empty == CAMPAIGN_KEY:  # a campaign's list (docs/campaign.md), which has no default (review s20 N13)
        raise InputError(f"{path}: {empty}", "null", STAGES_NULL_TEXT)
    if empty is not None:  # `gpus:` with nothing after it, or `gpus: null`: not the default in disguise
        raise null_refusal(empty, str(path))
    return data


@contextmanager
def refusals_name(where: str | None) -> Iterator[None]:
    """A job run on inputs read from the plan file ``where`` (None: flags only): any InputError raised inside
    names the file before its field ('error: p.yaml: quantization: ...'), as the schema's own refusals of those
    inputs do (schema.base.input_error's prefix), whichever later check raised it (a resolver's, a job's) and
    whether the value came from the file or a flag given over it (the schema names the file for both). One
    that names the file already is passed on as it is: its field holds the name as InputError escapes it
    (errors.printable: a tab or ESC in the name reads \\u0009), so the escaped name is what is looked for. The
    one place plan-file refusals get their prefix (commands.build.job_command, commands.report)."""
    try:
        yield
    except InputError as exc:
        if where is None:
            raise
        named = f"{printable(str(where))}: "
        if exc.field.startswith(named):
            raise
        raise exc.retold(named + exc.field, exc.value, exc.expected) from None
