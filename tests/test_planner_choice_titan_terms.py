"""Issue 37, torchtitan: which term makes the planner's own choice look faster than the best published
run (jobs/validation/planner_choice.advantage_split), and where the step model's record says that term
is optimistic (docs/step.md, Planner, 'Where the torchtitan advantage comes from').

The measurements spy on core.time.step.step_time and core.comm.step_comm.data_parallel_costs as the
validation calls them; nothing is fitted here."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from helpers import published_rows_by_id

H100 = "h100-sxm-96gb-500w"


@pytest.fixture()
def spy(monkeypatch):
    """Each step_time the validation runs: (its StepBreakdown, the data-parallel collectives' total seconds)."""
    from gpuplan.core.comm import step_comm
    from gpuplan.core.time import step as S
    from gpuplan.jobs.validation import published_throughput as P, throughput as T

    seen = {"tp_costs": []}
    step_time, dp_costs, tp_cost = S.step_time, step_comm.data_parallel_costs, step_comm._tp_cost

    def dp_spy(*args, **kwargs):
        costs = dp_costs(*args, **kwargs)
        seen["dp_total"] = float(sum(np.sum(c.total) for c in costs))
        seen["dp_costs"] = costs
        return costs

    def tp_spy(*args, **kwargs):
        seen["tp_costs"].append((args, tp_cost(*args, **kwargs)))
        return seen["tp_costs"][-1][1]

    def step_spy(*args, **kwargs):
        seen["step"] = step_time(*args, **kwargs)
        return seen["step"]

    monkeypatch.setattr(step_comm, "data_parallel_costs", dp_spy)
    monkeypatch.setattr(step_comm, "_tp_cost", tp_spy)
    monkeypatch.setattr(P, "step_time", step_spy)
    monkeypatch.setattr(T, "step_time", step_spy)
    return seen


def test_the_degrees_factor_of_one_changed_degree_worked_by_hand(spy):
    """The published 405B layout (pp 8, vpp 2, dp 8, mb 4, GBS 256: m = 256 / (8 x 4) = 8 micro-batches) with
    only vpp 2 -> 1 (plain 1F1B), the same full recompute. By hand (core.time.pipeline_schedule): the bubble
    (pp - 1) / vpp goes 3.5 -> 7 micro-batch times, x 2; the stage transfers on the critical path go
    2 (pp vpp - 1) = 30 -> 2 (m + pp) - 5 = 27 (plain 1F1B's blocking exchanges); nothing else in the
    step moves but FSDP2's reductions: under torch.distributed.pipelining each stage reduce-scatters after its
    own last backward (core.comm.dp_overlap.pipeline_reduce_exposed), so with one chunk a rank the whole
    reduction is exposed where with two the first chunk's half ran beside the second's backward.

    That term by hand: Llama-3.1-405B has 405,853,388,800 parameters (126 layers x 3,187,703,808 + embedding and
    head 2 x 128,256 x 16,384 + the final norm 16,384); a rank holds 1 / (tp 8 x pp 8) of them, reduced in fp32
    (torchtitan's mixed_precision_reduce) in 16 calls, one a block: 1,585,364,800 B a call. A ring
    reduce-scatter over the 8 FSDP ranks, one per node, moves 7/8 of it through the GPU's 400 Gb/s NIC:
    27.74 ms on the wire, a floor no algorithm beats; the collective model gives 30.93 ms (busbw 44.9 GB/s,
    89.7% of the NIC), and the bound allows up to 1.25 x the wire. The first chunk's 8 calls run beside the
    second chunk's backward (one micro-batch's backward over the rank's blocks, 1.56 s, longer than them), so
    they slow it only by the SMs NCCL holds, 16 of H100's 132: D_plain - D = (1 - 16/132) x 8 x one call
    (0.2175 s). With the published step's total T, bubble B and PP seconds P the degrees factor is
    T / (T + B - 3/30 P + D_plain - D) (0.772 before the pipeline reductions were charged, 0.770 with them);
    the published layout itself splits as (1, 1)."""
    from gpuplan.jobs.validation.planner_choice import advantage_split
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s, published_layout

    run = published_rows_by_id()["torchtitan-2412-llama-3.1-405b-512g-interleaved-1f1b"]
    published = published_layout(run["layout"])
    assert (published.pp, published.vpp, published.micro_batches_per_step) == (8, 2, 8)
    assert advantage_split(run, published, "full") == pytest.approx((1.0, 1.0), rel=1e-12)
    predict_tokens_per_gpu_s(run)
    step = spy["step"]
    reduce_scatter = next(c for c in spy["dp_costs"] if c.collective.startswith("grad reduce-scatter"))
    params = 126 * 3_187_703_808 + 2 * 128_256 * 16_384 + 16_384
    assert params == 405_853_388_800
    assert float(reduce_scatter.calls) == 16
    assert float(reduce_scatter.bytes_per_call) == pytest.approx(params / 64 * 4 / 16, rel=1e-12)
    one_call = float(reduce_scatter.total) / 16
    wire = params / 64 * 4 / 16 * 7 / 8 / (400e9 / 8)
    # the model's reduce-scatter is the wire time plus NCCL's ring latency and bus efficiency (core/comm/collectives.py):
    # 30.93 ms against 27.74 ms of wire at 3abebc5 (x1.115); 1.25 is a stated margin above that, not a sourced figure
    assert wire <= one_call <= 1.25 * wire
    exposed_more = (1 - 16 / 132) * 8 * one_call
    degrees = advantage_split(run, replace(published, vpp=1), "full")[1]
    plain = spy["step"]  # the last one timed: the planner's layout
    assert float(plain.bubble) == pytest.approx(2 * float(step.bubble), rel=1e-9)
    assert float(plain.pp_comm) == pytest.approx(27 / 30 * float(step.pp_comm), rel=1e-9)
    assert float(plain.dp_comm) - float(step.dp_comm) == pytest.approx(exposed_more, rel=1e-6)
    expected = float(step.total) / (float(step.total) + float(step.bubble) - 3 / 30 * float(step.pp_comm)
                                    + exposed_more)
    assert degrees == pytest.approx(expected, rel=1e-9)


def test_the_mode_factor_worked_by_hand(spy):
    """The published 70B layout (FSDP 32 x TP 8, full AC) timed without recompute. By hand: the forward is
    1 of fwd 1 + bwd 2 units of compute, full recompute runs it twice (4 vs 3), so the compute drops to about
    3/4 (0.757 measured: the compute also holds FSDP copies and kernels recompute does not re-run, hence
    2%); TP charges 4 RS + AG pairs a layer, 6 under full recompute (core.comm.step_comm._tp_cost). The row
    runs async TP (core.comm.async_tp): the two pairs recompute drops are the forward's, both fused (1/tp of
    them exposed plus their shard copies and partial sums), while the backward's two unfused reduce-scatters
    stay in both modes, so less than 2/6 of the exposed TP seconds go (0.235 of them at 2026-12-06; 1/3
    before async TP's unfused reduce-scatters were charged): exactly core.comm.async_tp.exposed_seconds at 6
    exchanges a layer minus the same at 4, on the row's own TP collectives (one NCCL reduce-scatter and
    all-gather of the [tokens, h] buffer on the TP group), x (1 - tp_overlap); nothing else moves. With the
    published step's total T, compute C and the TP seconds that go, dTP, the mode factor is
    T / (T - C / 4 - dTP)."""
    from gpuplan.core.comm import async_tp as AT
    from gpuplan.core.comm.collectives import collective_seconds
    from gpuplan.jobs.validation.planner_choice import advantage_split
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s, published_layout

    run = published_rows_by_id()["torchtitan-2506-llama-3.1-70b-256g-bf16-async-tp"]
    predict_tokens_per_gpu_s(run)
    full = spy["step"]
    mode = advantage_split(run, published_layout(run["layout"]), "none")[0]
    none = spy["step"]
    dropped_tp = float(full.tp_comm - none.tp_comm)
    (args_full, tp_full), (args_none, tp_none) = spy["tp_costs"][0], spy["tp_costs"][-1]
    spec, cluster, settings, tp = args_full[:4]
    assert (settings.recompute, args_none[2].recompute, settings.tp_comm_overlap) == ("full", "none", True)
    assert float(tp_full.calls) / 6 == float(tp_none.calls) / 4  # micro-batches x layers, 6 and 4 exchanges

    def async_exposed(exchanges):
        rs, ag = (collective_seconds(kind, tp_full.bytes_per_call, tp_full.group)
                  for kind in ("reduce_scatter", "all_gather"))
        return (1 - settings.tp_overlap) * AT.exposed_seconds(
            reduce_scatter=rs, all_gather=ag, exchanges_per_layer=exchanges, tp=tp,
            calls_per_exchange_layer=float(tp_full.calls) / 6, act_bytes=tp_full.bytes_per_call,
            hbm_bytes_per_s=cluster.gpu.memory_bandwidth, fused_qkv=settings.titan_ops.fused_qkv)

    # + the embedding's and the output layer's exchanges outside the layers (core.comm.embedding_tp: exposed,
    # outside torchtitan's compiled blocks; the same in both modes)
    edges = sum(float(c.exposed) for c in full.collectives
                if c.parallelism == "TP" and c.collective.startswith(("embedding", "output layer")))
    assert edges > 0
    assert float(full.tp_comm) == pytest.approx(float(async_exposed(6)) + edges, rel=1e-9)
    assert dropped_tp == pytest.approx(float(async_exposed(6) - async_exposed(4)), rel=1e-9)
    assert dropped_tp / (float(full.tp_comm) - edges) == pytest.approx(0.235, abs=0.0005)  # below 2/6: unfused RS stay
    assert float(none.compute) == pytest.approx(3 / 4 * float(full.compute), rel=0.02)
    assert float(full.total - none.total) == pytest.approx(
        float(full.compute - none.compute + full.tp_comm - none.tp_comm), rel=1e-9)
    by_hand = float(full.total) / (float(full.total) - float(full.compute) / 4 - dropped_tp)
    assert mode == pytest.approx(by_hand, rel=0.02)


def test_the_405b_advantage_is_the_published_layouts_pipeline_bubble(spy):
    """Published FSDP 8 x TP 8 x PP 8, interleaved (vpp 2), 8 micro-batches: a bubble of (8 - 1) / 2 = 3.5
    micro-batch times against 8 of work (pipeline_bubble_fraction). The planner's FSDP 256 x TP 2 (the same
    full recompute) has none: the bubble's removal alone is 1 / (1 - bubble share) of the published step."""
    from gpuplan.core.parallel import ParallelLayout
    from gpuplan.jobs.validation.planner_choice import advantage_split
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    run = published_rows_by_id()["torchtitan-2412-llama-3.1-405b-512g-interleaved-1f1b"]
    # the row gathers in float8 (fsdp_float8_all_gather, b9b0936); the bubble's claim is read with bf16 gathers
    bf16_gathers = {**run, "fsdp_float8_all_gather": False}
    predict_tokens_per_gpu_s(bf16_gathers)
    step = spy["step"]
    assert step.bubble / step.compute == pytest.approx(3.5 / 8, rel=0.02)  # compute holds the FSDP copies too
    without_bubble = step.total / (step.total - step.bubble)
    choice = ParallelLayout(dp=256, tp=2, pp=1, zero=3, micro_batch=1, global_batch=256)
    degrees = advantage_split(bf16_gathers, choice, "full")[1]  # the published mode: its factor is 1 by construction
    assert degrees > 1.3  # +37.8% at the time of writing, +43.2% now
    assert without_bubble == pytest.approx(degrees, rel=0.06)  # the bubble is nearly all of it (1.39 vs 1.43)
    # With the row's float8 gathers the choice gains 1.530 / 1.432 = 1.069 more (b9b0936; 1.055 before 582e44b took
    # the weight cast off at the rate it was charged): FSDP 256 x TP 2 copies out and casts every micro-batch of
    # its 8, the published pp 8 layout once a step, so it sheds more; bubble 1.395 of 1.530 (this test failed
    # from b9b0936 to the wave-12 mend)
    assert advantage_split(run, choice, "full")[1] / degrees == pytest.approx(1.069, abs=0.01)


def test_the_70b_advantage_is_mostly_the_recompute_mode_then_the_tp_width():
    """FSDP 32 x TP 8 with full AC (published) vs the planner's FSDP 128 x TP 2, mb 1, op-level SAC: the
    mode carries +20%, TP 8 -> 2 (GEMM width h/tp 1,024 -> 4,096) and the micro-batch the rest."""
    from gpuplan.core.parallel import ParallelLayout
    from gpuplan.jobs.validation.planner_choice import advantage_split

    run = published_rows_by_id()["torchtitan-2506-llama-3.1-70b-256g-bf16-async-tp"]
    mode, degrees = advantage_split(run, ParallelLayout(dp=128, tp=2, pp=1, zero=3, micro_batch=1, global_batch=512),
                                    "selective")
    assert 1.15 < mode < 1.25
    assert 1.05 < degrees < mode


def _dp_ratio(spy, run) -> float:
    """Data-parallel collectives' seconds (hidden or not) per second of compute at ``run``'s layout."""
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    predict_tokens_per_gpu_s(run)
    return spy["dp_total"] / spy["step"].compute


def test_the_aug_2024_405b_rows_carry_more_fsdp_traffic_than_the_planners_70b_and_405b_choices(spy):
    """The 70B / 405B choices gather and reduce each block every micro-batch of one 8,192-token sequence:
    FSDP traffic 0.40 / 0.53 of their compute. The 28 Dec-2024 / 2025 torchtitan rows carry at most 0.13;
    torchtitan's Aug-2024 405B FSDP 16 x TP 8 rows on 128 of the same H100s (docs/performance.md@3faaa1a)
    carry 0.62 (BF16) and 0.704 (Float8, charged their float8 gathers since b9b0936; 0.905 with bf16 gathers):
    the choices sit inside what ran."""
    from gpuplan.jobs.validation.published_throughput import published_throughput_rows, why_not

    from gpuplan.planner.uncertainty import PUBLISHED_FSDP_TRAFFIC

    rows = [r for r in published_throughput_rows() if r["family"].startswith("torchtitan") and not why_not(r)]
    traffic = {r["id"]: _dp_ratio(spy, r) for r in rows}
    # 31 rows scored (why_not empty) in published_throughput.yaml: torchtitan-2024-h100 18 +
    # torchtitan-2025-asynctp-h100 8 + torchtitan-2025-h200 2 + torchtitan-2024-08-h100 3
    assert len(traffic) == 31
    # the constant is the most any scored row carries as the model charges it, rounded up: since b9b0936 (and
    # 582e44b's cast rate) the Float8 rows are charged their float8 gathers and read 0.704 (0.905 with bf16
    # gathers, when the constant was the BF16 row's 0.62 rounded up, 0.63)
    assert PUBLISHED_FSDP_TRAFFIC - 0.01 < max(traffic.values()) <= PUBLISHED_FSDP_TRAFFIC
    assert max(traffic.values()) == pytest.approx(0.704, abs=0.005)  # 0.905 before b9b0936
    assert max(v for k, v in traffic.items() if not k.startswith("torchtitan-2408")) <= 0.13
    bf16_405b = traffic["torchtitan-2408-llama-3.1-405b-128g-fsdp-tp"]
    choice_70b = {**published_rows_by_id()["torchtitan-2506-llama-3.1-70b-256g-bf16-async-tp"]}
    choice_70b["layout"] = {**choice_70b["layout"], "dp": 128, "tp": 2, "micro_batch": 1, "recompute": "selective"}
    choice_405b = {**published_rows_by_id()["torchtitan-2412-llama-3.1-405b-512g-interleaved-1f1b"]}
    choice_405b["layout"] = {**choice_405b["layout"], "dp": 256, "tp": 2, "pp": 1, "vpp": 1, "micro_batch": 1}
    assert 3 * 0.13 < _dp_ratio(spy, choice_70b) < bf16_405b
    assert 3 * 0.13 < _dp_ratio(spy, choice_405b) < bf16_405b


def test_on_h100_fsdp_runs_the_model_is_more_optimistic_the_more_fsdp_traffic(spy):
    """The named subset: llm-foundry's H100 BF16 FSDP rows (catalog/reference/throughput_runs.yaml, 64 of
    them, 8 to 512 GPUs): the step model's error against their data-parallel traffic / compute. Least
    squares: about +9% at no traffic and +0.59 per unit (MPT-13B at 2 x 2,048 tokens a micro-batch,
    0.43-0.55: +36..+38%), where the layouts torchtitan published sit at <= 0.13 and the planner's 70B / 405B
    choices at 0.40 / 0.53: planner.uncertainty.FSDP_TRAFFIC_SLOPE is that slope. (A share of 0.79 of FSDP
    traffic on the critical path instead of NCCL's 16 / 132 SMs would make it 0 on the 37 single-node rows;
    not adopted: it takes torchtitan's held-out FP8 rows from 7.9% to 9.0% mean error, docs/step.md.)"""
    from gpuplan.planner.uncertainty import FSDP_TRAFFIC_SLOPE
    from gpuplan.jobs.validation.throughput import _case, throughput_reference

    rows = [r for r in throughput_reference()["runs"] if r["family"] == "llm-foundry" and r["gpu"].startswith("h100")
            and r.get("precision") != "fp8" and (r["layout"].get("zero") or 0) >= 3]
    assert len(rows) == 64
    errors, ratios = [], []
    for run in rows:
        errors.append(_case(run).error)
        ratios.append(spy["dp_total"] / spy["step"].compute)
    slope, at_zero = np.polyfit(ratios, errors, 1)
    assert slope == pytest.approx(FSDP_TRAFFIC_SLOPE, abs=0.01)  # 0.588 at the time of writing
    assert 0.0 < at_zero < 0.15


def test_fsdp_traffic_widens_the_uncertainty_beyond_the_published_traffic_only():
    from gpuplan.planner.uncertainty import fsdp_traffic_uncertainty

    u = fsdp_traffic_uncertainty(np.array([1.31, 0.53, 1.31, 1.31, 0.71]), np.array([1.0, 1.0, 1.0, 0.0, 1.0]),
                                 np.array([3, 3, 1, 3, 3]))
    # 0.59 x (1.31 - 0.71) = 0.354; at or below 0.71 (the 405B choice's 0.53 too): 0; ZeRO-1: 0; no
    # compute (untimed row): 0
    assert list(u) == pytest.approx([0.354, 0.0, 0.0, 0.0, 0.0], abs=1e-9)


def test_torchtitans_ranking_takes_the_traffic_term_and_megatrons_does_not():
    """70B FSDP 128 x TP 2 on 256 H100, held (full recompute, which both frameworks fit), at 2,048-token
    sequences: FSDP traffic 1.24 of compute, beyond the 0.71 any published torchtitan layout carried (0.704, rounded up). Under
    torchtitan its uncertainty carries 0.59 x (traffic - 0.71) on top of the distance-and-kind figure;
    under megatron (its own data-parallel schedule) the same layout's does not. At the check group's
    8,192-token sequences the same layout carries 0.33: inside what ran, no term."""
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import search
    from gpuplan.planner.uncertainty import fsdp_traffic_uncertainty, layout_uncertainty

    uncertain = {}
    for framework in ("torchtitan", "megatron"):
        inputs = PlanInputs(model="llama-3.1-70b", tokens=1e12, gpu=H100, gpus=256, seq_len=2048, global_batch=1024,
                            framework=framework, tp=2, pp=1, cp=1, zero=3, micro_batch=1, recompute="full")
        result = search(inputs)
        t = result.table
        asked = np.flatnonzero(t["gpus"] == 256)  # the counts below it are weighed too since 208a97ae (exact batch)
        assert len(asked) == 1
        i = int(asked[0])
        u = result.evaluator.uncertainty
        base = layout_uncertainty(t.columns, u.active_params, result.evaluator.cluster.gpus_per_node, False, u.known,
                                  u.widest)
        extra = fsdp_traffic_uncertainty(t["dp_traffic_seconds"], t["compute_seconds"], t["zero"])
        uncertain[framework] = (float(t["uncertainty"][i] - base[i]), float(extra[i]))
    added, expected = uncertain["torchtitan"]
    assert added == pytest.approx(expected) and expected == pytest.approx(0.59 * (1.244 - 0.71), abs=0.01)
    assert uncertain["megatron"][0] == pytest.approx(0.0)


def test_fsdp2_at_the_aug_2024_405b_traffic_is_not_as_optimistic_as_fsdp1(spy):
    """torchtitan's 405B FSDP 16 x TP 8 rows (docs/performance.md@3faaa1a: 109 / 177 / 185 tokens/s/GPU,
    BF16 / Float8 / Float8 + async TP) carry 0.62 / 0.704 / 0.704 of their compute in FSDP traffic (0.905 with
    bf16 gathers, before b9b0936). At that traffic llm-foundry's FSDP1 fit (planner.uncertainty
    FSDP_TRAFFIC_SLOPE: +0.086 + 0.588 x traffic) puts the model at +45% / +50%; it is +11.1% / -8.0% / +2.1%
    there when the rows were added (kept within 0.03; the async-TP row -2.3% since core.comm.async_tp charges its
    unfused reduce-scatters; the Float8 rows -4.4% / +1.9% once they gather in float8, b9b0936, and -3.8% /
    +2.6% with the weight cast off at the rate it was charged, 582e44b), inside the torchtitan BF16 family's
    +3.7% ... +9.8% at the low-traffic 8B FSDP rows."""
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s
    from gpuplan.planner.uncertainty import FSDP_TRAFFIC_SLOPE

    expected = {"torchtitan-2408-llama-3.1-405b-128g-fsdp-tp": 0.111,
                "torchtitan-2408-llama-3.1-405b-128g-fsdp-tp-float8": -0.038,  # -0.080 before b9b0936
                "torchtitan-2408-llama-3.1-405b-128g-fsdp-tp-float8-asynctp": 0.026}  # -0.023 before b9b0936
    for rid, error in expected.items():
        run = published_rows_by_id()[rid]
        predicted = predict_tokens_per_gpu_s(run) / run["measured"]["tokens_per_s_per_gpu"] - 1
        traffic = spy["dp_total"] / spy["step"].compute
        assert predicted == pytest.approx(error, abs=0.03), rid
        assert traffic > 0.6 and predicted < 0.086 + FSDP_TRAFFIC_SLOPE * traffic - 0.3, rid
