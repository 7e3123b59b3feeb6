"""Collective bus bandwidth against payload: core/comm/collectives.py (NCCL's algorithms and protocols,
the fastest taken) on core/comm/topology.py's cluster, scored on measured sweeps
(catalog/reference/collective_measurements.yaml).

A sweep's point (payload S bytes, busbw GB/s) is compared with the model's busbw at S:
factor x S / t(S), factor 2(n-1)/n for all-reduce and (n-1)/n for all-gather / reduce-scatter
(nccl-tests doc/PERFORMANCE.md). Split at 16 MiB: below it latency and NCCL's LL / LL128 protocols
dominate, above it bandwidth. Each sweep states the network it ran on where it differs from the
catalog's reference system (NICs, NVLS off, an NCCL_ALGO forced); nothing is fitted on the points.
"""

from __future__ import annotations

from dataclasses import dataclass

LATENCY_REGIME_BELOW_BYTES = 16 * 2**20
TORCH_BENCH_CALL_SECONDS = 31.4e-6
"""What stas00's all_reduce_bench.py times beyond the collective: each timed call is a barrier, a CUDA
event, one dist.all_reduce launched on an idle GPU, an event (timed_allreduce @744d01e), so the host's
launch of the call (torch dispatch, ProcessGroupNCCL, ncclAllReduce enqueue) lies inside the interval;
nccl-tests launch their iterations back to back and hide it. Fitted: the median of measured - modelled
seconds over the one-node sweep's 32 KiB - 2 MiB points (7 points, 29.4-37.4 us); the 4-node sweep is
held out."""
FITTED_SWEEPS = ("stas00-allreduce-p6-b200-1node",)
"""Sweeps whose points set a constant (TORCH_BENCH_CALL_SECONDS): their kind says 'fitted'."""
FORM_CHOSEN_KNOWING = "held out; the model's form chosen with this floor known: docs/step.md"
"""The held-out label of a sweep whose yaml entry says ``form_chosen_knowing: true``: nothing is fitted to its
points, but the model's form was chosen with them known. One sweep says so, DeepEP#303's 8 H20 (128 B - 4 KiB):
the all-to-all's fixed-cost pairing (NCCL's 6.6 us ring LL base latency + the catalog's 5 us NVLink step,
core.comm.p2p_schedule.call_seconds) was chosen with their 10.5-11.1 us floor known (wave 15)."""


def nccl_btree_depths(nodes: int) -> list[int]:
    """Depth of each node in NCCL's first inter-node tree (src/graph/trees.cc ncclGetBtree @v2.27.7-1
    lines 31-62): node 0 is the root; another node's parent is (r ^ b) | (b << 1), or r ^ b where that
    is past the last node, b being r's lowest set bit. 4 nodes: 0 <- 2 <- {1, 3}, depths [0, 2, 1, 2]."""
    def parent(rank: int) -> int:
        bit = rank & -rank
        up = (rank ^ bit) | (bit << 1)
        return rank ^ bit if up >= nodes else up

    depths = []
    for rank in range(nodes):
        depth = 0
        while rank:
            rank, depth = parent(rank), depth + 1
        depths.append(depth)
    return depths


def torch_bench_rank_seconds(links) -> list[float]:
    """Seconds all_reduce_bench.py's timed interval holds on each rank across nodes beyond the call
    itself (0 on one node; there the fitted TORCH_BENCH_CALL_SECONDS holds what the launch adds).

    Each timed call follows a dist.barrier(), which ProcessGroupNCCL runs as an all-reduce of one float
    and, for a barrier, waits for on the host (WorkNCCL::wait, 'isBarrierOp_': the current stream is
    synchronized), so a rank starts its timed call when the barrier's result reaches it. One float runs
    tree/LL on one channel (enqueue.cc @v2.27.7-1 line 1850: channels drop while bytes < channels x 512
    threads x 8 B), channel 0, whose tree is the first binary tree (connect.cc line 145-168: channels
    below nChannels take ncclGetDtree's first tree). A node of depth d leaves it (D - d) network hops
    before the deepest (D), and the GPUs of a node leave one chain hop apart. The timed payloads span
    every channel and so both trees, the second the mirror of the first (trees.cc ncclGetDtree): every
    node is deep in one of them, so the call ends for all ranks together, after the last rank started,
    and a rank's interval holds (last start - its start).

    The first network transfer of a call also waits for the receiver's clear-to-send: the network
    sender posts nothing until the receiver's proxy posted its receive and told it where to write
    (aws/aws-ofi-nccl v1.18.0 src/nccl_ofi_rdma.cpp lines 5626-5638, RDMA protocol above the 8 KiB
    eager_max_size, include/nccl_ofi_param.h line 240; NCCL's own InfiniBand transport the same:
    src/transport/net_ib.cc @v2.27.7-1 ncclIbIsend lines 2122-2130). Back to back (nccl-tests, whose
    runs set NCCL's latency constants) the next call's receives are posted while the last one runs; a
    call started from idle after a barrier pays that one hop on its critical path.

    A hop is NCCL's tree/LL network step, hwLat 5.0 us plus the net plugin's latency (the barrier's
    and the clear-to-send's messages are both small); a chain hop NCCL's tree/LL NVLink step, 0.6 us
    (collectives.HW_US). Nothing here is fitted."""
    from gpuplan.core.comm.collectives import HW_US

    nodes, per_node = int(links.nodes), int(links.per_node)
    if nodes <= 1:
        return [0.0] * per_node
    hop = (HW_US["net"]["tree"][0] + float(links.net_latency_us)) * 1e-6
    chain_hop = HW_US[links.intra_kind]["tree"][0] * 1e-6
    depths = nccl_btree_depths(nodes)
    deepest = max(depths)
    return [hop + (deepest - depth) * hop + (per_node - 1 - position) * chain_hop
            for depth in depths for position in range(per_node)]


@dataclass(frozen=True)
class CollectiveCase:
    id: str
    kind: str
    measured: float
    """Bus bandwidth, bytes/s."""
    predicted: float
    source: str
    algorithm: str = ""
    """NCCL algorithm / protocol the model picked."""


def collective_sweeps() -> list[dict]:
    from gpuplan.catalog import reference_yaml

    return reference_yaml("collective_measurements.yaml")["sweeps"]


def series_points(sweep: dict, series: dict) -> list[tuple[int, int, float]]:
    """(ranks per node, payload bytes, busbw GB/s) of one series (GPU-count sweeps list ranks)."""
    if sweep.get("by_ranks"):
        return [(int(r), int(sweep["payload"]), float(bw)) for r, bw in series["points"]]
    per_node = int(series.get("gpus_per_node") or sweep["gpus_per_node"])
    return [(per_node, int(size), float(bw)) for size, bw in series["points"]]


def sweep_network(sweep: dict, series: dict) -> dict:
    """The network fields a series states, over those of its sweep."""
    return {**sweep.get("network", {}), **series.get("network", {})}


def sweep_links(sweep: dict, series: dict, per_node: int):
    """The links of the sweep's communicator: its GPU, ranks per node (the scale-up domain it
    uses), nodes, and the network fields it states."""
    return sweep_cluster(sweep, series, per_node).group(per_node * int(sweep["nodes"]))


def sweep_cluster(sweep: dict, series: dict, per_node: int):
    """The cluster the sweep ran on (core.comm.topology.cluster_for with the network fields it states)."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.core.comm.topology import cluster_for, network_profile

    network = sweep_network(sweep, series)
    extra = {}
    profile = network_profile(network["profile"]) if network.get("profile") else {}
    network = {"nic_gbit_per_gpu": profile.pop("nic_gbit_per_gpu", None), **profile, **network}
    for field in ("net_stage_bytes", "net_stages"):
        if network.get(field):
            extra[field] = float(network[field])
    if network.get("nvls") is False:
        extra["nvls_gain"] = 0.0
    for field in ("algorithm", "protocol"):  # NCCL_ALGO / NCCL_PROTO: one name or a list
        value = network.get(field)
        if value:
            extra[field] = value if isinstance(value, str) else ",".join(value)
    if network.get("collnet"):
        extra["collnet"] = True
    if network.get("net_latency_us"):  # a net plugin's stated latency (NCCL graph latencyInter)
        extra["net_latency_us"] = float(network["net_latency_us"])
    return cluster_for(load_accelerator(sweep["gpu"]), gpus_per_node=per_node,
                       nic_gbit_per_gpu=network.get("nic_gbit_per_gpu"), **extra)


def tuner_plugin_choice(network: dict, payload: int) -> tuple[str, str] | None:
    """(algorithm, protocol) a tuner plugin's table picks for ``payload`` (the sweep's ``tuner``:
    [upper bound in bytes or null, algorithm, protocol] rows in order), None without one."""
    for upper, algorithm, protocol in network.get("tuner") or ():
        if upper is None or payload < upper:
            return algorithm, protocol
    return None


def model_bus_bandwidth(sweep: dict, series: dict, per_node: int, payload: int) -> tuple[float, str]:
    """(the model's busbw in bytes/s, 'algorithm/protocol' it picked) for one point."""
    from dataclasses import replace

    from gpuplan.core.comm.collectives import chosen

    kind = series["collective"]
    if kind == "all_to_all":
        return all_to_all_bus_bandwidth(sweep, series, per_node, payload), "p2p/all-to-all"
    links = sweep_links(sweep, series, per_node)
    plugin = tuner_plugin_choice(sweep_network(sweep, series), payload)
    if plugin is not None:  # the plugin's choice replaces NCCL's own tuner (ncclTuner getCollInfo)
        links = replace(links, algorithm=plugin[0], protocol=plugin[1])
    algorithm, protocol, seconds, _ = chosen(kind, payload, links)
    n = per_node * int(sweep["nodes"])
    factor = 2 * (n - 1) / n if kind == "all_reduce" else (n - 1) / n
    if sweep.get("benchmark") == "torch all_reduce_bench":  # it averages each rank's algbw (timed_allreduce)
        extra = torch_bench_rank_seconds(links)
        algbw = sum(payload / (seconds + TORCH_BENCH_CALL_SECONDS + e) for e in extra) / len(extra)
        return factor * algbw, f"{algorithm}/{protocol}"
    return factor * payload / seconds, f"{algorithm}/{protocol}"


def all_to_all_bus_bandwidth(sweep: dict, series: dict, per_node: int, payload: int) -> float:
    """The model's all-to-all busbw in bytes/s, (n-1)/n x payload / seconds: NCCL's all-to-all as the model
    times it (core.comm.volumes.all_to_all_time: one batch of the link's latency, a fixed call cost, the
    bytes) on the scale-up link it rides (Cluster.link(1)), ``payload`` = the bytes each rank sends, its own
    share included (nccl-tests alltoall_perf's size). One scale-up domain only: the step model's MoE token
    exchange across domains is expert_all_to_all_time's, which takes tokens, not a flat buffer."""
    from gpuplan.core.comm.volumes import all_to_all_time

    if int(sweep["nodes"]) != 1:
        raise ValueError(f"sweep {sweep['id']}: all_to_all sweeps are scored inside one node only (nodes: 1)")
    bandwidth, latency = sweep_cluster(sweep, series, per_node).link(1)
    return (per_node - 1) / per_node * payload / all_to_all_time(payload, per_node, bandwidth, latency)


def case_kind(sweep: dict, payload: int, collective: str = "") -> str:
    regime = "< 16 MiB" if payload < LATENCY_REGIME_BELOW_BYTES else ">= 16 MiB"
    bench = sweep.get("benchmark", "nccl-tests")
    if collective == "all_to_all":  # its own kind: NCCL's p2p path, not the collective algorithms
        bench += " all-to-all"
    where = "one node" if int(sweep["nodes"]) == 1 else "several nodes"
    transport = sweep.get("network", {}).get("transport")
    if transport:  # a network NCCL has no latency constants for (its plugin's latency unknown)
        where += f" over {transport.split(' (')[0]}"
    held = "fitted" if sweep["id"] in FITTED_SWEEPS or payload in (sweep.get("fitted") or ()) else "held out"
    knowing = sweep.get("form_chosen_knowing", False)
    if not isinstance(knowing, bool):
        raise ValueError(f"sweep {sweep['id']}: form_chosen_knowing must be true or false, not {knowing!r}")
    if held == "held out" and knowing:  # the sweep's own flag, as ``fitted`` (collective_measurements.yaml)
        held = FORM_CHOSEN_KNOWING
    return f"communication: busbw, {bench}, {where}, payload {regime} ({held})"


def collective_excluded() -> list[tuple[str, str]]:
    """(point id, reason) of the measured points a sweep's ``excluded`` leaves unscored."""
    out = []
    for sweep in collective_sweeps():
        for i, series in enumerate(sweep["series"]):
            for per_node, payload, _ in series_points(sweep, series):
                reason = (sweep.get("excluded") or {}).get(payload)
                if reason:
                    out.append((f"{sweep['id']}-{series['collective']}-{i}-{per_node * int(sweep['nodes'])}r-{payload}",
                                reason))
    return out


def collective_cases() -> list[CollectiveCase]:
    cases = []
    for sweep in collective_sweeps():
        for i, series in enumerate(sweep["series"]):
            for per_node, payload, busbw in series_points(sweep, series):
                if payload in (sweep.get("excluded") or {}):
                    continue
                predicted, algorithm = model_bus_bandwidth(sweep, series, per_node, payload)
                tag = f"{series['collective']}-{i}-{per_node * int(sweep['nodes'])}r-{payload}"
                cases.append(CollectiveCase(f"{sweep['id']}-{tag}", case_kind(sweep, payload, series["collective"]),
                                            busbw * 1e9, predicted,
                                            sweep["cite"], algorithm))
    return cases


def tcpxo_fit() -> tuple[float, float]:
    """(net_latency_us, net_stages) of topology.NETWORK_PROFILES['gpudirect-tcpxo'] from their named
    rows of the A3 Mega sweep: the latency solves the model's 2-node time at the ``latency_rows``
    (8 B - 16 KiB, not scored) for their median measured time; the stages turn the intercept of a
    least-squares line through the sweep's ``fitted`` points (time against payload, all >= 1 GiB, where
    the fill no longer grows) less that latency into passes of net_stage_bytes at the model's algbw."""
    import statistics
    from dataclasses import replace

    import numpy as np

    from gpuplan.core.comm.collectives import chosen

    sweep = next(s for s in collective_sweeps() if s["id"] == "a3mega-h100-2nodes-tcpxo")
    series = sweep["series"][0]
    base = sweep_links(sweep, series, int(sweep["gpus_per_node"]))
    rows = sweep["latency_rows"]
    zero = replace(base, net_latency_us=0.0, net_stages=0.0)
    modelled = statistics.median(chosen("all_reduce", size, zero)[2] for size, _ in rows)
    # tree/Simple on two nodes: the latency enters twice per level, up and down (tuning.cc)
    latency_us = (statistics.median(us for _, us in rows) * 1e-6 - modelled) / 4 * 1e6
    n = int(sweep["gpus_per_node"]) * int(sweep["nodes"])
    points = [(size, 2 * (n - 1) / n * size / (busbw * 1e9)) for size, busbw in series["points"] if size in sweep["fitted"]]
    _, intercept = np.polyfit([p for p, _ in points], [t for _, t in points], 1)
    timed = replace(base, net_latency_us=latency_us, net_stages=0.0)
    _, _, floor, _ = chosen("all_reduce", rows[0][0], timed)  # the latency alone (8 B)
    _, _, _, bus = chosen("all_reduce", points[-1][0], timed)
    algbw = bus * n / (2 * (n - 1))  # the model's (H100's NVLink chain binds: 0.92 x 360 / 2 = 166 GB/s)
    return latency_us, float((intercept - floor) * algbw / base.net_stage_bytes)
