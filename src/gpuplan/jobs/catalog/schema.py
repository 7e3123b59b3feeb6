"""The inputs of ``gpuplan catalog models|gpus``."""

from __future__ import annotations

from typing import Annotated

from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V
from gpuplan.schema.base import JobInputs


class CatalogInputs(JobInputs):
    """A text filter over the catalog."""

    filter: Annotated[T.Name | None, V.field(None, "Case-insensitive text filter (id, name, family).")]
