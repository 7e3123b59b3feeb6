"""Communication collective by collective (core/comm/step_comm.py), `plan --explain`, and the FP8
operand-cast cost (core/time/step.py): hand-computed volumes and the sums step_time reports."""

from __future__ import annotations

import pytest

from gpuplan.adapters.hf_config import model_spec_from_hf_config
from gpuplan.adapters.resolve import resolve_gpu
from gpuplan.catalog import model_entries
from gpuplan.core.model import flops as F
from gpuplan.core.time.step import StepSettings, microbatch_compute_time, params_per_gpu, step_time
from gpuplan.core.comm.step_comm import step_communication
from gpuplan.core.comm.topology import cluster_for


def _spec(name):
    return model_spec_from_hf_config(model_entries()[name]["config"], name=name)


LAYOUT = dict(dp=4, tp=2, pp=2, vpp=2, cp=1, ep=4, zero=1, micro_batch=1, micro_batches=8, shard_group=None)


def _costs(spec, settings, **layout):
    cluster = cluster_for(resolve_gpu("h100"))
    lay = {**LAYOUT, **layout}
    layers = spec.num_layers // lay["pp"]
    t_mb, t_attn, t_bwd, phases = microbatch_compute_time(spec, cluster, settings, lay["tp"], lay["cp"],
                                                          lay["micro_batch"], layers, head=False, ep=lay["ep"])
    return step_communication(spec, cluster, settings, **lay, layers=layers,
                              trained_params=params_per_gpu(spec, lay["tp"], lay["pp"], lay["ep"], settings.expert_tp),
                              t_attn_mb=t_attn, t_bwd_gemm_mb=t_bwd, compute=t_mb * lay["micro_batches"],
                              moe_phases=phases)


def test_volumes_are_the_hand_counts():
    spec = _spec("mixtral-8x7b")  # h 4096, 32 layers, top-2 of 8 experts
    costs = {c.parallelism + ":" + c.collective: c for c in _costs(spec, StepSettings(seq_len=4096))}
    tokens = 4096
    # TP: 4 collectives per layer x 16 layers of the stage x 8 micro-batches, b·s·h·2 bytes each
    tp = costs["TP:RS + AG (SP)"]
    assert tp.calls == 4 * 16 * 8 and tp.bytes_per_call == tokens * 4096 * 2
    # PP: forward and backward send per micro-batch, twice as many boundaries with vpp 2
    pp = costs["PP:send/recv"]
    assert pp.calls == 2 * 8 * 2 and pp.bytes_per_call == tokens * 4096 * 2 / 2
    # EP: each TP rank dispatches its s/tp tokens x top-2 x h x 2 bytes, 4 all-to-alls per MoE layer
    ep = costs["EP:all-to-all"]
    assert ep.bytes_per_call == tokens / 2 * 2 * 4096 * 2 and ep.calls == 4 * 16 * 8
    assert ep.span == 2 * 4  # tp x cp x ep consecutive ranks: inside an 8-GPU node


def test_step_time_is_the_sum_of_the_collectives():
    spec = _spec("mixtral-8x7b")
    settings = StepSettings(seq_len=4096)
    costs = _costs(spec, settings)
    cluster = cluster_for(resolve_gpu("h100"))
    step = step_time(spec, cluster, settings, **LAYOUT)
    assert step.exposed_comm == pytest.approx(sum(c.exposed for c in costs))
    assert step.comm_total == pytest.approx(sum(c.total for c in costs))
    assert step.ep_comm == pytest.approx(sum(c.exposed for c in costs if c.parallelism == "EP"))


def test_tp_comm_overlap_leaves_one_chunk_in_tp_exposed():
    """TE userbuffers / async TP split each TP collective into tp chunks pipelined with the GEMM:
    the same bytes and total time, 1/tp of it exposed (tp 2 here: half)."""
    spec = _spec("mixtral-8x7b")
    plain = {c.parallelism: c for c in _costs(spec, StepSettings(seq_len=4096))}["TP"]
    chunked = {c.parallelism: c for c in _costs(spec, StepSettings(seq_len=4096, tp_comm_overlap=True))}["TP"]
    assert chunked.total == pytest.approx(plain.total) and plain.exposed == pytest.approx(plain.total)
    assert chunked.exposed == pytest.approx(plain.total / 2)
    both = {c.parallelism: c for c in _costs(spec, StepSettings(seq_len=4096, tp_overlap=0.5,
                                                                tp_comm_overlap=True))}["TP"]
    assert both.exposed == pytest.approx(plain.total * 0.5 / 2)


def test_ep_overlap_and_dispatcher_are_user_inputs(run_cli):
    """--ep-overlap hides that share of the all-to-all; --ep-dispatcher flex sends one copy per
    remote node: never more network time than alltoall. Both reach the planner from the CLI."""
    spec = _spec("mixtral-8x7b")
    def ep(**settings):
        return {c.parallelism: c for c in _costs(spec, StepSettings(seq_len=4096, **settings), ep=16, tp=1)}["EP"]

    plain, hidden, flex = ep(), ep(ep_overlap=0.75), ep(ep_dispatcher="flex")
    assert hidden.total == pytest.approx(plain.total) and hidden.exposed == pytest.approx(0.25 * plain.total)
    # top-2 over two 8-GPU nodes: alltoall sends 2 x 8/16 = 1 copy per token over the network,
    # flex 1 - (1/2)^2 = 0.75 (the network leg dominates both; latency terms are equal)
    assert flex.total == pytest.approx(0.75 * plain.total, rel=0.02)
    code, _, err = run_cli("plan", "mixtral-8x7b", "--tokens", "1T", "--gpu", "h100", "--gpus", "256",
                           "--ep-dispatcher", "nccl")
    assert code == 2 and "ep_dispatcher" in err and "alltoall, flex" in err


def test_published_recipes_overlap_tp_as_their_code_says(published_rows):
    """Megatron-Bridge Llama 3 recipes with TP > 1 set userbuffers; its MoE and Llama 2 recipes do
    not; torchtitan only in the rows run with AsyncTP."""
    from gpuplan.jobs.validation.published_throughput import tp_comm_overlapped

    rows = published_rows
    assert tp_comm_overlapped(rows["mbridge-26.04.01-llama-3-70b-h100-sxm-64g-fp8cs"])
    assert not tp_comm_overlapped(rows["mbridge-26.04.01-qwen3-235b-a22b-h100-sxm-256g-fp8cs"])
    assert tp_comm_overlapped(rows["torchtitan-2506-llama-3.1-70b-256g-bf16-async-tp"])
    assert not tp_comm_overlapped(rows["torchtitan-2506-llama-3.1-70b-256g-bf16-vanilla-tp"])


def test_fp8_pays_for_its_operand_casts():
    spec = _spec("llama-3.1-8b")
    cluster = cluster_for(resolve_gpu("h100"))
    bf16 = microbatch_compute_time(spec, cluster, StepSettings(seq_len=4096, dtype="bf16"), 1, 1, 1, 32, head=False)
    fp8 = microbatch_compute_time(spec, cluster, StepSettings(seq_len=4096, dtype="fp8"), 1, 1, 1, 32, head=False)
    # the casts alone: 32 layers x 4096 tokens x (7 B x widths + 5 B x weights / tokens) / (3.35 TB/s x 0.75)
    widths = F.layer_gemm_widths_per_token(spec)
    weights = F.layer_matmul_weights_per_token(spec) / 32
    cast = 32 * 4096 * (7 * widths + 5 * weights / 4096) / (3.35e12 * 0.75)
    gemm_bf16 = bf16[2]  # backward GEMM seconds (2 x forward)
    gemm_fp8 = fp8[2]
    # FP8 GEMMs: the FP8 peak (1978.9 vs 989.4 TFLOP/s) at 0.709 / 0.803 of the efficiency
    assert gemm_fp8 == pytest.approx(gemm_bf16 * 989.4 / 1978.9 / (0.709 / 0.803))
    assert fp8[0] - bf16[0] == pytest.approx(cast + 1.5 * (gemm_fp8 - gemm_bf16), rel=1e-6)
    assert widths == (4096 + 4096 + 2 * 1024) + (4096 + 4096) + (4096 + 2 * 14336) + (14336 + 4096)


def test_plan_explain_prints_the_communication_table(capsys):
    from gpuplan.cli import main

    assert main(["plan", "mixtral-8x7b", "--tokens", "2T", "--gpu", "h100", "--gpus", "256", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "Communication per step" in out and "all-to-all" in out and "exposed s" in out


def test_op_sac_recomputes_every_other_matmul():
    from gpuplan.core.memory.recompute import op_sac_recomputed_share

    # Llama-3.1-8B forward matmuls per token: wqkv 4096 x 6144, wo 4096 x 4096, w1, w3, w2 4096 x 14336;
    # op-level SAC saves wqkv, w1, w2 and re-runs wo and w3: (16.78M + 58.72M) / 218.10M = 34.6%
    share = op_sac_recomputed_share(_spec("llama-3.1-8b"))
    assert share == pytest.approx((4096 * 4096 + 4096 * 14336) / (4096 * 6144 + 4096 * 4096 + 3 * 4096 * 14336))
    assert share == pytest.approx(0.3462, abs=1e-4)


def test_nvl72_is_one_scale_up_domain():
    # GB200 NVL72: trays of 4 GPUs, but all 72 share NVLink 5 switches: a group of 64 rides NVLink
    cluster = cluster_for(resolve_gpu("gb200"))
    assert cluster.gpus_per_node == 72
    from gpuplan.core.comm.step_comm import link

    assert link(cluster, 64) == cluster.link(1)
    assert link(cluster, 73) == cluster.link(73)


def test_published_throughput_rows_are_scored_or_excluded_with_a_reason():
    from gpuplan.jobs.validation.published_throughput import published_throughput_cases, published_throughput_rows

    rows = published_throughput_rows()
    cases, excluded = published_throughput_cases()
    assert len(cases) + len(excluded) == len(rows) >= 120
    assert all(reason for _, reason in excluded)
    assert sum(c.moe for c in cases) >= 40 and sum(c.precision == "fp8" for c in cases) >= 60


@pytest.mark.parametrize("model, gpu, gpus", [
    ("llama-3.1-8b", "h100", 64), ("llama-3.1-70b", "h100", 1024), ("llama-3.1-405b", "h100", 16384),
    ("llama-3.1-70b", "b200", 512), ("mixtral-8x7b", "h100", 256), ("deepseek-v3", "h100", 2048),
])
def test_plans_beyond_the_best_published_mfu_say_so(model, gpu, gpus):
    from gpuplan.catalog import prediction_band
    from gpuplan.jobs.plan.estimate import plan_report
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.validation.mfu_ceiling import best_published_mfu, hardware_class

    report = plan_report(PlanInputs(model=model, tokens="2T", gpu=gpu, gpus=(gpus,)))
    mfu = report.value("best_mfu")
    moe = model in ("mixtral-8x7b", "deepseek-v3")
    band, _ = prediction_band("bf16", moe=moe)
    table = best_published_mfu()
    best = table.get((hardware_class(resolve_gpu(gpu).id), moe, "bf16"))
    if best is None:  # only FP8 published: its throughput in BF16-peak terms bounds BF16
        best_mfu = table[(hardware_class(resolve_gpu(gpu).id), moe, "fp8")].mfu * 2
    else:
        best_mfu = best.mfu
    warned = any("above the best published" in note for note in report.notes)
    assert mfu <= best_mfu * (1 + band) * 1.001 or warned
    assert warned == (mfu > best_mfu * (1 + band) * 1.001) or abs(mfu - best_mfu * (1 + band)) < 0.01


def test_expert_all_to_all_inside_one_domain_moves_the_flat_all_to_all_bytes():
    from gpuplan.core.comm import volumes as C

    # 8 ranks in one NVLink domain: every remote copy rides NVLink, 7/8 of k x tokens x h x 2 bytes, + one 5 us
    # latency a peer (the MoE exchange's dispatch_per_peer_seconds); NCCL's all-to-all moves the same bytes but
    # pays one batch and NCCL's call cost (8 MiB a peer: Simple, 8.4 us) instead of 7 x 5 us (wave 15)
    moe = C.expert_all_to_all_time(1024, 8192, 8, 8, 8, 360e9, 45e9, 5e-6, 15e-6)
    assert moe == pytest.approx(1024 * 8 * 8192 * 7 / 8 / 360e9 + 7 * 5e-6)
    assert C.all_to_all_time(1024 * 8 * 8192, 8, 360e9, 5e-6) == pytest.approx(moe - 35e-6 + 5e-6 + 8.4e-6)


def test_expert_all_to_all_across_two_nodes_by_hand():
    from gpuplan.core.comm import volumes as C

    # ep 16 over two 8-GPU nodes, top-8, 1,024 tokens of 8,192 bytes. NCCL all-to-all: 7/16 of the 8
    # copies stay on NVLink (3.5 x 8 MiB = 28 MiB at 360 GB/s), 8/16 cross the network (4 x 8 MiB at
    # 45 GB/s); the two run at once, the network is the longer: 33,554,432 / 45e9 + 1 x 15 us
    tokens, hb = 1024, 8192
    plain = C.expert_all_to_all_time(tokens, hb, 8, 16, 8, 360e9, 45e9, 5e-6, 15e-6)
    assert plain == pytest.approx(tokens * 4 * hb / 45e9 + 15e-6)
    # DeepEP-style: one copy per remote node, 1 - (1/2)^8 = 0.996 of a token crosses the network
    flex = C.expert_all_to_all_time(tokens, hb, 8, 16, 8, 360e9, 45e9, 5e-6, 15e-6, deduplicate=True)
    intra = tokens * 8 * 7 / 16 * hb / 360e9 + 7 * 5e-6
    inter = tokens * (1 - 0.5 ** 8) * hb / 45e9 + 15e-6
    assert flex == pytest.approx(max(intra, inter))
    assert C.expected_remote_nodes(4, 8) == pytest.approx(3 * (1 - 0.75 ** 8))


def test_expert_tensor_parallel_one_keeps_a_64_rank_expert_group_on_nvl72():
    """tp 2, ep 64 on GB200 NVL72: with Megatron-Core's default etp = tp the expert group spans
    128 ranks, past the 72-GPU domain; Megatron-Bridge's MoE recipes set etp = 1: 64 ranks, NVLink."""
    spec = _spec("qwen3-30b-a3b")
    cluster = cluster_for(resolve_gpu("gb200"))
    common = dict(dp=32, tp=2, pp=1, vpp=1, cp=1, ep=64, zero=1, micro_batch=1, micro_batches=4, shard_group=None)

    def ep_cost(settings):
        layers = spec.num_layers
        t_mb, t_attn, t_bwd, _ = microbatch_compute_time(spec, cluster, settings, 2, 1, 1, layers, head=False)
        costs = step_communication(spec, cluster, settings, **common, layers=layers,
                                   trained_params=params_per_gpu(spec, 2, 1, 64), t_attn_mb=t_attn,
                                   t_bwd_gemm_mb=t_bwd, compute=t_mb * 4)
        return next(c for c in costs if c.parallelism == "EP")

    default, bridge = ep_cost(StepSettings(seq_len=4096)), ep_cost(StepSettings(seq_len=4096, expert_tp=1))
    assert (default.span, bridge.span) == (128, 64)
    assert bridge.total < default.total


def test_train_with_a_predicted_mfu_carries_the_ceiling_note_too():
    """`train --mfu predicted` plans with the same step model as `plan`, so it warns the same way:
    Mixtral on 256 H100 is predicted at 56.6% MFU against the best published Hopper MoE run
    (36.8% in BF16-peak terms, an FP8 run)."""
    from gpuplan.jobs.training.estimate import estimate_training
    from gpuplan.jobs.training.schema import TrainingInputs

    report = estimate_training(TrainingInputs(model="mixtral-8x7b", tokens=1e12, gpu="h100", gpus=256,
                                              mfu="predicted"))
    assert any("treat this plan's time as optimistic" in note for note in report.notes)
    plain = estimate_training(TrainingInputs(model="mixtral-8x7b", tokens=1e12, gpu="h100", gpus=256))
    assert not any("optimistic" in note for note in plain.notes)  # a given MFU is the user's call


def test_nvfp4_runs_linears_at_the_fp4_peak_with_fp8_style_casts(run_cli):
    """dtype fp4 (NVFP4, Megatron-Bridge bf16_with_nvfp4_mixed): the linear GEMMs at the FP4 peak,
    block-scaled (the MXFP8 factor), attention and LM head in BF16, operand casts as FP8 -> faster
    than FP8, less than 2x. The three published GB200 NVFP4 runs are held out for the block-scaled
    factor: +3.6% to +7.0% with the MAMF table's measured GB200 FP8 fraction 0.723 (+1.9% to +5.2%
    with the 0.685 derived from the BF16 fraction before it; +9% to +12% without the factor)."""
    from gpuplan.jobs.validation.published_throughput import published_throughput_cases

    spec = _spec("llama-3.1-70b")
    cluster = cluster_for(resolve_gpu("gb200"))
    kw = dict(dp=8, tp=2, pp=4, vpp=5, micro_batch=1, micro_batches=32)
    fp8 = step_time(spec, cluster, StepSettings(seq_len=8192, dtype="fp8"), **kw).compute
    fp4 = step_time(spec, cluster, StepSettings(seq_len=8192, dtype="fp4"), **kw).compute
    assert fp8 / 2 < fp4 < fp8
    gb200 = [c for c in published_throughput_cases()[0] if c.precision == "fp4" and "gb300" not in c.id]
    # NVFP4 rows run without TP comm overlap (published_throughput.tp_comm_overlapped: the perf
    # configs' `tp_comm_overlap = False if precision == "nvfp4"`): 26.04.01 / 26.06 -6.8% to +3.7%
    # (+2.1% to +6.0% while they were timed with userbuffers' chunked overlap)
    newer = [c for c in gb200 if c.family in ("nemo-26.04.01-gb200", "nemo-26.06-gb200")]
    assert len(newer) == 3 and all(-0.075 < c.error < 0.045 for c in newer), [(c.id, c.error) for c in newer]
    # the same GB200 configurations in the 26.02 / 26.02.01 / 26.04 tables: -2.8% (26.04) to +13.1% (26.02
    # 70B): NVFP4 got faster release by release
    assert len(gb200) == 9 and all(-0.075 < c.error < 0.14 for c in gb200), [(c.id, c.error) for c in gb200]
    # GB300 (Blackwell Ultra, FP4 peak 15 PF, the B300's kernel fractions) NVFP4 rows, held out:
    # -10.2% to +7.2% over the 26.02-26.06 tables (-10.2% to +18.0% with the tp-4 405B rows' TP collectives
    # chunked by userbuffers, which these NVFP4 recipes switch off; -14.1% to +14.5% before cuDNN's measured
    # GB300 attention rate, core/time/attention_core.py FLASH_TENSOR_RATE: attention runs BF16 in these recipes)
    ultra = [c for c in published_throughput_cases()[0] if c.precision == "fp4" and "gb300" in c.id]
    assert len(ultra) == 9 and all(abs(c.error) < 0.11 for c in ultra), [(c.id, c.error) for c in ultra]
    code, _, err = run_cli("plan", "llama-3.1-70b", "--tokens", "1T", "--gpu", "h100", "--gpus", "64", "--dtype", "fp4")
    assert code == 2 and "fp4" in err


def test_mxfp8_casts_by_hand_and_block_scaled_gemms_cost_the_fitted_factor():
    """MXFP8 writes a rowwise and a columnwise copy with one E8M0 scale per 32 elements and needs no
    amax pass: 2 + 2 x (1 + 1/32) = 4.0625 B per element (per-tensor: 7). Its GEMMs take
    BLOCK_SCALED_GEMM_TIME_FACTOR x the per-tensor FP8 time: forward GEMM + backward GEMM + casts."""
    from gpuplan.core.time import step as S

    assert S.MXFP8_CAST_BYTES_PER_ELEMENT == 4.0625
    spec = _spec("llama-3.1-8b")
    cluster = cluster_for(resolve_gpu("b200"))
    tw = microbatch_compute_time(spec, cluster, StepSettings(seq_len=4096, dtype="fp8"), 1, 1, 1, 32, head=False)
    mx = microbatch_compute_time(spec, cluster, StepSettings(seq_len=4096, dtype="fp8", fp8_recipe="mxfp8"),
                                 1, 1, 1, 32, head=False)
    widths = F.layer_gemm_widths_per_token(spec)
    weights = F.layer_matmul_weights_per_token(spec) / 32
    bw = 8.0e12 * 0.75  # B200 HBM x hbm_efficiency
    cast_tw = 32 * 4096 * (7 * widths + 5 * weights / 4096) / bw
    cast_mx = 32 * 4096 * 4.0625 * (widths + weights / 4096) / bw
    assert mx[2] == pytest.approx(tw[2] * S.BLOCK_SCALED_GEMM_TIME_FACTOR)  # backward GEMM seconds
    assert mx[0] - tw[0] == pytest.approx(1.5 * (mx[2] - tw[2]) + cast_mx - cast_tw, rel=1e-6)
    assert mx[0] > tw[0]  # slower overall: the GEMMs outweigh the cheaper casts


def test_block_scaled_factor_is_the_fit_of_its_named_subset_and_holds_out():
    """Refit from the packaged rows: the three 25.09 dense one-layout pairs give 1.149 (constant
    1.15); the nine held-out one-layout pairs' FP8-CS / MXFP8 ratios: mean 2.97%, the eight besides
    DeepSeek-V3 within 3.6% (25.11 Llama 3.1 405B on B200 +3.55%, 25.11 Llama 3 8B on GB200 -3.13%).
    The mean was 1.9% when the bound was set, 2.3% before a8fc6d4 counted current scaling's four
    kernels per expert slice from TE's code (the MoE pairs' predicted ratio fell, read from the code, not
    fitted), and 2.51% before 2026-12-06, when the FP8-CS rows began gathering their primary FP8 weights
    at 1 B (fp8_param_gather, read from Megatron-Bridge's preset and Megatron-Core's uint8 buffer: their
    predicted ratio rose where the gather is exposed, 405B +2.0 points; the refit then lowered the factor
    1.164 -> 1.149, lowering every held-out ratio ~0.4 point) and the 25.11 405B / B200 MXFP8 run gathers
    synchronously (its perf config's overlap_param_gather False: +0.9 point); the bound is that 2.97% (2.98% when set) +
    0.1 point, so a regression past it fails."""
    from gpuplan.core.time.step import BLOCK_SCALED_GEMM_TIME_FACTOR
    from gpuplan.jobs.validation.fp8_recipes import fit_block_scaled_gemm_time_factor, recipe_pairs

    pairs = recipe_pairs()
    fit = [p for p in pairs if p.in_fit_subset]
    assert sorted(p.id for p in fit) == ["mbridge-25.09-llama-3-8b-b200-8g-mxfp8",
                                         "mbridge-25.09-llama-3-8b-gb200-8g-mxfp8",
                                         "mbridge-25.09-llama-3.1-405b-b200-128g-mxfp8"]
    assert fit_block_scaled_gemm_time_factor(fit) == pytest.approx(BLOCK_SCALED_GEMM_TIME_FACTOR, abs=0.01)
    held = [abs(p.predicted_ratio() / p.measured_ratio - 1) for p in pairs if p.same_layout and not p.in_fit_subset]
    assert len(held) == 9 and sum(held) / len(held) < 0.031, held
    # the four MoE pairs also carry current scaling's per-expert amax pass (core.time.moe_layer): DeepSeek-V3
    # on 256 B200 (32 local experts) -9.0% (-3.8% before it); the other eight within 5%
    assert sorted(held)[-2] < 0.05 and max(held) < 0.10, held


def test_fp8_recipe_is_checked_at_the_input_boundary(run_cli):
    code, _, err = run_cli("plan", "llama-3-8b", "--tokens", "1T", "--gpu", "b200", "--gpus", "64",
                           "--fp8-recipe", "mxfp8")
    assert code == 2 and err.startswith("error: fp8_recipe:") and "--dtype fp8" in err
    code, _, err = run_cli("plan", "llama-3-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "64",
                           "--dtype", "fp8", "--fp8-recipe", "mxfp8")
    assert code == 2 and err.startswith("error: fp8_recipe:") and "block-scaled" in err
    code, out, _ = run_cli("plan", "llama-3-8b", "--tokens", "1T", "--gpu", "b200", "--gpus", "64",
                           "--dtype", "fp8", "--fp8-recipe", "mxfp8")
    assert code == 0 and "best layout" in out


def test_plan_states_how_its_low_precision_linears_are_costed():
    from gpuplan.jobs.plan.estimate import plan_report
    from gpuplan.jobs.plan.schema import PlanInputs

    def assumption(**kw):
        report = plan_report(PlanInputs(model="llama-3-8b", tokens=1e12, gpu="b200", gpus="8", **kw))
        return {a.key: a.value for a in report.assumptions}.get("fp8_recipe")

    assert assumption() is None  # bf16: nothing to say
    assert assumption(dtype="fp8").startswith("per-tensor FP8: casts 7 B/element")
    assert assumption(dtype="fp8", fp8_recipe="mxfp8").startswith("MXFP8: casts 4.0625 B/element, block-scaled GEMMs x1.15")
