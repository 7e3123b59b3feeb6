"""Turn what a user typed (a catalog name, a Hugging Face id, a config.json path, a bare
parameter count, a GPU name) into core specs. The only place that decides how a model or GPU
name is looked up, in this order: a catalog id, a catalog model's ``hf_repo``, an existing file
or folder, a Hub id (its config.json fetched), else "not in the catalog" with suggestions."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpuplan.core.hardware import Accelerator
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.units import parse_count
from gpuplan.errors import InputError, printable


def _is_path(model: str) -> bool:
    if model.endswith(".json"):
        return True
    try:
        return Path(model).exists() or Path(model).is_symlink()  # a link loop or dangling link: a path
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return False


def model_config(model: str) -> tuple[dict[str, Any], str, str]:
    """(HF config dict, model name, source) for a catalog name or hf_repo, a config.json (or a
    folder holding one), or a Hub id."""
    from gpuplan.adapters import hub
    from gpuplan.adapters.hf_config import load_hf_config
    from gpuplan.catalog import find_model_entry, model_entry

    entry = find_model_entry(model)
    if entry is not None:
        return entry["config"], entry["id"], entry["config_source"]
    if _is_path(model):
        path = Path(model)
        if path.suffix.lower() in (".yaml", ".yml", ".toml"):
            raise InputError("model", model, "is a plan file, not a model; give a plan file as the command's first "
                             "argument (gpuplan train plan.yaml) and a model as a catalog name or a config.json")
        return _config_file(path, load_hf_config), model_name_of(path), str(path)
    if hub.is_hub_id(model):
        config, where = hub.fetch_config(model)
        return config, model.rsplit("/", 1)[-1], f"huggingface.co/{model} (config.json, cached at {where})"
    entry = model_entry(model)  # raises: not in the catalog, with suggestions
    return entry["config"], entry["id"], entry["config_source"]


def _config_file(path: Path, load) -> dict[str, Any]:
    """``load(path)`` (load_hf_config) of a config.json or a folder's, read once while its bytes are unchanged
    (adapters.read_once: a command looks its model up 3 or more times, each a whole read and check of the file)."""
    from gpuplan.adapters.read_once import read_once

    try:
        file = path / "config.json" if path.is_dir() else path
    except (OSError, ValueError):
        return load(path)
    return read_once(file, "config", lambda: load(path))


def model_name_of(path: Path) -> str:
    """The name a config file's model goes by: the folder of a file called config.json (the
    Hugging Face layout: 'examples/llama-2-7b/config.json' -> 'llama-2-7b', not 'config'), else the
    file's stem ('mistral-7b.json' -> 'mistral-7b'), or a folder's own name."""
    path = Path(path)
    if path.is_file() and path.name.lower() == "config.json" and path.resolve().parent.name:
        name = path.resolve().parent.name
    else:
        name = path.stem if path.is_file() else path.resolve().name
    return printable(name)  # a folder named with ESC sequences wrote them to the terminal in every title


def resolve_model(model: str | None = None, params: str | float | None = None,
                  model_type: str | None = None, *, checkpoint_format: bool = True) -> ModelSpec:
    """A catalog id or hf_repo, a config.json (or folder holding one), a Hub id, or a bare
    parameter count. ``model_type`` reads the config as that type (e.g. an unsupported one as
    'llama')."""
    model = _as_text(model, "model", paths=True)
    model_type = _as_text(model_type, "model_type")  # 5 was read as the config's fault (AttributeError on .strip())
    if model_type is not None and not model_type.strip():  # the schema's words for '' (the CLI, plan files, web)
        raise InputError("model_type", model_type, "must not be empty")
    if model and params:
        raise InputError("model/params", f"{model} / {params}", "give either a model or --params, not both")
    if params is not None:
        from gpuplan.adapters.generic_shape import generic_dense_spec

        return generic_dense_spec(parse_count(params, "params"))
    if not model:
        raise InputError("model", model, "give a catalog name (see `gpuplan catalog models`), "
                         "a Hugging Face id, a config.json path, or --params such as 7B")
    config, name, source = model_config(model)
    # model_config's dict is shared and read-only (a catalog entry's config, a config.json kept by _config_file): the
    # spec cache finds it by identity, without writing its JSON key (0.65 s a call for a 3.7 MB config.json: a
    # 16-stage campaign resolved it 80 times, 41 s; hostile wave 29). A pasted config (web.service) goes to
    # spec_of_config, keyed by its text.
    return _kept_spec(_Shared(config), name, source, model_type, checkpoint_format)


class _Shared:
    """_kept_spec's key for a config dict that is shared and never changed (resolve_model's): equal only to a key of
    the same object, hashed by its id; the cache holds the key, so the config, and its id is not reused while kept."""

    __slots__ = ("config",)

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Shared) and other.config is self.config

    def __hash__(self) -> int:
        return id(self.config)


SPECS_KEPT = 16
"""ModelSpecs the one spec cache (_kept_spec: pasted and shared configs alike) keeps, least recently used evicted
first (functools.lru_cache: a hit moves its entry to the end, so a hot catalog model outlives one-off pasted configs
and web temp paths): one command or web request
reads its model 5-8 times (the defaults that follow the model, pydantic running a schema's after-validators again
around its own __init__, each estimate stage), each a whole build (wave 8: a pasted config was built 8 times per
request)."""


def spec_of_config(config: dict[str, Any], name: str, source: str = "", model_type: str | None = None, *,
                   checkpoint_format: bool = True) -> ModelSpec:
    """hf_config.model_spec_from_hf_config, kept for the exact config text (its JSON), name, source, model_type and
    checkpoint_format: a ModelSpec is frozen, so the same build answers again; refusals are not kept (raised
    again by the same checks). A config that is no JSON text, is not JSON-native (its text reads back as another
    value: a tuple, a non-text key), or an unhashable other argument, is built each time."""
    try:
        text = json.dumps(config, allow_nan=False)
        hash((name, source, model_type, checkpoint_format))
        native = json.loads(text) == config  # a tuple and its list, {1: x} and {"1": x} share a text (review w9 S1)
    except (TypeError, ValueError, RecursionError):
        native = False
    if not native:  # not JSON-native: built each time, so a refusal (a tuple layer_types) is never a cached build
        return _built_spec(config, name, source, model_type, checkpoint_format)
    return _kept_spec(text, name, source, model_type, checkpoint_format)


@lru_cache(maxsize=SPECS_KEPT)
def _kept_spec(key: str | _Shared, name: str, source: str, model_type: str | None, checkpoint_format: bool
               ) -> ModelSpec:
    """The one spec cache: by the config's JSON text (spec_of_config: a dict is unhashable; a miss builds from the
    text read back, which is the config itself, spec_of_config keeping only a JSON-native one) or by a shared config's
    identity (resolve_model, _Shared). lru_cache is thread-safe: two concurrent misses both build, one is kept."""
    config = key.config if isinstance(key, _Shared) else json.loads(key)
    return _built_spec(config, name, source, model_type, checkpoint_format)


def _built_spec(config: dict[str, Any], name: str, source: str, model_type: str | None,
                checkpoint_format: bool) -> ModelSpec:
    from gpuplan.adapters import hf_config

    return hf_config.model_spec_from_hf_config(config, name=name, source=source, model_type=model_type,
                                               checkpoint_format=checkpoint_format)


def resolve_gpu(gpu: str) -> Accelerator:
    from gpuplan.catalog import load_accelerator

    gpu = _as_text(gpu, "gpu")
    if gpu is None or not gpu.strip():
        raise InputError("gpu", gpu, "give a catalog id or alias (see `gpuplan catalog gpus`), e.g. h100")
    return load_accelerator(gpu)


def _as_text(value: Any, field: str, paths: bool = False) -> str | None:
    """A name as the Python API may pass it: text or None, and with ``paths`` a path object
    (os.PathLike); anything else refused by name (an AttributeError on .strip() before:
    resolve_model(123), resolve_gpu(None))."""
    import os

    if value is None or isinstance(value, str):
        return value
    if paths and isinstance(value, os.PathLike) and isinstance(os.fspath(value), str):
        return os.fspath(value)
    raise InputError(field, type(value).__name__, "expected a name (text)" + (" or a path" if paths else ""))
