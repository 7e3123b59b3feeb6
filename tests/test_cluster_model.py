"""Issue 37: data-parallel schedules per framework (core/comm/dp_overlap.py, core/comm/dp_costs.py), framework
rules and layout uncertainty in the planner (planner/framework_rules.py, planner/uncertainty.py),
batch ramps and end-to-end GPU-hours (planner/batch_ramp.py, jobs/validation/gpu_hours.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm import dp_overlap as O
from gpuplan.core.comm.dp_costs import data_parallel_costs
from gpuplan.core.time.step import StepSettings
from gpuplan.core.comm.topology import cluster_for
from gpuplan.planner.framework_rules import rules_for, zero_allowed

from helpers import planner_choice_cases_once, reference_runs_by_id, validation_cases_once


def test_megatron_buckets_and_the_window_they_hide_behind():
    # max(40M, 1M x dp) parameters a bucket (distributed_data_parallel.py L134): 2.2e9 / 40e6 -> 55 buckets;
    # at dp 256 the bucket is 256M: 2.2e9 / 256e6 -> 9 buckets
    assert O.megatron_buckets(2.2e9, 8) == 55 and O.megatron_buckets(2.2e9, 256) == 9
    # 1.0 s of reduce-scatter in 10 buckets behind 0.7 s of backward: 0.3 s exposed; behind 2 s, the last bucket
    assert O.bucketed_exposed(1.0, 10, 0.7) == pytest.approx(0.3)
    assert O.bucketed_exposed(1.0, 10, 2.0) == pytest.approx(0.1)


def test_fsdp2_exposes_the_first_gather_and_what_a_block_cannot_hide():
    # 4 blocks, 10 ms gather, 5 ms scatter, 8 ms forward and 16 ms backward per block, 1 micro-batch:
    # forward 10 + 3 x max(0, 10 - 8) = 16 ms; backward (10 + 5) + 3 x max(0, 15 - 16) = 15 ms -> 31 ms
    step = O.fsdp2_exposed(0.010, 0.005, 0.008, 0.016, 4, 1, True)
    assert float(step) == pytest.approx(0.031)
    # under a pipeline: one gather before the first forward and one scatter after the last backward
    once = O.fsdp2_exposed(0.010, 0.005, 0.008, 0.016, 4, 8, False)
    assert float(once) == pytest.approx(0.010 + 0.005)


def test_experts_reduce_over_their_own_data_parallel_group():
    # GPT-OSS 120B on 64 B200, dp 64, ep 8, tp 1: dense weights reduce over 64 ranks (8 per node), the
    # experts over 64 / 8 = 8 ranks one per node: each such group owns one NIC of its node (45 GB/s)
    spec = load_model("gpt-oss-120b")
    cluster = cluster_for(load_accelerator("b200"))
    settings = StepSettings(seq_len=4096, dp_overlap=1.0)
    costs = data_parallel_costs(spec, cluster, settings, dp=64, tp=1, pp=1, cp=1, ep=8, zero=1, micro_batches=2,
                                shard_group=None, layers=36, trained_params=14e9, t_bwd_gemm_mb=0.2, compute=1.0)
    grads = costs[0]
    assert grads.group.per_node == 8 and grads.group.nodes == 8
    dense_only = data_parallel_costs(spec, cluster, settings, dp=64, tp=1, pp=1, cp=1, ep=64, zero=1,
                                     micro_batches=2, shard_group=None, layers=36, trained_params=14e9,
                                     t_bwd_gemm_mb=0.2, compute=1.0)[0]
    assert float(grads.total) > float(dense_only.total)  # the expert group's one NIC per node is the slower path


def test_framework_rules_say_what_runs():
    titan, megatron = rules_for("torchtitan"), rules_for("megatron")
    assert not zero_allowed(titan, 1, dp=8, tp=1, pp=1, cp=1, ep_max=1)  # no ZeRO-1/2 in torchtitan
    assert zero_allowed(titan, 3, dp=8, tp=2, pp=4, cp=1, ep_max=1)  # FSDP with TP and PP
    assert not zero_allowed(titan, 0, dp=8, tp=2, pp=1, cp=1, ep_max=1)  # DDP only alone
    assert not zero_allowed(megatron, 2, dp=8, tp=1, pp=1, cp=1, ep_max=1)  # no ZeRO-2 in Megatron-Core
    assert not zero_allowed(megatron, 3, dp=8, tp=1, pp=2, cp=1, ep_max=1)  # Megatron FSDP without a pipeline
    assert zero_allowed(megatron, 1, dp=8, tp=1, pp=2, cp=1, ep_max=1)


def test_torchtitan_plans_only_what_torchtitan_runs(run_cli):
    import json

    code, out, _ = run_cli("plan", "llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "64", "--framework",
                           "torchtitan", "--json")
    assert code == 0
    layouts = [row["layout"] for row in next(t for n, t in json.loads(out)["tables"].items() if n.startswith("top "))]
    assert layouts and all("ZeRO-1" not in text and "ZeRO-2" not in text for text in layouts)


def test_ranking_takes_the_slow_end():  # the layout uncertainty itself: tests/test_cluster_at_scale.py
    from gpuplan.planner.plan import ranking
    from gpuplan.planner.search import LayoutTable

    table = LayoutTable({"step_seconds": np.array([1.0, 1.05]), "global_batch": np.array([8, 8]),
                         "gpus": np.array([8, 8]), "uncertainty": np.array([0.45, 0.11])})
    assert list(ranking(table, "time")) == [1, 0]  # 1.05 x 1.11 < 1.0 x 1.45


def test_packaged_layout_uncertainty_is_the_current_code():
    from importlib import resources

    from gpuplan.jobs.validation.uncertainty import uncertainty_json

    packaged = (resources.files("gpuplan.catalog") / "reference" / "layout_uncertainty.json").read_text("utf-8")
    assert packaged == uncertainty_json(), "regenerate with: python -m gpuplan.jobs.validation.uncertainty"


def test_a_batch_ramp_costs_time_on_the_same_layout():
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.jobs.training.layout import layout_for_gpus
    from gpuplan.planner.batch_ramp import ramp_timing

    inputs = PlanInputs(model="llama-3.1-8b", tokens=1e12, gpu="h100", gpus=64, seq_len=4096, global_batch=512)
    ev, plan = evaluator_for(inputs), layout_for_gpus(inputs, 64)
    # no phase, or every token at the steady batch: the steady step itself, factor exactly 1 (1 + no extra time)
    assert ramp_timing(ev, plan, 1e12, []).factor == 1.0
    assert ramp_timing(ev, plan, 1e12, [(1e12, plan.global_batch)]).factor == 1.0
    # half the tokens at a quarter of the batch: fewer micro-batches per pipeline, never faster per token
    assert ramp_timing(ev, plan, 1e12, [(0.5e12, plan.global_batch / 4)]).factor >= 1.0


def test_end_to_end_gpu_hours_held_out_mean_within_a_point_of_its_level():
    from gpuplan.jobs.validation.estimate import KIND_END_TO_END
    from gpuplan.jobs.validation.gpu_hours import EIGHTH_SET, FIFTH_SET, FOURTH_SET, SEVENTH_SET, SIXTH_SET

    cases = validation_cases_once()
    held = [c for c in cases if c.kind == KIND_END_TO_END.format(role="held out")
            and c.id not in FOURTH_SET + FIFTH_SET + SIXTH_SET + SEVENTH_SET + EIGHTH_SET]  # the twenty: a fixed regression subset (the held-out runs before
    # wave 13); waves 13 / 15 / 19 (BioMedLM, Llemma 7B / 34B, OLMo 3 7B / 32B) are scored with the rest in tests/test_validation.py (the
    # note's twenty-five) and tests/test_gpu_hours_w13.py / test_gpu_hours_w15.py
    third = {"santacoder-1.1b", "llmc-gpt2-774m", "llmc-gpt2-1558m",  # wave 7's set, entered by the same criterion,
             "llmc-gpt2-350m"}  # and the 350M written then, entered in wave 12 once --framework llmc fits it
    assert len(held) == 20
    # With the third set the twenty land at 10.6% (10.61%, bias -3.7%; max 20.3%, llm.c GPT-2 350M; at f805772, 10.0%
    # before wave 12's TE CP ring kernels, chunk-wise DP syncs and untied embedding gradient; wave 12, the
    # llm.c rows under --framework llmc: 774M +31.4 -> +16.0%, 1558M +9.9 -> -6.8%): issue 37's 10% bar is NOT met
    # on them (the nineteen before the 350M: 9.8% in wave 12, as docs/training.md quotes it, 10.1% at f805772). Bound:
    # the mean + ~1 point when set (10.3%, before 5ca3e63 gave the fp16 NeoX rows back their 2-byte gradient wire;
    # was 0.123 at 11.3%). The bar below stays on the sixteen it was written for.
    assert sum(abs(c.error) for c in held) / len(held) < 0.113
    held = [c for c in held if c.id not in third]
    assert len(held) == 16
    # issue 37's bar is 10% mean; the sixteen held-out runs land at 10.0% (9.96%, bias -5.8%; docs/accuracy.md at
    # f805772; 9.26% before wave 12): 11.9% on the 7 fixed (DeepSeek-V3 +14.4%: --flex-backend's default deepep pads
    # under FP8, Megatron-Core's) before TinyLlama (+4.9%, added after its prediction was computed), 8.9% on the 8
    # entered by training_runs.yaml's written criterion before their predictions were computed (Pythia 160M-12B,
    # MPT-7B -18.5%, StarCoderBase -10.7%; 17.9% when entered, their inputs revised after the misses were seen:
    # docs/training.md, README). (All re-read from docs/accuracy.md at f805772; before wave 12: 9.26%, 10.7% with
    # DeepSeek-V3 +10.0%, 8.6%.) The bounds were those means + ~1 point when written
    # (14.1% and 11.2% then); the 7-run one, 0.129, by the 7's 11.9% at 8db2070. Of the wave-12 move 10.65 ->
    # 11.88% (review_w12_r2 M1, git-archive trees): TE's CP ring (48a6f57, 617b869; the planner's DeepSeek-V3
    # layout is cp 2 with MLA's 128-head K/V, the real run used no CP) took it to 11.43% (+0.78 point),
    # DeepSeek-V3 +10.0 -> +15.5%, still under the old 0.118; 0d4052f (DP syncs chunk by chunk under
    # interleaving) crossed it, 11.88% (+0.45 point): LLaMA-65B (vpp 10, no cp) -5.8 -> -9.9%, DeepSeek-V3
    # +15.5 -> +14.6%; c690f7d (TE's ring output corrections on MLA's value width) +14.6 -> +14.4%; 11.90% at f805772.
    # The 16-run bound was issue 37's bar itself (10% mean; was 0.149, 5.2 points loose) until wave 16. Issue 37's
    # 10% bar is NOT met on the sixteen since wave 16: 9.71% -> 10.30% with B1's ramp-aware ranking (6077a464, PaLM
    # end to end -1.7% -> -11.1%: its -1.7% rested on a pp 3 layout, x1.215 of ramp bubble, that the run did not
    # use: Sec. 4 ran no pipeline), then 10.43% (bias -6.3%) with PaLM on its own shape and Sec. 4 layout (C2:
    # dp512 tp12 pp1 ZeRO-3, -11.1% -> -13.2%; 10.44% at -13.3% with its one norm a layer, 77399762). PaLM's
    # reported chip-hours include the rollbacks and repeated steps after its loss spikes (Sec. 5.1), which no model
    # here charges. The lead's decision: the model changes
    # stay; the bound is the mean + ~0.5 point, so a further drift fails here.
    assert sum(abs(c.error) for c in held) / len(held) < 0.109
    first = [c for c in held if c.id in ("llama1-65b", "bloom-176b", "palm-540b", "pythia-70m", "pythia-1b",
                                         "deepseek-v3", "smollm3-3b")]
    # the 7: 13.04% since wave 16 C2 (PaLM -1.7% -> -13.2% this wave, -13.3% since 77399762, 13.04% still; 12.74% at
    # -11.1%); bound the mean + ~0.5 point
    assert len(first) == 7 and sum(abs(c.error) for c in first) / 7 < 0.135
    ramp = next(c for c in cases if c.id == "llama3.1-405b" and "end to end" in c.kind)
    assert "batch ramp x1.0" in ramp.basis


def test_gpu_hours_runs_are_timed_at_their_own_shapes():
    """LLaMA-1 65B and SmolLM3 name catalog shapes (catalog/models), not a bare count, which took Llama 2
    70B's GQA shape and Llama 3.2 3B's 28 x 3,072. Counted by hand from the sources' shapes."""
    import yaml
    from importlib import resources

    from gpuplan.adapters.resolve import resolve_model
    from gpuplan.core.model.spec import count_parameters
    from gpuplan.jobs.validation.gpu_hours import run_inputs

    runs = {r["id"]: r for r in yaml.safe_load((resources.files("gpuplan.catalog") / "reference" /
                                                "training_runs.yaml").read_text("utf-8"))["runs"]}
    llama = resolve_model(run_inputs(runs["llama1-65b"]).model)
    # facebookresearch/llama model.py: FFN = 256 x ceil(int(2 x 4 x 8,192 / 3) / 256) = 22,016; 64 heads, no GQA;
    # 2 x 32,000 x 8,192 + 80 x (4 x 8,192^2 + 3 x 8,192 x 22,016 + 2 x 8,192) + 8,192 = 65,285,660,672
    assert (llama.mlp.intermediate_size, llama.attention.num_kv_heads) == (22016, 64)
    assert count_parameters(llama).total == 65_285_660_672
    smol = resolve_model(run_inputs(runs["smollm3-3b"]).model)
    # stage1_8T.yaml: 128,256 x 2,048 (tied) + 36 x (2 x 2,048^2 + 2 x 2,048 x 512 + 3 x 2,048 x 11,008 + 2 x 2,048)
    # + 2,048 = 3,075,098,624
    assert (smol.num_layers, smol.hidden_size, smol.attention.num_kv_heads) == (36, 2048, 4)
    assert count_parameters(smol).total == 3_075_098_624


def test_planner_choice_splits_into_model_error_and_advantage():
    cases = planner_choice_cases_once()
    assert len(cases) >= 60
    for c in cases:
        if c.layout_stated:
            assert 1 + c.error == pytest.approx((1 + c.model_error) * (1 + c.advantage))
        else:  # degrees-only groups (planner_choice.degrees_only_groups): no published layout to time
            assert math.isnan(c.model_error) and math.isfinite(c.error)
    assert sum(not c.layout_stated for c in cases) == 4  # the IBM / Meta 512-H100 rows (70B, 405B x BF16, FP8)
    assert all("ZeRO-1" not in c.layout and "ZeRO-2" not in c.layout for c in cases if c.framework == "torchtitan")


def test_plan_explain_names_the_nccl_algorithm(run_cli):
    code, out, _ = run_cli("plan", "llama-3.1-70b", "--tokens", "15T", "--gpu", "h100", "--gpus", "1024", "--explain")
    assert code == 0
    assert "NCCL algorithm / protocol" in out and "ring / " in out
    assert "exposed s" in out and "domains" in out


def test_end_to_end_gpu_hours_times_the_layout_a_run_states():
    """A run whose training configuration states its layout is timed at it, every degree fixed (a
    degree it leaves out is 1): BLOOM's tr11-176B-ml.slurm runs TP 4 x PP 12 with micro-batch 2 on
    384 GPUs, so dp = 384 / 48 = 8, and ramps its batch from 192 sequences over 9,765,625 samples
    (2.0e10 tokens, 5.5% of its 366B); SmolLM3's nanotron config runs DDP (zero_stage 0), which the
    free planner replaced by ZeRO-1."""
    from gpuplan.jobs.validation.gpu_hours import end_to_end_gpu_hours, run_inputs

    runs = reference_runs_by_id()
    bloom = run_inputs(runs["bloom-176b"])
    assert (bloom.tp, bloom.pp, bloom.vpp, bloom.cp, bloom.ep, bloom.zero, bloom.micro_batch) == (4, 12, 1, 1, 1, 1, 2)
    # 256 equal steps of the linear ramp (batch_ramp_field.LINEAR_STEPS, review w16 R6 S2): 192 + (2048 - 192) x
    # (i + 0.5) / 256 sequences, 2e10 / 256 = 78.125M tokens each
    phases = bloom.ramp_phases()  # the row's ramp as the user's --batch-ramp (run_inputs): the one path
    assert [t for t, _ in phases] == pytest.approx([78.125e6] * 256)
    assert [b for _, b in phases][:2] + [phases[-1][1]] == pytest.approx([195.625, 202.875, 2044.375])
    _, basis = end_to_end_gpu_hours(runs["bloom-176b"])
    assert "stated layout dp8 tp4 pp12 ZeRO-1 mb2" in basis and "batch ramp x1.0" in basis
    smol = run_inputs(runs["smollm3-3b"])
    assert (smol.tp, smol.zero, smol.micro_batch) == (2, 0, 3)
    assert "stated layout dp192 tp2 pp1 ZeRO-0 mb3" in end_to_end_gpu_hours(runs["smollm3-3b"])[1]
    # PaLM's Sec. 4 layout (12-way model parallel x 256-way FSDP a pod, no pipeline) on its Table 1 shape
    # (catalog palm-540b, wave 16 C2): stated tp 12, pp 1, ZeRO-3; the micro-batch left to the planner
    palm = run_inputs(runs["palm-540b"])
    assert (palm.model, palm.tp, palm.pp, palm.zero, palm.micro_batch) == ("palm-540b", 12, 1, 3, None)
    assert "stated --tp 12 --pp 1 --zero 3: dp512 tp12 pp1 ZeRO-3" in end_to_end_gpu_hours(runs["palm-540b"])[1]
    # a run without a stated layout keeps the planner's: no degree fixed (DeepSeek-V3: none stated)
    dsv3 = run_inputs(runs["deepseek-v3"])
    assert (dsv3.tp, dsv3.pp, dsv3.zero, dsv3.micro_batch) == (None, None, None, None)


def test_palm_runs_its_stated_batch_ramp():
    # PaLM (arXiv:2204.02311 Sec. 5): 512 sequences for 50k steps, 1,024 up to step 115k, then 2,048; of
    # 2,048-token sequences: 50,000 x 512 x 2,048 = 52.43e9 tokens and 65,000 x 1,024 x 2,048 = 136.31e9
    import yaml
    from importlib import resources

    from gpuplan.jobs.validation.gpu_hours import end_to_end_gpu_hours, run_inputs

    text = (resources.files("gpuplan.catalog") / "reference" / "training_runs.yaml").read_text("utf-8")
    palm = next(r for r in yaml.safe_load(text)["runs"] if r["id"] == "palm-540b")
    assert run_inputs(palm).ramp_phases() == [(pytest.approx(50_000 * 512 * 2048, rel=1e-3), 512.0),
                                 (pytest.approx(65_000 * 1024 * 2048, rel=1e-3), 1024.0)]
    # Since wave 16 C2 the row states Sec. 4's layout, dp512 tp12 pp1 ZeRO-3, where the step model picks mb4: one
    # step is 512 x 4 = 2,048 sequences, so planner.batch_ramp.runnable_batch (a whole number of dp x micro-batch
    # sequences, at least one; Megatron-Core's num_microbatches_calculator.py@core_v0.18.0 L381-388) runs the
    # 512- and 1,024-sequence phases at 2,048: the ramp costs nothing on this layout (the free search's dp1024 tp6
    # mb2 likewise). Left out: a phase that would run a smaller micro-batch (mb1 at 512) is not timed. Before,
    # on the params-only shape, the planner's pp 3 layouts charged x1.043-x1.215 here. When this fails the ramp
    # reaches PaLM's layout: bound its factor again (the phases carry 24% of the tokens: below x1.24).
    hours, basis = end_to_end_gpu_hours(palm)
    assert "batch ramp" not in basis and "dp512 tp12 pp1 ZeRO-3 mb4" in basis
    steady, steady_basis = end_to_end_gpu_hours({k: v for k, v in palm.items() if k != "batch_ramp"})
    assert "batch ramp" not in steady_basis
    assert hours == steady  # exactly: a phase rounded up to the steady batch is the steady step itself
    # (planner.batch_ramp.ramp_timing; a re-timing had given x1.0000000000000002)
