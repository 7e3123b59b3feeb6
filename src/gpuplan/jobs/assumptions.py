"""Assumption lines more than one training job shows the same way (train, plan, memory)."""

from __future__ import annotations

from gpuplan.report.model import Assumption


def mtp_assumption(mtp_layers: int, given: bool) -> tuple[Assumption, ...]:
    """The MTP modules trained (core.model.mtp), where there are any or the user set them."""
    from gpuplan.core.model.mtp import MTP_SOURCE

    if not mtp_layers and not given:
        return ()
    return (Assumption("mtp_layers", "MTP modules trained", mtp_layers, MTP_SOURCE, "--mtp-layers", given),)
