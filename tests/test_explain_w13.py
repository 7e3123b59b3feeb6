"""`plan --explain`'s communication table is the step's own communication (wave 13, T3 item 1).

The table used to rebuild the costs beside step_time: the stage's layers worked out inline (no MTP modules at pp 1,
whose layers step_time adds to the collectives' count: core.model.mtp) and the compute window given as the finished
step's compute (step_time passes the micro-batches' and the copies' before the host, expert-kernel and accumulation
terms). DeepSeek-V3 on 1,024 H100 (dp1024 ep64 ZeRO-3, full recompute): its exposed column summed 2.491 s against
the step's 2.527 s, all of it the MTP module (EP all-to-alls 232 -> 236, DP calls 61 / 122 -> 62 / 124; the DP
window's difference moved no exposed second on that layout). The rows are now StepBreakdown.collectives, the costs
step_time sums into its communication fields, so the columns add up to them exactly; the issue-37 acceptance: per
collective the bytes, NCCL algorithm / protocol, link, s/step and exposed s. Not rows (charged inside other parts):
torchtitan's float8 amax all-reduce (compute) and the other stages' expert all-to-alls in the fill and drain (bubble).
The link column reads how step_comm timed each send and all-to-all (CollectiveCost.links), not a rebuild of it."""

from __future__ import annotations

import pytest

from gpuplan.core.comm.moe_overlap import ALL_TO_ALLS_PER_LAYER
from gpuplan.core.parallel import ParallelLayout
from gpuplan.jobs.plan.explain import COMMUNICATION_COLUMNS, communication_table
from gpuplan.jobs.plan.schema import PlanInputs
from gpuplan.jobs.plan.search import evaluator_for
from gpuplan.planner.plan import evaluate_layout

# (name, model, gpus, seq_len, layout, recompute): dense pp > 1 interleaved; MoE with MTP at pp 1 (the modules join the
# only stage); MoE with MTP at pp > 1 (the last stage sheds layers for them); dense with cp 8 over two domains
CASES = (
    ("dense pp4 vpp", "llama-3.1-70b", 512, 8192,
     ParallelLayout(dp=16, tp=8, pp=4, vpp=20, zero=1, micro_batch=2, global_batch=1024), "none"),
    ("moe mtp pp1", "deepseek-v3", 1024, 4096,
     ParallelLayout(dp=1024, ep=64, zero=3, micro_batch=1, global_batch=4096), "full"),
    ("moe mtp pp8", "deepseek-v3", 1024, 4096,
     ParallelLayout(dp=16, tp=8, pp=8, ep=16, zero=1, micro_batch=1, global_batch=4096), "full"),
    ("dense cp8", "llama-3.1-8b", 256, 131072,
     ParallelLayout(dp=8, tp=2, pp=2, vpp=16, cp=8, zero=1, micro_batch=1, global_batch=32), "none"),
)
PARTS = {"TP": "tp_comm", "PP": "pp_comm", "DP": "dp_comm", "CP": "cp_comm", "EP": "ep_comm"}


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def case(request):
    _, model, gpus, seq_len, layout, recompute = request.param
    ev = evaluator_for(PlanInputs(model=model, gpu="h100", gpus=str(gpus), seq_len=seq_len))
    plan = evaluate_layout(ev, layout, recompute, float(layout.global_batch))
    return plan, communication_table(plan)


def test_the_exposed_column_adds_up_to_the_steps_communication(case):
    plan, table = case
    rows, (*_, total, exposed) = table.rows[:-1], table.rows[-1]
    # the 'all' row is the step's own sums, to the table's 3 decimals
    assert exposed == f"{float(plan.step.exposed_comm):.3f}" and total == f"{float(plan.step.comm_total):.3f}"
    # each printed row rounds to 0.5 ms: the rows add up to the step within that per row
    assert sum(float(r[-1]) for r in rows) == pytest.approx(float(plan.step.exposed_comm), abs=5e-4 * len(rows) + 1e-12)
    for group, field in PARTS.items():  # and group by group, to the StepBreakdown field it lands in
        charged = float(getattr(plan.step, field))
        assert sum(float(r[-1]) for r in rows if r[0] == group) == pytest.approx(charged, abs=5e-4 * len(rows) + 1e-12)
    # the s/step column: the DP rows to the step's DP traffic (the one group whose total StepBreakdown keeps)
    dp_total = sum(float(r[-2]) for r in rows if r[0] == "DP")
    assert dp_total == pytest.approx(float(plan.step.dp_traffic), abs=5e-4 * len(rows) + 1e-12)


def test_every_charged_collective_has_its_bytes_algorithm_link_and_times(case):
    plan, table = case
    assert table.columns == COMMUNICATION_COLUMNS
    groups = {r[0] for r in table.rows[:-1]}
    assert {g for g, field in PARTS.items() if float(getattr(plan.step, field)) > 0} <= groups
    for group, what, calls, size, algorithm, link, seconds, exposed in table.rows[:-1]:
        assert float(calls.replace(",", "")) > 0 and size.split()[-1] in ("B", "KiB", "MiB", "GiB")
        assert ("/" in algorithm) if group in ("TP", "DP") else algorithm == "p2p / Simple"  # MiB calls (w15 W2)
        assert "NVLink" in link or "network" in link
        assert 0.0 <= float(exposed) <= float(seconds) + 5e-4


def test_the_deepseek_v3_table_counts_the_mtp_module_with_the_layers():
    """DeepSeek-V3 as `plan deepseek-v3 --gpu h100 --gpus 1024 --days 60` picks it (dp1024 ep64 ZeRO-3 mb1, full
    recompute, 1 micro-batch a step): step_time counts the MTP module with the only stage's 61 layers in the
    collectives (62), so the MoE layers the all-to-alls run in are 58 of 61 x 62 = 58.95 (first_k_dense_replace 3),
    4 all-to-alls each (dispatch + combine, forward and backward) x 1 micro-batch = 235.8 calls, printed 236; the
    parent's table counted 58 x 4 = 232 and summed 2.491 s exposed against the step's 2.527 s."""
    ev = evaluator_for(PlanInputs(model="deepseek-v3", gpu="h100", gpus="1024", seq_len=4096))
    plan = evaluate_layout(ev, ParallelLayout(dp=1024, ep=64, zero=3, micro_batch=1, global_batch=1024), "full", 1024.0)
    table = communication_table(plan)
    spec = ev.spec
    assert (spec.num_moe_layers, spec.num_layers, spec.mtp_layers, ALL_TO_ALLS_PER_LAYER) == (58, 61, 1, 4)
    calls = spec.num_moe_layers / spec.num_layers * (spec.num_layers + spec.mtp_layers) * ALL_TO_ALLS_PER_LAYER
    assert calls == pytest.approx(235.8, abs=0.05)
    (ep,) = [c for c in plan.step.collectives if c.parallelism == "EP"]
    assert float(ep.calls) == pytest.approx(calls, rel=1e-12)
    assert [r[2] for r in table.rows if r[0] == "EP"] == ["236"]
    assert table.rows[-1][-1] == f"{float(plan.step.exposed_comm):.3f}"


def test_the_link_column_is_how_step_comm_timed_the_row(case):
    """CollectiveCost.links is what step_comm handed the timing: the expert all-to-all's ranks per domain (8 H100
    a domain over the expert group's stride, at most ep; the pp-8 DeepSeek-V3 layout's tp 8: 1 a domain), a send's
    link (its seconds a call = volumes.p2p_time at the link it names + microseconds of latency); the column prints
    those numbers, so a change to step_comm's rule reaches the text."""
    from gpuplan.core.comm import volumes as C

    plan, table = case
    printed = {(r[0], r[1]): r[5] for r in table.rows[:-1]}
    for c in plan.step.collectives:
        if c.nccl or float(c.calls) <= 0:
            continue
        links, one = c.links, float(c.total) / float(c.calls)
        up, out = float(links.nvlink) / 1e9, float(links.network) / 1e9
        if c.parallelism == "EP":
            ranks, local = int(links.ranks), int(links.per_domain)
            etp = int(c.span) // ranks  # the expert group: etp x ep consecutive ranks, etp = tp here (expert_tp unset)
            assert local == min(8 // etp, ranks)  # a domain's 8 GPUs hold 8 / etp of its ranks, at most ep
            assert printed[("EP", c.collective)] == (f"NVLink ({ranks} ranks, {up:,.0f} GB/s)" if local >= ranks else
                                                     f"{local}/domain x {ranks // local} domains: NVLink + {out:,.0f} "
                                                     "GB/s NIC a GPU")
            continue
        inside = float(links.per_domain) >= 2
        assert inside == (float(c.span) <= 8)
        bandwidth = float(links.nvlink if inside else links.network)
        latency = one - C.p2p_time(float(c.bytes_per_call), bandwidth)  # the link's: microseconds (H100: <= 15 us)
        assert 0 <= latency <= 20e-6
        assert printed[(c.parallelism, c.collective)] == (f"NVLink ({up:,.0f} GB/s)" if inside else
                                                          f"network ({out:,.0f} GB/s a GPU)")


# Llama 3.1 8B at pp 3 on 48 H100, dp16 ZeRO-3 mb1, 128 sequences: 8 micro-batches a step; stage_span splits the
# 32 layers 11 / 11 / 10, and the last stage (10 layers + the 128,256-word LM head and its loss) paces the step
PACED_LAYOUT = ParallelLayout(dp=16, tp=1, pp=3, zero=3, micro_batch=1, global_batch=128)
LAYER_WEIGHTS = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336  # q, o, k, v, gate / up / down: 218,103,808


def _paced_breakdown(framework: str, **ask):
    from dataclasses import replace

    from gpuplan.core.time import megatron_ops as MO
    from gpuplan.jobs.step_classes import paced_stage, step_class_lines

    ev = evaluator_for(PlanInputs(model="llama-3.1-8b", gpu="h100", gpus="48", dtype="fp8", framework=framework, **ask))
    if framework == "megatron":  # the Python API's opt-in: the step charges Megatron's op list and FP8 weight casts
        ev = replace(ev, step=replace(ev.step, megatron_ops=MO.default_ops(ev.spec)))
    plan = evaluate_layout(ev, PACED_LAYOUT, "none", 128.0)
    stage = paced_stage(ev, plan, ev.step_settings("none"))
    assert (stage.name, stage.layers, PACED_LAYOUT.micro_batches_per_step) == ("last", 10, 8)
    lines = {ln.key: ln for ln in step_class_lines(ev, plan, framework)}
    assert sum(ln.value for ln in lines.values()) == pytest.approx(plan.step_seconds, rel=1e-9)
    assert lines["class_gemm"].formula.endswith("the communication the first stage's")  # the label's stage words moved there
    return ev, lines


def test_the_breakdown_charges_torchtitans_float8_gather_on_the_paced_stage():
    """F1 (wave 13): step_time takes torchtitan's float8 all-gather change (no Float8Linear weight cast, its amax pass)
    off the stage that paces it (core.time.stages.paced_stage_layers: the last, 10 layers), the breakdown's copies line
    took it off the first stage's 11 and summed 3.454 ms under the step (1.2831 vs 1.2865 s). One layer's difference
    by hand: its cast, 5 B a weight (FP8_WEIGHT_CAST_BYTES) x 218,103,808 x 8 micro-batches at 3.35 TB/s x 0.75
    (hbm_efficiency) = 3.4723 ms, less its amax pass, 4 B a shard element x 218,103,808 / 16 at 3.35 TB/s x 0.89
    = 18.3 us; the amax all-reduce's 28 B more a layer is latency (under 0.1 us apart)."""
    from gpuplan.core.time import titan_float8 as TF

    ev, lines = _paced_breakdown("torchtitan", fsdp_float8_all_gather=True)
    copies = lines["class_titan_fsdp_copies"]
    assert "float8 all-gather" in copies.label
    first = TF.step_copy_seconds(ev.spec, ev.cluster, ev.step_settings("none"), tp=1, pp=3, shard=16, zero=3,
                                 micro_batches=8, stage_layers=11)  # the parent's: the first stage
    by_hand = 5 * LAYER_WEIGHTS * 8 / (3.35e12 * 0.75) - 4 * LAYER_WEIGHTS / 16 / (3.35e12 * 0.89)
    assert by_hand == pytest.approx(3.454e-3, abs=1e-6)
    assert copies.value - first == pytest.approx(by_hand, abs=1e-7)


def test_the_breakdown_charges_megatrons_fp8_weight_casts_on_the_paced_stage():
    """The same for Megatron's FP8 weight casts (once a step, TE's weight cache): step_time casts the paced stage's
    10 layers' weights; the breakdown cast the first stage's 11 and summed 0.533 ms over the step. By hand (TE's
    current scaling, megatron_ops.quantize_cost: amax read 2 B + read 2 B + write 1 B + transpose 1 B, 3 kernels):
    10 x 218,103,808 x 6 B at 3.35 TB/s x 0.89 = 4.3891 ms + 10 layers x 4 linears x 3 kernels x 7.84 us = 0.9408 ms,
    5.3299 ms."""
    _, lines = _paced_breakdown("megatron")
    by_hand = 10 * LAYER_WEIGHTS * 6 / (3.35e12 * 0.89) + 10 * 4 * 3 * 7.84e-6
    assert by_hand == pytest.approx(5.3299e-3, abs=1e-7)
    assert lines["class_megatron_weight_casts"].value == pytest.approx(by_hand, rel=1e-9)
