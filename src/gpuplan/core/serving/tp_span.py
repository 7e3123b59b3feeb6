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


def on_pcie(fabric: Accelerator | None, tp: int = 1) -> bool:
    """A TP group of ``tp`` GPUs of ``fabric`` whose NCCL ring runs over PCIe: a PCIe-only part (no NVLink /
    Infinity Fabric link in the catalog), or a group past the scale-up domain on a host of several domains joined
    by PCIe (Accelerator.host_link_bandwidth: the H100 NVL's pairs in a server of 8, core.comm.host_tier) -- one
    rule for both, so kernels.PCIE_NCCL_SLOWDOWN (NCCL's ring through host memory, no P2P across a CPU host
    bridge: paths.cc p2pLevel PATH_PXB) and the own kernel's refusal on more than two such GPUs (vLLM
    custom_all_reduce.py: world_size > 2 and not fully NVLink-connected) apply past the pair as on an H100 PCIe.
    ``tp`` 1 (the default): the part alone. False without a part."""
    return fabric is not None and (fabric.pcie_only or bool(fabric.host_link_bandwidth) and tp > fabric.scale_up_ranks)


def spans_domains(tp: int, fabric: Accelerator | None) -> bool:
    """A TP group of ``tp`` GPUs larger than node_ranks(fabric), so its all-reduces cross the scale-out
    network. The engines' own all-reduce kernels share IPC buffers inside one node and are off for such
    a group (vLLM custom_all_reduce.py@00d618aa:90-96: 'Custom allreduce is disabled because this process
    group spans across nodes'; SGLang's copy of the kernel logs the same); NCCL then runs every message,
    timed by core.comm.collectives on cluster_for(fabric).group(tp): tp / scale_up_ranks domains joined by
    the catalog's NIC bandwidth and latency (GroupLinks.nodes > 1), on an H100 NVL's host of 8 by its PCIe first
    (core.comm.host_tier). False without a part (``fabric`` None)."""
    return fabric is not None and tp > node_ranks(fabric)


OWN_KERNEL_WORLD_SIZES = (2, 4, 6, 8)
"""TP sizes vLLM's and SGLang's own (custom) all-reduce kernel runs at: CustomAllreduce._SUPPORTED_WORLD_SIZES,
the same list in every release read (vLLM parallel_utils/custom_all_reduce.py@v0.3.0:23 and @v0.4.0:24,
distributed/device_communicators/custom_all_reduce.py@v0.6.0:38, @v0.10.1.1:51, @v0.19.0:52; SGLang
srt/distributed/device_communicators/custom_all_reduce.py@v0.5.6:55); at any other size the constructor logs
'Custom allreduce is disabled due to an unsupported world size' and returns (vLLM @v0.19.0:105-113, SGLang
@v0.5.6:107-115), so NCCL runs every TP message (tp 3 / 5 / 7, tp 16 inside a GB200 NVL72)."""


def host_gpus(gpu: Accelerator) -> int:
    """GPUs of one host as the serving searches and the 'launch across trays' line count them: the catalog's
    devices_per_node, else 8 (a GB200 / GB300 compute tray holds 4). Not host_ranks: on an H100 NVL (NVLink pairs in
    a server of devices_per_node 8) the searches keep the 8-GPU server, the node check the pair's domain of 2."""
    return gpu.devices_per_node or 8


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
    NCCL then runs it over the NVLink domain; vLLM >= 0.19 on sm100 / sm103 has its MNNVL fused kernel there instead,
    mnnvl_fused_max_bytes, which kernels.custom_allreduce_limit reads first). TensorRT-LLM's kernel keeps its own rule
    (kernels.custom_allreduce_bytes_of)."""
    return spans_domains(tp, fabric) or (engine in ("vllm", "sglang") and (
        tp not in OWN_KERNEL_WORLD_SIZES or (fabric is not None and tp > host_ranks(fabric))))


MiB = 2**20
VLLM_MNNVL_SINCE = (0, 19, 0)
"""The first vLLM release whose fused all-reduce + RMSNorm runs across nodes (vLLM PR #38136): _resolve_fi_ar_backend
picks FlashInfer's 'mnnvl' (multi-node NVLink) backend where get_node_count() > 1, 'trtllm backend does not support
multi-node allreduce' (distributed/device_communicators/flashinfer_all_reduce.py@v0.19.0:92-112, @v0.23.0:94-112; the
node count is parallel_config.nnodes under the mp launch, parallel_state.py@v0.19.0:1455-1456). vLLM 0.18.1 has no
such choice: the backend is VLLM_FLASHINFER_ALLREDUCE_BACKEND, default 'trtllm' (envs.py@v0.18.1:171, 1303-1307),
and the pass turns itself off when its workspace cannot be made (allreduce_rms_fusion.py@v0.18.1:756-784), so NCCL.
The fusion is on by default (-O2, config/vllm.py@v0.19.0:208, 320) at tp > 1, pp = 1, dp = 1 on sm90 / the sm100
family with flashinfer (a dependency of the wheel: flashinfer-python==0.6.6 in vllm-0.19.0's METADATA),
enable_allreduce_rms_fusion (config/vllm.py@v0.19.0:116-135; @v0.23.0:129-156 drops the dp term)."""
MNNVL_FUSION_MAX_BYTES = {(10, 0): {2: 64 * MiB, 4: 32 * MiB, 8: MiB}, (10, 3): {2: 64 * MiB, 4: 64 * MiB, 8: 2 * MiB}}
"""Largest all-reduce (bytes) vLLM runs fused on sm100 (GB200 / B200) and sm103 (GB300), by tp: FI_ALLREDUCE_FUSION_MAX_SIZE_MB
(compilation/passes/fusion/allreduce_rms_fusion.py@v0.19.0:54-70, the same at @v0.23.0:88-104) x MiB; world sizes
2 / 4 / 8 only (FI_SUPPORTED_WORLD_SIZES, config/compilation.py@v0.19.0:183, @v0.23.0:193): tp 16 stays NCCL."""


def mnnvl_fused_max_bytes(release, tp: int, fabric: Accelerator | None, pp: int = 1, hidden: int | None = None,
                          dtype_bytes: int = 2) -> int | None:
    """Largest TP message (bytes) vLLM's FlashInfer fused all-reduce + RMSNorm takes over MNNVL for a group of ``tp``
    past one host inside one NVLink domain (tp 8 over two GB200 / GB300 trays), larger ones going to NCCL; None where
    that path does not apply (another engine, vLLM before VLLM_MNNVL_SINCE, pp > 1, a group within one host or past
    the domain, a part outside MNNVL_FUSION_MAX_BYTES), own_kernel_off's rule then. The fusion runs forwards of up to
    max_size // (hidden x dtype bytes) tokens (the compile-range split, config/vllm.py@v0.19.0:1518-1528), so with
    the model's ``hidden`` the bound is that many tokens' bytes. ``release``: a releases.EngineRelease."""
    if (release.engine != "vllm" or release.version < VLLM_MNNVL_SINCE or fabric is None or pp > 1
            or spans_domains(tp, fabric) or tp <= host_ranks(fabric)):
        return None
    limit = MNNVL_FUSION_MAX_BYTES.get(fabric.compute_capability, {}).get(tp)
    if limit is None or not hidden:
        return limit
    return limit // (hidden * dtype_bytes) * hidden * dtype_bytes
