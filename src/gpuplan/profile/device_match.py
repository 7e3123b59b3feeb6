"""Which hardware-catalog entry is the GPU that torch reports? (stdlib only)

``torch.cuda.get_device_name()`` returns the driver's product string, e.g.
"NVIDIA H100 80GB HBM3" (SXM5), "NVIDIA H100 PCIe", "NVIDIA A100-SXM4-40GB",
"NVIDIA A100 80GB PCIe", "NVIDIA H200", "NVIDIA GeForce RTX 4090", "Tesla V100-SXM2-32GB",
"AMD Instinct MI300X". The family is read from the name; the variant (PCIe / NVL / SXM) from
the name; 40 GB vs 80 GB from the name or, failing that, from the memory torch reports.
A name that matches no catalog entry gives None: the trial then reports MFU as unknown
rather than guessing a peak (torchtitan's fallback to the A100 peak is what makes its MFU
wrong on unknown parts, AMD-AGI/Primus#772).
"""

from __future__ import annotations

import re

# (family regex on the upper-cased name, resolver(form, big_memory) -> catalog id or None).
# Order matters: longer family names first (A10G before A10, L40S before L4, GB200 before B200).
_FAMILIES: tuple[tuple[str, object], ...] = (
    (r"\bH100\b", lambda form, big: {"pcie": "h100-pcie", "nvl": "h100-nvl"}.get(form, "h100-sxm")),
    (r"\bH200\b", lambda form, big: "h200-sxm"),
    (r"\bH800\b", lambda form, big: "h800-sxm"),
    (r"\bH20\b", lambda form, big: "h20"),
    (r"\bA100\b", lambda form, big: f"a100-{'pcie' if form == 'pcie' else 'sxm4'}-{'80' if big else '40'}gb"),
    (r"\bA800\b", lambda form, big: "a800-sxm4-80gb"),
    (r"\bA10G\b", lambda form, big: "a10g"),
    (r"\bA10\b", lambda form, big: "a10"),
    (r"\bL40S\b", lambda form, big: "l40s"),
    (r"\bL4\b", lambda form, big: "l4"),
    (r"\bGB200\b", lambda form, big: "gb200"),
    (r"\bB200\b", lambda form, big: "b200"),
    (r"\bB300\b", lambda form, big: "b300"),
    (r"\bV100\b", lambda form, big: "v100-sxm2-32gb" if big else None),  # the 16 GB V100 is not catalogued
    (r"\bRTX\s*4090\b", lambda form, big: "rtx-4090"),
    (r"\bRTX\s*3090\b", lambda form, big: "rtx-3090"),
    (r"\bMI355X\b", lambda form, big: "mi355x"),
    (r"\bMI325X\b", lambda form, big: "mi325x"),
    (r"\bMI300X\b", lambda form, big: "mi300x"),
    (r"\bMI250X\b", lambda form, big: "mi250x"),
)
# "big memory" threshold per family where two sizes exist: A100 40/80 GB, V100 16/32 GB.
_BIG_GIB = {"A100": 60, "V100": 24}


def catalog_gpu_for(device_name: str, total_memory_bytes: float | None = None) -> str | None:
    """The hardware-catalog id for a torch device name, or None when it is not catalogued."""
    name = device_name.upper().replace("-", " ").replace("_", " ")
    form = "pcie" if "PCIE" in name else ("nvl" if re.search(r"\bNVL\b", name) else "sxm")
    size = re.search(r"\b(\d+)\s*GB\b", name)
    for pattern, resolve in _FAMILIES:
        if not re.search(pattern, name):
            continue
        threshold = next((gib for family, gib in _BIG_GIB.items() if family in pattern), 0)
        if size:
            big = int(size.group(1)) >= threshold
        elif total_memory_bytes:
            big = total_memory_bytes / 2**30 >= threshold
        else:
            big = True
        return resolve(form, big)  # type: ignore[operator]
    return None
