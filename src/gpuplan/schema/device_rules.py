"""What the named accelerator can run of a training ask, from the hardware catalog: one line naming the field
(InputError) at every door (schema.layout_rules.check_setup calls these for plan, train, budget and memory).

- A training framework on a TPU (catalog vendor Google; catalog/hardware/tpu-*.toml): each of gpuplan's framework
  profiles but ``generic`` models a CUDA / ROCm run. Megatron-Core allocates its buffers on
  ``torch.cuda.current_device()`` (megatron/core/distributed/param_and_grad_buffer.py@core_v0.16.1 L783-806) and
  runs Transformer Engine's CUDA kernels; torchtitan picks its device from torch's available device type, 'cuda'
  when none (torchtitan/tools/utils.py@b5bcd76 L54-57: torch._utils._get_available_device_type knows cuda, xpu,
  mtia and a registered privateuse1 backend, not XLA); DeepSpeed's accelerators are 'cuda', 'cpu', 'xpu', 'npu',
  'mps', 'hpu', 'mlu', 'sdaa', 'supa' (accelerator/real_accelerator.py@edaa722 L23: no TPU); llm.c is CUDA C
  (train_gpt2.cu@f1e2ace); the hf profile models transformers on CUDA tensors (the caching allocator, foreach
  AdamW: core.frameworks), where a TPU runs it through PyTorch/XLA, which gpuplan does not model. A stated one
  is refused naming ``--framework generic`` (gpuplan's framework-neutral model), the one that is not a CUDA run.
  llm.c is refused on every non-NVIDIA part (AMD, Intel, Huawei, Google): its code is CUDA (LLMC_VENDORS).
  The framework not stated is generic where --gpu is a TPU (schema.tpu_rules, wave 16 A5): nothing to refuse, and the
  report's framework assumption says which profile was modelled.
- ``--gpus-per-node`` above the part's scale-up domain in the catalog: the link model times a group inside the
  "node" on the scale-up fabric (core.comm.topology.Cluster.link), so 72 H100 SXM a node were timed on NVLink
  although an HGX H100 board joins 8 (catalog/hardware/h100-sxm.toml domain_size 8); 72 is an NVL72 rack's
  (gb200.toml, gb300.toml). A part whose devices reach each other over PCIe only (Accelerator.pcie_only) has no
  such fabric, and the link model times its node on PCIe at any size: the cap is the server the catalog states
  (devices_per_node: l40s, l4, a10g, ascend-910b 8), and where it states none (a10, a100-pcie, h100-pcie,
  rtx-3090 / 4090: domain 1, no server size) there is none beyond the field's own range (review w15 R4 M6: 10-card
  single-root PCIe servers are sold). A part whose host joins several scale-up domains over PCIe
  (Accelerator.host_link_bandwidth: H100 NVL, 4 NVLink-bridged pairs in a server of devices_per_node 8, MLPerf
  Inference v4.1 Lenovo SR675 V3) is capped at that host: the link model times a group inside a pair on the bridge,
  one past it on PCIe and one past the host on the network (core.comm.host_tier, core.comm.topology.Cluster.group).
  Fewer than the domain or the host is taken (a GB200 compute tray is 4).
"""

from __future__ import annotations

from gpuplan.core.hardware import XLA_VENDOR
from gpuplan.errors import InputError

FRAMEWORK_OFF_CUDA = "generic"
"""The one framework profile that models no CUDA / ROCm code: gpuplan's framework-neutral model (core.frameworks)."""
TPU_VENDOR = XLA_VENDOR
"""The catalog's vendor of its TPUs (core.hardware.XLA_VENDOR, one constant): the parts no CUDA framework runs on."""
LLMC_VENDORS = ("NVIDIA",)
"""The vendors whose parts karpathy/llm.c@f1e2ace runs on: 'pure C/CUDA' (README L3); its README lists AMD support
as a notable fork (anthonix/llm.c, L203-206), not the profile's code."""


def accelerator(name):
    """The catalog part ``name`` names, or None where it names none (the job's own gpu check refuses it)."""
    from gpuplan.adapters.resolve import resolve_gpu

    try:
        return resolve_gpu(name)
    except (InputError, TypeError, ValueError):
        return None


def largest_node(gpu) -> int | None:
    """The most GPUs --gpus-per-node takes on ``gpu``: its scale-up domain, or for a PCIe-only part or a host of
    several domains (host_link_bandwidth) the server the catalog states (None where a PCIe-only part states none:
    no cap beyond the field's range)."""
    if gpu.pcie_only or gpu.host_link_bandwidth:
        return gpu.devices_per_node
    return gpu.scale_up_ranks


def _runs_where(framework: str) -> str:
    """What the TPU refusal says of ``framework``: transformers itself runs on TPUs through torch_xla (its
    Trainer's TPU path), but gpuplan's hf profile models a CUDA run (review w15 R4 S3)."""
    if framework == "hf":
        return "gpuplan's hf profile models transformers on CUDA devices (the caching allocator, foreach AdamW)"
    return f"{framework} runs on CUDA / ROCm devices"


def check_device(inputs) -> None:
    """The two rules above for a job's fields (absent fields read as not given)."""
    given = getattr(inputs, "given", frozenset())
    compared = tuple(getattr(inputs, "compare", None) or ()) if "compare" in given else ()  # memory's default
    names = (getattr(inputs, "gpu", None),) + compared  # list (an MI300X among them) is not the user's to answer for
    if "framework" in given and inputs.framework != FRAMEWORK_OFF_CUDA:
        for name in names:
            gpu = accelerator(name)
            if inputs.framework == "llmc" and gpu is not None and gpu.vendor not in LLMC_VENDORS:
                raise InputError("framework", "llmc", f"llm.c (karpathy/llm.c@f1e2ace) is C and CUDA for NVIDIA "
                                 f"GPUs only (README L3; AMD support is a separate fork, README L203-206), not the "
                                 f"{gpu.name}: give --framework generic, or an NVIDIA GPU")
            if gpu is not None and gpu.runs_xla:
                raise InputError("framework", inputs.framework, f"{_runs_where(inputs.framework)}, not on a "
                                 f"{gpu.name} (TPUs run PyTorch through XLA, which no framework profile "
                                 f"models): give --framework {FRAMEWORK_OFF_CUDA} (gpuplan's framework-neutral model)")
    per_node = getattr(inputs, "gpus_per_node", None)
    gpu = accelerator(names[0]) if per_node is not None else None
    if gpu is None or (most := largest_node(gpu)) is None or per_node <= most:
        return
    if gpu.pcie_only or gpu.host_link_bandwidth:
        how = (f"NVLink domains of {gpu.scale_up_ranks} on PCIe" if gpu.host_link_bandwidth else "over PCIe")
        raise InputError("gpus_per_node", per_node, f"the catalog's {gpu.name} server holds {most} GPUs ({how}): "
                         f"give 1 to {most}")
    unit = "chips" if gpu.runs_xla else "GPUs"
    raise InputError("gpus_per_node", per_node, f"the catalog's {gpu.name} scale-up domain is {most} {unit}, and the "
                     f"link model times the whole node on it: give 1 to {most}")
