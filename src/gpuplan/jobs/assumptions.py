"""Assumption lines more than one training job shows the same way (train, plan, memory)."""

from __future__ import annotations

from gpuplan.report.model import Assumption


def mtp_assumption(mtp_layers: int, given: bool) -> tuple[Assumption, ...]:
    """The MTP modules trained (core.model.mtp), where there are any or the user set them."""
    from gpuplan.core.model.mtp import MTP_SOURCE

    if not mtp_layers and not given:
        return ()
    return (Assumption("mtp_layers", "MTP modules trained", mtp_layers, MTP_SOURCE, "--mtp-layers", given),)


def compile_assumption(inputs) -> tuple[Assumption, ...]:
    """How torchtitan runs its blocks (core.time.titan_ops): shown under --framework torchtitan or
    when --compile is given (the schema refuses it elsewhere)."""
    if inputs.framework != "torchtitan" and not inputs.compile:
        return ()
    value = ("torch.compile per TransformerBlock, model and loss (Inductor's fused kernels)" if inputs.compile
             else "eager (no torch.compile)")
    return (Assumption("compile", "torch.compile", value, "torchtitan CompileConfig (enable False, components "
                       "model + loss: torchtitan/config/configs.py at b5bcd76); core/time/titan_ops.py",
                       "--compile", "compile" in inputs.given),)
