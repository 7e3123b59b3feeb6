"""Whether a serving TP group reaches past the GPUs one engine's own all-reduce kernel joins (issue 38,
review w14 R2 N3): the scale-up (NVLink) domain, or the server of a PCIe-only part."""
from __future__ import annotations

from gpuplan.core.hardware import Accelerator


def node_ranks(fabric: Accelerator) -> int:
    """GPUs the engines' own all-reduce kernel can join: the scale-up domain (Accelerator.scale_up_ranks:
    8 on HGX, 72 on GB200 NVL72); on a PCIe-only part, whose catalog domain is 1 (no NVLink), the GPUs of
    its server (devices_per_node, else 8: the same default as scale_up_ranks), which vLLM's node check
    counts (custom_all_reduce.py@00d618aa:90-96, in_the_same_node_as)."""
    return (fabric.devices_per_node or 8) if fabric.pcie_only else fabric.scale_up_ranks


def spans_domains(tp: int, fabric: Accelerator | None) -> bool:
    """A TP group of ``tp`` GPUs larger than node_ranks(fabric), so its all-reduces cross the scale-out
    network. The engines' own all-reduce kernels share IPC buffers inside one node and are off for such
    a group (vLLM custom_all_reduce.py@00d618aa:90-96: 'Custom allreduce is disabled because this process
    group spans across nodes'; SGLang's copy of the kernel logs the same); NCCL then runs every message,
    timed by core.comm.collectives on cluster_for(fabric).group(tp): tp / scale_up_ranks domains joined by
    the catalog's NIC bandwidth and latency (GroupLinks.nodes > 1). False without a part (``fabric`` None)."""
    return fabric is not None and tp > node_ranks(fabric)


OWN_KERNEL_WORLD_SIZES = (2, 4, 6, 8)
"""TP sizes vLLM's and SGLang's own (custom) all-reduce kernel runs at: CustomAllreduce._SUPPORTED_WORLD_SIZES,
the same list in every release read (vLLM parallel_utils/custom_all_reduce.py@v0.3.0:23 and @v0.4.0:24,
distributed/device_communicators/custom_all_reduce.py@v0.6.0:38, @v0.10.1.1:51, @v0.19.0:52; SGLang
srt/distributed/device_communicators/custom_all_reduce.py@v0.5.6:55); at any other size the constructor logs
'Custom allreduce is disabled due to an unsupported world size' and returns (vLLM @v0.19.0:105-113, SGLang
@v0.5.6:107-115), so NCCL runs every TP message (tp 3 / 5 / 7, tp 16 inside a GB200 NVL72)."""


def host_ranks(fabric: Accelerator) -> int:
    """GPUs vLLM's and SGLang's node check counts as one node: in_the_same_node_as is a shared-memory probe, so one
    host (vllm distributed/parallel_state.py@00d618aa in_the_same_node_as, 'shared access to shared memory'; SGLang's
    copy the same). The catalog's devices_per_node where it is below node_ranks (a GB200 / GB300 compute tray: 4 of
    the NVL72's 72), else node_ranks."""
    domain = node_ranks(fabric)
    return min(domain, fabric.devices_per_node or domain)


def own_kernel_off(engine: str, tp: int, fabric: Accelerator | None) -> bool:
    """The engine's own all-reduce kernel is off for a TP group of ``tp`` GPUs: the group spans scale-up
    domains (spans_domains, every engine), or vLLM / SGLang at a size outside OWN_KERNEL_WORLD_SIZES or past one
    host (host_ranks: tp 8 over two GB200 trays logs 'spans across nodes', custom_all_reduce.py@00d618aa:90-96;
    NCCL then runs it over the NVLink domain). TensorRT-LLM's kernel keeps its own rule (kernels.custom_allreduce_bytes_of)."""
    return spans_domains(tp, fabric) or (engine in ("vllm", "sglang") and (
        tp not in OWN_KERNEL_WORLD_SIZES or (fabric is not None and tp > host_ranks(fabric))))
