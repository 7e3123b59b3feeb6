"""Which precision a trial runs in on a CPU: bf16 only where the CPU computes it natively.

A CPU without native bf16 arithmetic emulates it: on an AVX2-only AMD EPYC (torch 2.13 CPU) a
512x512 @ 512x2048 matmul took 17.7 ms in fp32 and 4,491 ms in bf16 (measured, 250x), so the README's
pythia-70m trial ran past 10 minutes. When the precision was not stated, a CPU trial without native
bf16 runs in fp32 and says so; a stated ``--precision bf16`` runs as asked, with a warning. CUDA is
never changed.

Native bf16 is read from ``torch.cpu.get_capabilities()`` (public, in torch/cpu/__init__.py's
``__all__``, torch 2.13; cpuinfo's flags): x86 AVX512-BF16 or AMX-BF16 (oneDNN's bf16 GEMM paths),
ARM64 bf16 / SVE-bf16 (BFDOT/BFMMLA).
"""

from __future__ import annotations

from dataclasses import dataclass

NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16", "sve_bf16")
"""torch.cpu.get_capabilities() keys naming native bf16 arithmetic (x86: AVX512-BF16, AMX; ARM64)."""
EMULATED = "bf16 is emulated on this CPU (no AVX512-BF16 / AMX / ARM bf16)"


@dataclass(frozen=True)
class PrecisionChoice:
    """The precision the trial ran in, whether the user stated it, and why (one line)."""

    precision: str
    stated: bool
    reason: str
    warning: str | None = None


def cpu_has_native_bf16(torch) -> bool | None:
    """True/False from torch's CPU capability flags; None where torch cannot say (no get_capabilities)."""
    get = getattr(getattr(torch, "cpu", None), "get_capabilities", None)
    if get is None:
        return None
    try:
        caps = get()
    except Exception:  # noqa: BLE001 - an unreadable capability table is 'unknown', never a failed trial
        return None
    return any(bool(caps.get(flag, False)) for flag in NATIVE_BF16_FLAGS)


def choose_precision(precision: str, stated: bool, device_type: str, native_bf16: bool | None) -> PrecisionChoice:
    """The trial's precision on ``device_type``: unstated bf16 on a CPU without native bf16 -> fp32."""
    if device_type != "cpu" or precision != "bf16" or native_bf16 is not False:
        why = "stated" if stated else "the default"
        if device_type == "cpu" and precision == "bf16" and native_bf16:
            why += "; this CPU computes bf16 natively"
        return PrecisionChoice(precision, stated, why)
    if stated:
        return PrecisionChoice("bf16", True, "stated", f"{EMULATED}: --precision bf16 runs as asked but slowly "
                               "(a matmul can take 100x its fp32 time); leave --precision out for fp32")
    return PrecisionChoice("fp32", False, f"{EMULATED}: fp32 (state --precision bf16 to run it anyway)")
