"""What a plan report says about a layout: its lines (time, MFU, memory), why the planner chose
it in the article's terms, and — for a layout the user fixed — where it ranks and why it loses."""

from __future__ import annotations

import numpy as np

from gpuplan.core.memory.llmc_memory import CUDAMALLOC_ONCE, peak_labels
from gpuplan.core.units import format_bytes
from gpuplan.planner.plan import Plan
from gpuplan.planner.search import LayoutTable
from gpuplan.report.model import Line, Table
from gpuplan.schema import tpu_rules as X

STEP_PARTS = (("compute", "compute"), ("bubble", "pipeline bubble"), ("tp_comm", "exposed TP communication"),
              ("pp_comm", "exposed PP communication"), ("dp_comm", "exposed DP/FSDP communication"),
              ("cp_comm", "exposed CP communication"), ("ep_comm", "exposed EP all-to-all"),
              ("optimizer", "optimizer step"))


def step_lines(plan: Plan, prefix: str) -> tuple[Line, ...]:
    """The step-time breakdown of ``plan`` (seconds on the critical path)."""
    lines = [Line(f"{prefix}_step_{key}", label, float(getattr(plan.step, key)), "s",
                  f"{float(getattr(plan.step, key)):.3f} s", f"{float(getattr(plan.step, key)) / plan.step_seconds:.0%} "
                  "of the step") for key, label in STEP_PARTS if float(getattr(plan.step, key)) > 0]
    return tuple(lines)


def peak_words(gpu=None, fixed_bytes: float = 0.0) -> str:
    """What the plan's peak memory per GPU is on ``gpu``: the CUDA runtime's parts, or a TPU's (schema.tpu_rules;
    ``fixed_bytes``, the plan's: a calibration's memory_overhead where not 0)."""
    return X.runtime_words(fixed_bytes)[2] if X.is_tpu(gpu) else "reserved + CUDA context + NCCL buffers"


def memory_lines(plan: Plan, prefix: str, caching_allocator: bool = True, gpu=None) -> tuple[Line, ...]:
    """The plan's memory lines; ``caching_allocator`` False (llm.c): reserved = allocated, labelled so; on a TPU
    (``gpu``) in XLA's words: no allocator reserve, no CUDA context or NCCL buffers (schema.tpu_rules)."""
    m, (allocated, reserved) = plan.memory, peak_labels(caching_allocator)
    xla = X.is_tpu(gpu)
    runtime, runtime_why, total = X.runtime_words(plan.fixed_bytes) if xla else (
        "CUDA context + NCCL buffers", "", "device memory needed (reserved + runtime)")
    if xla:
        allocated, reserved = X.XLA_ALLOCATED, X.XLA_RESERVED
    parts = (("weights", m.weights), ("grads", m.grads), ("master", m.master), ("optimizer", m.optimizer),
             ("activations", m.activations), ("outside_layers", m.outside_layers),
             ("temporaries", m.temporaries), ("fsdp_working_set", m.fsdp_working_set))
    lines = [Line(f"{prefix}_mem_{k}", k.replace("_", " "), v, "bytes", format_bytes(v)) for k, v in parts if v]
    lines += [Line(f"{prefix}_mem_allocated", allocated, m.allocated, "bytes",
                   format_bytes(m.allocated)),
              Line(f"{prefix}_mem_reserved", reserved, plan.reserved_bytes, "bytes", format_bytes(plan.reserved_bytes),
                   X.XLA_RESERVED_WHY if xla else f"allocated x {1 + plan.fragmentation:.2f}" if caching_allocator
                   else CUDAMALLOC_ONCE),
              Line(f"{prefix}_mem_fixed", runtime, plan.fixed_bytes, "bytes", format_bytes(plan.fixed_bytes),
                   runtime_why),
              Line(f"{prefix}_mem_total", total, plan.total_bytes, "bytes", format_bytes(plan.total_bytes),
                   f"at {m.peak_phase}, pipeline stage {m.stage}"),
              Line(f"{prefix}_mem_fits", f"fits with the margin ({format_bytes(plan.budget_bytes)} usable)", plan.fits,
                   "", "yes" if plan.fits else f"NO: {format_bytes(-plan.headroom_bytes)} over")]
    return tuple(lines)


def why_lines(plan: Plan, table: LayoutTable) -> tuple[Line, ...]:
    """The recommendation in the article's terms."""
    headroom = plan.headroom_bytes
    lines = [Line("why_headroom", "memory headroom after the margin", headroom, "bytes", format_bytes(headroom),
                  "the article: spend headroom on a bigger micro-batch" if headroom > 0.25 * plan.budget_bytes else
                  "little headroom left")]
    # ZeRO-3 over one data-parallel rank (dp x cp = 1, a --zero given) shards nothing: no shortfall it met (review R1 S1)
    sharded = plan.layout.zero == 3 and plan.layout.state_shards > 1
    if plan.recompute != "none" or sharded:
        same = np.ones(len(table), dtype=bool)
        for key in ("gpus", "dp", "tp", "pp", "vpp", "cp", "ep", "micro_batch"):
            same &= table[key] == getattr(plan.layout, key, plan.gpus if key == "gpus" else None)
        plain = same & ((table["zero"] < 3) | (table["dp"] * table["cp"] == 1)) & (table["recompute"] == 0)
        if not bool(table["fits"][plain].any()):
            used = ("ZeRO-3 " if sharded else "") + (f"{plan.recompute} recompute"
                                                                     if plan.recompute != "none" else "")
            lines.append(Line("why_shortfall", "memory shortfall met with", used.strip(), text=used.strip(),
                              formula="the article: ZeRO-3 or recomputation first; full recompute costs ~33% "
                                      "compute, ZeRO-3 ~1.5x the DP communication volume"))
    step, comm = plan.step_seconds, float(plan.step.comm_total)
    compute = float(plan.step.compute)
    lines += [
        Line("comm_ratio_total", "communication / (compute + communication), total", comm / (compute + comm),
             "fraction", f"{comm / (compute + comm):.1%}", "the article's ratio, before overlap"),
        Line("comm_ratio_exposed", "communication on the critical path / step", float(plan.step.exposed_comm) / step,
             "fraction", f"{float(plan.step.exposed_comm) / step:.1%}", "after bucketing/prefetch overlap"),
        Line("bubble_share", "pipeline bubble / step", float(plan.step.bubble) / step, "fraction",
             f"{float(plan.step.bubble) / step:.1%}", "(p-1)/(v·m) of the compute"),
    ]
    return tuple(lines)


def comparison_lines(mine: Plan, best: Plan, free: LayoutTable) -> tuple[Line, ...]:
    """Where the user's layout ranks among the planner's and what it loses to its best, part by
    part (seconds per token, so layouts with different global batches compare fairly)."""
    per_token = free["step_seconds"] / free["global_batch"]
    mine_per_token = mine.step_seconds / mine.global_batch
    rank = int(np.sum(per_token < mine_per_token * (1 - 1e-9))) + 1
    slower = mine_per_token / (best.step_seconds / best.global_batch) - 1
    lines = [Line("check_rank", "rank among the fitting layouts on these GPUs", rank, "",
                  f"#{rank:,} of {len(free):,}" + ("" if mine.fits else " (yours does not fit)"),
                  "by time per token")]
    if slower > 1e-6:
        gaps = []
        for key, label in STEP_PARTS:
            gap = (float(getattr(mine.step, key)) / mine.global_batch
                   - float(getattr(best.step, key)) / best.global_batch) * mine.global_batch
            if gap > 0.02 * mine.step_seconds:
                gaps.append((gap, label))
        reason = ", ".join(f"{label} +{gap:.3f} s" for gap, label in sorted(gaps, reverse=True)[:3]) or \
            "small differences everywhere"
        lines.append(Line("check_loses_by", "slower than the planner's best", slower, "fraction", f"{slower:+.1%}",
                          f"per step of your batch: {reason} (best: {best.text()})"))
    else:
        lines.append(Line("check_loses_by", "slower than the planner's best", 0.0, "fraction", "it is the best",
                          best.text()))
    return tuple(lines)


COMMUNICATION_COLUMNS = ("group", "collective", "calls", "bytes each", "NCCL algorithm / protocol", "link", "s/step",
                         "exposed s")


COLLECTIVE_LIBRARIES = {"nvidia": "NCCL", "amd": "RCCL"}
"""The collective library whose algorithm / protocol choice the column shows, by catalog vendor: NCCL on NVIDIA;
RCCL on AMD (ROCm's port of NCCL, whose collectives are "implemented using ring and tree algorithms":
github.com/ROCm/rccl README). Other vendors' libraries (HCCL, oneCCL) choose otherwise: their column says the
choice shown is NCCL's model (wave 14: 'NCCL algorithm / protocol' on a TPU). On a TPU XLA runs the collectives
over ICI or the data-center network (DCN), with no NCCL protocol: XLA_COLUMN, and the algorithm NCCL's model timed
it as (no protocol)."""
XLA_COLUMN = "XLA collective: timed as NCCL's"
"""The algorithm column's header on a TPU (communication_columns)."""


def communication_columns(gpu=None) -> tuple[str, ...]:
    """COMMUNICATION_COLUMNS with the algorithm column named for ``gpu``'s vendor (COLLECTIVE_LIBRARIES)."""
    library = COLLECTIVE_LIBRARIES.get(gpu.vendor.lower()) if gpu is not None else "NCCL"
    header = f"{library} algorithm / protocol" if library else XLA_COLUMN if X.is_tpu(gpu) else \
        "algorithm / protocol (NCCL's model)"
    return tuple(header if column == COMMUNICATION_COLUMNS[4] else column for column in COMMUNICATION_COLUMNS)


def _algorithm(c, pcie: bool = False, xla: bool = False) -> str:
    """The NCCL algorithm / protocol of one call (core.comm.collectives); for the rows NCCL runs as send / recv pairs
    (the 'alltoall' dispatcher's all-to-all, a PP or CP send) 'p2p / ' and the protocol of their pairs
    (_p2p_protocol); for the 'flex' dispatcher the kernels its backend runs, DeepEP's or HybridEP's, which are not
    NCCL's and have no NCCL protocol (core.comm.step_comm.FLEX_KERNELS, named in the row's label). ``pcie``: the
    scale-up link is PCIe (Accelerator.scale_up_pcie). ``xla`` (a TPU): the algorithm only, no NCCL protocol, and
    a send / recv or all-to-all row as such (XLA_COLUMN)."""
    from gpuplan.core.comm.collectives import chosen
    from gpuplan.core.comm.step_comm import FLEX_KERNELS

    if c.nccl and c.group is not None:
        algorithm, protocol, _, _ = chosen(c.nccl, float(c.bytes_per_call), c.group)
        return algorithm if xla else f"{algorithm} / {protocol}"
    kernels = [name for name in FLEX_KERNELS.values() if f"({name})" in c.collective]
    if kernels:
        return f"{kernels[0]} kernels"
    if c.links is None or xla:
        return "all-to-all" if c.parallelism == "EP" else "send/recv"
    return "p2p / " + _p2p_protocol(c, pcie)


def _p2p_protocol(c, pcie: bool = False) -> str:
    """The protocol NCCL runs a p2p row's pairs with (core.comm.p2p_schedule.p2p_uses_ll, NVIDIA/nccl@v2.27.7-1
    enqueue.cc L822, L835-836): LL while a peer's bytes are at most p2pnChannelsPerPeer x 16 KiB, else Simple; a
    network peer always Simple (no LL buffer on p2p net connections by default). A peer's bytes: the expert
    all-to-all's call spread evenly over its ``links.ranks`` ranks (every token to top-k experts spread evenly:
    core.comm.volumes.expert_all_to_all_time), a send's whole call. Channels a peer: 32 inside one NVLink domain,
    2 for a group over several domains (its network peers set the communicator's minimum) and for PCIe peers
    (graph/paths.cc@v2.27.7-1 L809-815: 2 for a local peer not on an NVLink path), which p2p_uses_ll's 'several
    domains' case gives. A group over several domains whose NVLink peers run LL prints both protocols."""
    from gpuplan.core.comm.p2p_schedule import p2p_uses_ll

    links = c.links
    ranks, local = float(links.ranks), float(links.per_domain)
    nodes = float(np.ceil(ranks / local))
    per_peer = float(c.bytes_per_call) / ranks if c.parallelism == "EP" else float(c.bytes_per_call)
    two_channel = nodes > 1 or pcie  # p2pnChannelsPerPeer 2: p2p_uses_ll's several-domain case
    nvlink_ll = local > 1 and bool(p2p_uses_ll(per_peer, ranks, 2 if two_channel else 1))
    if nodes <= 1:
        return "LL" if nvlink_ll else "Simple"
    return "LL in-domain, Simple across domains" if nvlink_ll else "Simple"


SCALE_UP_NAMES = {"nvidia": "NVLink", "amd": "Infinity Fabric", "google": "ICI", "huawei": "HCCS / UB",
                  "intel": "RoCE"}
"""The scale-up link a vendor's catalog entries name (catalog/hardware/*.toml scale_up.kind: 'NVLink 4 + NVSwitch',
'Infinity Fabric (xGMI)', 'ICI, 3D torus', 'HCCS' / 'Unified Bus (UB)', Gaudi's 'integrated RoCE v2 NICs')."""


def scale_up_name(gpu) -> str:
    """What `plan --explain`'s link column calls ``gpu``'s scale-up link: PCIe for a PCIe card (scale_up.kind
    'PCIe ...'), else its vendor's (SCALE_UP_NAMES); 'NVLink' was printed for an MI355X, a TPU and an L40S (w14)."""
    if gpu is None:
        return "NVLink"
    return "PCIe" if gpu.scale_up_pcie else SCALE_UP_NAMES.get(gpu.vendor.lower(), "scale-up link")


def _link(c, up_name: str = "NVLink", xla: bool = False, host_line: float | None = None) -> str:
    """Where the group's traffic runs, as its cost was timed: an NCCL group's ranks per scale-up domain over NVLink,
    the rest over the domains' NICs (core.comm.topology.Cluster.group); the expert all-to-all's ranks split per
    domain as core.comm.step_comm passed them to core.comm.volumes.expert_all_to_all_time, NVLink and the NICs at
    once; a send on one link, NVLink inside a domain, else the network (CollectiveCost.links: step_comm's own).
    ``xla`` (a TPU): chips, and the data-center network (DCN: catalog/hardware/tpu-*.toml scale_out.kind), not NICs.
    On a host of NVLink pairs joined by PCIe (``host_line``: Accelerator.host_link_bandwidth, H100 NVL) a group timed
    on NCCL's PCI links (intra_kind 'pci') or a link at or below the host's PCIe line rate a direction is 'PCIe host'
    (core.comm.host_tier)."""
    unit, nics, nic = ("chips", "DCN", "DCN a chip") if xla else ("GPUs", "NICs", "NIC a GPU")
    if c.group is not None:
        per_node, nodes = int(float(c.group.per_node)), int(round(float(c.group.nodes)))
        up_name = "PCIe host" if host_line and np.any(np.asarray(c.group.intra_kind) == "pci") else up_name
        if nodes <= 1:
            return f"{up_name} ({per_node} {unit})"
        if c.group.split:  # the slowest group straddles domains unevenly (core.comm.group_geometry)
            return (f"{int(float(c.group.ranks))} {unit} {c.group.split}, {up_name} + "
                    f"{float(c.group.net) / 1e9:,.0f} GB/s {nics}")
        return f"{per_node}/domain x {nodes} domains: {up_name} + {float(c.group.net) / 1e9:,.0f} GB/s {nics}"
    links = c.links
    up, out = float(links.nvlink) / 1e9, float(links.network) / 1e9  # achievable GB/s per GPU, one direction
    ranks, local = int(float(links.ranks)), int(float(links.per_domain))
    up_name = "PCIe host" if host_line and up * 1e9 <= host_line / 2 else up_name  # the bridge's rate is above it
    if c.parallelism == "EP":
        if local >= ranks:
            return f"{up_name} ({ranks} ranks, {up:,.0f} GB/s)"
        return f"{local}/domain x {ranks / local:,.0f} domains: {up_name} + {out:,.0f} GB/s {nic}"
    return f"{up_name} ({up:,.0f} GB/s)" if local >= ranks else f"{'DCN' if xla else 'network'} ({out:,.0f} GB/s " \
        f"a {unit[:-1]})"


def communication_table(plan: Plan, gpu=None) -> Table:
    """The plan's communication, collective by collective, for `plan --explain`: per collective the bytes of one
    call, NCCL's algorithm / protocol for that size (a send / recv row's p2p protocol: _algorithm), the link, and the
    seconds per step in all and on the critical path. The rows are the very costs core.time.step.step_time summed
    into the plan's communication fields (StepBreakdown.collectives), so the exposed column adds up to those fields
    and the s/step column to comm_total.
    Not rows: what step_time charges inside other parts, torchtitan's float8 amax all-reduce (in compute: core.time.
    titan_float8) and the other stages' expert all-to-alls in the pipeline's fill and drain (in the bubble: core.comm.
    moe_overlap.fill_drain_all_to_all)."""
    costs = plan.step.collectives
    up_name, pcie, xla = scale_up_name(gpu), bool(gpu is not None and gpu.scale_up_pcie), X.is_tpu(gpu)
    rows = []
    for c in costs:
        if float(c.calls) <= 0:
            continue
        rows.append((c.parallelism, X.collective_shown(c.collective) if xla else c.collective, f"{float(c.calls):,.0f}", format_bytes(float(c.bytes_per_call)),
                     _algorithm(c, pcie, xla), _link(c, up_name, xla, gpu is not None and gpu.host_link_bandwidth), f"{float(c.total):.3f}", f"{float(c.exposed):.3f}"))
    total = sum(float(c.total) for c in costs)
    exposed = sum(float(c.exposed) for c in costs)
    rows.append(("all", "", "", "", "", "", f"{total:.3f}", f"{exposed:.3f}"))
    return Table(f"Communication per step of {plan.text()}, in its {plan.step_seconds:.3f} s step", communication_columns(gpu),
                 tuple(rows))
