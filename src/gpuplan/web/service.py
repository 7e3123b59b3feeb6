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

from gpuplan.errors import InputError, as_typed
from gpuplan.jobs import JOBS

CACHE_SIZE = 64
CACHE_BYTES = 64 << 20
"""Results kept for shared links and language switches: at most 64 MiB of JSON in all."""
CACHE_ENTRY_BYTES = 8 << 20
MAX_RESPONSE_BYTES = 8 << 20
"""A response larger than this is refused (413) instead of sent: lower --top or the GPU counts."""
CALIBRATION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
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
    """Least-recently-used results, bounded by entry count and by total bytes (a result's JSON
    size); a result larger than ``max_entry`` is not kept at all."""

    def __init__(self, size: int, max_bytes: int = CACHE_BYTES, max_entry: int = CACHE_ENTRY_BYTES) -> None:
        self._items: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        self._size, self._max_bytes, self._max_entry = size, max_bytes, max_entry
        self._bytes, self._lock = 0, threading.Lock()

    @property
    def total_bytes(self) -> int:
        return self._bytes

    def get(self, key: str) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][0]
        return None

    def put(self, key: str, value: Any, nbytes: int) -> None:
        if nbytes > self._max_entry:
            return
        with self._lock:
            if key in self._items:
                self._bytes -= self._items.pop(key)[1]
            self._items[key] = (value, nbytes)
            self._bytes += nbytes
            while self._items and (len(self._items) > self._size or self._bytes > self._max_bytes):
                self._bytes -= self._items.popitem(last=False)[1][1]


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


class ResponseTooLarge(Exception):
    """The result would exceed MAX_RESPONSE_BYTES (answered 413)."""


def estimate(name: str, body: dict[str, Any], lang: str = "en", calibration_dir: str | None = None,
             stop: threading.Event | None = None) -> dict[str, Any]:
    """The Report of estimator ``name`` for a request body (field -> raw value, plus an optional
    ``config`` mapping) as ``Report.to_dict()`` with ``charts`` and ``lang`` added. ``stop``: set
    when the request has been answered already; a plan search then stops at its next stage."""
    preload()
    from gpuplan.report.i18n import check_lang, translate_report
    from gpuplan.report.plots import chart_series

    lang = check_lang(lang)
    key = cache_key(name, body, lang, calibration_dir)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    report = run(name, request_limits(body, calibration_dir), stop)
    result = plain(translate_report(report, lang).to_dict())
    result |= {"charts": plain(chart_series(report)), "lang": lang}
    size = len(json.dumps(result))
    if size > MAX_RESPONSE_BYTES:
        raise ResponseTooLarge(f"the response would be {size / 2**20:.1f} MiB, over the {MAX_RESPONSE_BYTES >> 20} MiB "
                               "limit; ask for fewer layouts (top) or GPU counts")
    _CACHE.put(key, result, size)
    return result


WARM_UP = (("training", {"model": "llama-3.1-8b", "gpus": 8}), ("plan", {"model": "llama-3.1-8b", "gpus": 8}),
           ("memory", {"model": "llama-3.1-8b", "gpus": 8}), ("inference", {"model": "llama-3.1-8b"}))
"""Small requests `gpuplan serve` answers before it accepts connections: the first real request
then finds the estimators imported and the catalog read (a cold first plan takes ~1.5 s on 2
cores, and every client asking at that moment waits for it)."""


PRELOAD = ("gpuplan.calibrate", "gpuplan.report.i18n", "gpuplan.report.plots", "gpuplan.catalog",
           "gpuplan.adapters.hf_config", "gpuplan.web.bounds")
"""Modules a request imports on first use. Imported once, under a lock, before the first
estimate: worker threads importing them at once can meet a package half-initialised (two
concurrent first requests with a calibration got ImportError 'partially initialized module
gpuplan.calibrate.report', a 500)."""
_PRELOADED = threading.Event()
_PRELOAD_LOCK = threading.Lock()


def preload() -> None:
    """Import PRELOAD and every job's schema and estimate modules, once per process."""
    if _PRELOADED.is_set():
        return
    import importlib

    with _PRELOAD_LOCK:
        if _PRELOADED.is_set():
            return
        for module in PRELOAD:
            importlib.import_module(module)
        for job in JOBS.values():
            for path in (job.schema_path, job.estimate_path):
                try:
                    importlib.import_module(path.partition(":")[0])
                except ImportError:  # a job this build lacks: its route says so (503)
                    _log.warning("job module %s not importable", path, exc_info=True)
        _PRELOADED.set()


def warm_up() -> None:
    """Run WARM_UP (in both languages); a failure is logged, never fatal."""
    preload()
    for name, body in WARM_UP:
        for lang in ("en", "zh"):
            try:
                estimate(name, body, lang)
            except Exception:  # noqa: BLE001 - the server starts anyway; the request will say what is wrong
                _log.warning("warm-up request %s %r failed", name, body, exc_info=True)


def cache_key(name: str, body: dict[str, Any], lang: str, calibration_dir: str | None) -> str:
    """The result cache's key of a request (the same request in any key order is one key), with the bytes of each
    calibration file it names (web.calibration_files: a rewritten file is not answered from the cache)."""
    from gpuplan.web.calibration_files import calibration_fingerprints

    return json.dumps([name, lang, body, calibration_dir, calibration_fingerprints(body, calibration_dir)],
                      sort_keys=True, default=repr)


def cached(key: str) -> dict[str, Any] | None:
    """A kept result, or None: answered without a slot (web/routes.py)."""
    return _CACHE.get(key)


def request_limits(body: dict[str, Any], calibration_dir: str | None) -> dict[str, Any]:
    """The calibration as a document: the server never opens a path a request names. (The API's
    bounds on the work of a request are checked on the parsed inputs: web/bounds.py, and the
    planner's own search limit, the CLI's too.)"""
    body = dict(body)
    if body.get("calibration") is not None:
        body["calibration"] = calibration_document(body["calibration"], calibration_dir)
    return body


def calibration_document(value: Any, folder: str | None) -> dict[str, Any]:
    """A calibration over HTTP: the JSON document itself, or the name of a file in the folder the
    operator gave (`gpuplan serve --calibration-dir DIR`); never a path."""
    if isinstance(value, dict):
        return value
    from gpuplan.web.calibration_value import calibration_value

    calibration_value(value)  # a type or length the request models refuse, in their words (a campaign's stage too)
    if not isinstance(value, str) or not CALIBRATION_NAME.match(value) or ".." in value:
        raise InputError("calibration", value if isinstance(value, str) else type(value).__name__,
                         "give the calibration JSON document itself, or a file name (letters, digits, '.', '_', "
                         "'-'; no folders) from the server's --calibration-dir")
    if folder is None:
        raise InputError("calibration", value, "this server has no --calibration-dir; send the calibration JSON "
                         "document itself")
    from gpuplan.adapters.files import read_json

    # a name is a regular file of the folder itself: a symbolic link (to /etc/passwd, or out of the
    # folder) is not followed, so a request can never make the server open a path elsewhere
    from gpuplan.web.calibration_files import calibration_candidate

    path = calibration_candidate(folder, value)
    if path is None:
        raise InputError("calibration", value, "no such calibration in the server's --calibration-dir")
    from gpuplan.calibrate.model import calibration_from_dict

    try:
        document = read_json(path, "calibration", follow_links=False)  # checked again on the open descriptor
    except InputError as exc:
        raise InputError("calibration", value, exc.expected.replace(str(path), value)) from None
    calibration_from_dict(document, value)  # a malformed file is named as the request names it (was 'calibration')
    return document


def catalog(kind: str, search: str | None, lang: str = "en") -> dict[str, Any]:
    """The model or GPU catalog listing (``gpuplan catalog models|gpus``) as JSON data."""
    from gpuplan.jobs.catalog.listing import gpu_catalog_report, model_catalog_report
    from gpuplan.report.i18n import check_lang, translate_report

    lang = check_lang(lang)
    key = json.dumps(["catalog", kind, search, lang])
    cached = _CACHE.get(key)
    if cached is None:
        from gpuplan.jobs.catalog.schema import CatalogInputs

        text = CatalogInputs.parse({"filter": search}).filter
        report = (model_catalog_report if kind == "models" else gpu_catalog_report)(text)
        cached = plain(translate_report(report, lang).to_dict()) | {"charts": {}, "lang": lang}
        _CACHE.put(key, cached, len(json.dumps(cached)))
    return cached


def run(name: str, body: dict[str, Any], stop: threading.Event | None = None):
    """Run estimator ``name`` on ``body``; InputError on bad input (with no server path in it).

    An arithmetic failure inside an estimator (a zero degree, an exponent that overflows on an
    absurd count) is a value no parser refused yet: it is answered as bad input naming the
    values given, never as a server error, and logged with its traceback for the maintainers."""
    try:
        return _run(name, body, stop)
    except InputError as exc:  # a later check quoting a converted value: the text sent instead
        raise as_typed(exc, body) from None
    except ArithmeticError as exc:
        _log.warning("estimator %s failed on %r", name, body, exc_info=True)
        given = {k: v for k, v in body.items() if k != "config" and v not in (None, "")}
        raise InputError("inputs", given, f"no result for these values ({type(exc).__name__}: {exc}); "
                         "check for a zero degree or an extreme count") from None


def _run(name: str, body: dict[str, Any], stop: threading.Event | None):
    job = JOBS[name]
    raw = {k: v for k, v in body.items() if k != "config" and v is not None}
    config = body.get("config")
    if raw.get("draft_model") not in (None, ""):  # a catalog name only, as for the model: never a path
        from gpuplan.catalog import model_entry

        try:
            raw["draft_model"] = model_entry(str(raw["draft_model"]))["id"]
        except InputError as exc:
            raise InputError("draft_model", exc.value, exc.expected) from None
    if config is None:
        if raw.get("model") not in (None, ""):
            from gpuplan.catalog import model_entry

            raw["model"] = model_entry(str(raw["model"]))["id"]
        return _report(name, job.schema.parse(raw), stop)
    if raw.get("model") not in (None, "") or raw.get("params") not in (None, ""):
        raise InputError("config", "config.json", "give a catalog model, a parameter count or a pasted "
                         "config.json, not two of them")
    with pasted_config(config, raw.get("model_type")) as path:
        raw["model"] = str(path)
        try:
            return _report(name, job.schema.parse(raw), stop)
        except InputError as exc:
            raise _without_path(exc, path) from None


def _report(name: str, inputs: Any, stop: threading.Event | None):
    """The job's Report for checked inputs; a plan within the API's bounds, its search checking
    ``stop`` between stages."""
    if name != "plan":
        return JOBS[name].run(inputs)
    from gpuplan.jobs.plan.estimate import plan_report
    from gpuplan.web.bounds import check_plan
    from gpuplan.web.limits import Stopped

    check_plan(inputs)

    def checkpoint(done: int, total: int) -> None:
        if stop is not None and stop.is_set():
            raise Stopped(f"plan stopped after {done} of {total} stages: its request was answered already")

    return plan_report(inputs, checkpoint)


def check_config(config: Any, model_type: Any = None):
    """The ModelSpec ``config`` reads as (a Hugging Face config.json within limits, read as ``model_type`` when one
    is given, as --model-type does on the CLI); InputError unless it reads as one. Its quantization_config is left
    to the job, which reads it as the CLI does (not under infer --quantization fp8: a pasted config with a
    malformed one was refused here and answered on the CLI, wave 8); the build is kept
    (adapters.resolve.spec_of_config): the request model's defaults and the service ask for it, once built."""
    from gpuplan.adapters.hf_config import text_config
    from gpuplan.adapters.resolve import spec_of_config

    if not isinstance(config, dict):
        raise InputError("config", type(config).__name__, "expected a JSON object (a config.json)")
    text = text_config(config)
    for keys, limit in ((LAYER_KEYS, MAX_CONFIG_LAYERS), (EXPERT_KEYS, MAX_CONFIG_EXPERTS)):
        for key in keys:
            value = text.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool) and value > limit:
                raise InputError(f"config.json: {key}", value, f"must be at most {limit:,} here")
    try:
        return spec_of_config(config, "pasted-config", model_type=model_type if isinstance(model_type, str)
                              and model_type else None, checkpoint_format=False)
    except InputError:
        raise
    except CONFIG_ERRORS as exc:
        raise InputError("config", "config.json", f"could not be read as a Hugging Face config.json "
                         f"({type(exc).__name__}: {exc})") from None


@contextmanager
def pasted_config(config: dict[str, Any], model_type: Any = None) -> Iterator[Path]:
    """The checked config written to a private temporary folder (removed afterwards)."""
    check_config(config, model_type)
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

    field, value = clean(exc.field), clean(exc.value)
    if field == "model" and value == "config.json":  # the body sent `config`, not `model` (review s21 R3 N10)
        field = "config"
    return exc.retold(field, value, clean(exc.expected))
