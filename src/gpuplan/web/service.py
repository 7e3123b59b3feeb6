"""What one API request does, framework-free: check the model, run the estimator, translate
the labels, attach the chart series, and return plain JSON data.

A model is a catalog name only — a path would let a request read the server's files — or a
pasted config.json, checked here and handed to the estimator as a private temporary file.
Results are kept in a small LRU cache keyed by the request, so a shared link, a language switch
or a re-run answers at once.
"""

from __future__ import annotations

import json
import logging
import math
import re
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gpuplan.errors import InputError
from gpuplan.jobs import JOBS

CACHE_SIZE = 64
_log = logging.getLogger(__name__)
# A pasted config may not ask for more layers or experts than this: the adapter builds per-layer
# tuples, so a config with 10^9 layers would hold the server. The largest catalog model has 126
# layers (Llama 3.1 405B) and 256 experts (DeepSeek-V3).
MAX_CONFIG_LAYERS = 10_000
MAX_CONFIG_EXPERTS = 100_000
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers")
EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")
# What the adapter may raise on a malformed (untrusted) config besides InputError.
CONFIG_ERRORS = (TypeError, ValueError, KeyError, AttributeError, IndexError, ArithmeticError)


class _LRU:
    def __init__(self, size: int) -> None:
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._size, self._lock = size, threading.Lock()

    def get(self, key: str) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return None

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


_CACHE = _LRU(CACHE_SIZE)


def plain(value: Any) -> Any:
    """JSON-ready data: numpy scalars to Python numbers, NaN/inf to None, tuples to lists."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float) or hasattr(value, "dtype"):
        if hasattr(value, "tolist"):
            return plain(value.tolist())
        return float(value) if math.isfinite(value) else None
    return str(value)


def estimate(name: str, body: dict[str, Any], lang: str = "en") -> dict[str, Any]:
    """The Report of estimator ``name`` for a request body (field -> raw value, plus an optional
    ``config`` mapping) as ``Report.to_dict()`` with ``charts`` and ``lang`` added."""
    from gpuplan.report.i18n import check_lang, translate_report
    from gpuplan.report.plots import chart_series

    lang = check_lang(lang)
    key = json.dumps([name, lang, body], sort_keys=True, default=repr)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    report = run(name, body)
    result = plain(translate_report(report, lang).to_dict())
    result |= {"charts": plain(chart_series(report)), "lang": lang}
    _CACHE.put(key, result)
    return result


def catalog(kind: str, search: str | None, lang: str = "en") -> dict[str, Any]:
    """The model or GPU catalog listing (``gpuplan catalog models|gpus``) as JSON data."""
    from gpuplan.jobs.catalog.listing import gpu_catalog_report, model_catalog_report
    from gpuplan.report.i18n import check_lang, translate_report

    lang = check_lang(lang)
    key = json.dumps(["catalog", kind, search, lang])
    cached = _CACHE.get(key)
    if cached is None:
        report = (model_catalog_report if kind == "models" else gpu_catalog_report)(search)
        cached = plain(translate_report(report, lang).to_dict()) | {"charts": {}, "lang": lang}
        _CACHE.put(key, cached)
    return cached


def run(name: str, body: dict[str, Any]):
    """Run estimator ``name`` on ``body``; InputError on bad input (with no server path in it).

    An arithmetic failure inside an estimator (a zero degree, an exponent that overflows on an
    absurd count) is a value no parser refused yet: it is answered as bad input naming the
    values given, never as a server error, and logged with its traceback for the maintainers."""
    try:
        return _run(name, body)
    except ArithmeticError as exc:
        _log.warning("estimator %s failed on %r", name, body, exc_info=True)
        given = {k: v for k, v in body.items() if k != "config" and v not in (None, "")}
        raise InputError("inputs", given, f"no result for these values ({type(exc).__name__}: {exc}); "
                         "check for a zero degree or an extreme count") from None


def _run(name: str, body: dict[str, Any]):
    job = JOBS[name]
    raw = {k: v for k, v in body.items() if k != "config" and v is not None}
    config = body.get("config")
    if config is None:
        if raw.get("model") not in (None, ""):
            from gpuplan.catalog import model_entry

            raw["model"] = model_entry(str(raw["model"]))["id"]
        return job.run(job.schema.parse(raw))
    if raw.get("model") not in (None, "") or raw.get("params") not in (None, ""):
        raise InputError("config", "config.json", "give a catalog model, a parameter count or a pasted "
                         "config.json, not two of them")
    with pasted_config(config) as path:
        raw["model"] = str(path)
        try:
            return job.run(job.schema.parse(raw))
        except InputError as exc:
            raise _without_path(exc, path) from None


def check_config(config: Any) -> None:
    """Raise InputError unless ``config`` reads as a Hugging Face config.json within limits."""
    from gpuplan.adapters.hf_config import model_spec_from_hf_config, text_config

    if not isinstance(config, dict):
        raise InputError("config", type(config).__name__, "expected a JSON object (a config.json)")
    text = text_config(config)
    for keys, limit in ((LAYER_KEYS, MAX_CONFIG_LAYERS), (EXPERT_KEYS, MAX_CONFIG_EXPERTS)):
        for key in keys:
            value = text.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool) and value > limit:
                raise InputError(f"config.json: {key}", value, f"must be at most {limit:,} here")
    try:
        model_spec_from_hf_config(config, name="pasted-config")
    except InputError:
        raise
    except CONFIG_ERRORS as exc:
        raise InputError("config", "config.json", f"could not be read as a Hugging Face config.json "
                         f"({type(exc).__name__}: {exc})") from None


@contextmanager
def pasted_config(config: dict[str, Any]) -> Iterator[Path]:
    """The checked config written to a private temporary folder (removed afterwards)."""
    check_config(config)
    with tempfile.TemporaryDirectory(prefix="gpuplan-config-") as folder:
        path = Path(folder) / f"{config_name(config)}.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        yield path


def config_name(config: dict[str, Any]) -> str:
    """A file-name-safe model name for a pasted config: its _name_or_path, else model_type."""
    name = str(config.get("_name_or_path") or config.get("model_type") or "pasted-config")
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", name.rsplit("/", 1)[-1]).strip(".-")[:60]
    return name or "pasted-config"


def _without_path(exc: InputError, path: Path) -> InputError:
    """The same error with the temporary file's path replaced by 'config.json'."""
    def clean(text: Any) -> Any:
        if not isinstance(text, str):
            return text
        return text.replace(str(path), "config.json").replace(str(path.parent), "config.json")

    return InputError(clean(exc.field), clean(exc.value), clean(exc.expected))
