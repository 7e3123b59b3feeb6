"""The inputs of ``gpuplan validate``."""

from __future__ import annotations

from gpuplan.schema import vocabulary as V
from gpuplan.schema.base import JobInputs


class ValidateInputs(JobInputs):
    """Where to write the accuracy tables (Markdown), if anywhere."""

    out: V.Out
