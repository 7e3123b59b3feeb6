"""Turn what a user typed (a catalog name, a config.json path, a bare parameter count, a GPU
name) into core specs. The only place that decides how a model or GPU name is looked up."""

from __future__ import annotations

from pathlib import Path

from gpuplan.core.hardware import Accelerator
from gpuplan.core.model import ModelSpec
from gpuplan.core.units import parse_count
from gpuplan.errors import InputError


def resolve_model(model: str | None = None, params: str | float | None = None) -> ModelSpec:
    """A catalog id, a config.json (or folder holding one), or a bare parameter count."""
    from gpuplan.adapters import hf_config
    from gpuplan.catalog import load_model

    if model and params:
        raise InputError("model/params", f"{model} / {params}", "give either a model or --params, not both")
    if params is not None:
        return hf_config.generic_dense_spec(parse_count(params, "params"))
    if not model:
        raise InputError("model", model, "give a catalog name (see `gpuplan catalog models`), "
                         "a config.json path, or --params such as 7B")
    path = Path(model)
    if model.endswith(".json") or path.is_dir() or path.is_file():
        config = hf_config.load_hf_config(path)
        return hf_config.model_spec_from_hf_config(config, name=path.stem if path.is_file() else path.name,
                                                   source=str(path))
    return load_model(model)


def resolve_gpu(gpu: str) -> Accelerator:
    from gpuplan.catalog import load_accelerator

    return load_accelerator(gpu)
