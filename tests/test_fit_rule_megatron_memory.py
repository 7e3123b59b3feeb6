"""What Megatron-Core holds that the fit rule on published layouts was getting wrong (docs/memory.md,
*Published layouts the fit rule still refuses*): the interleaved schedule's per-rank warm-up and the MoE
routed row's expert output, which Megatron-Core from 0.13 does not save. Bytes worked by hand."""

import pytest

from gpuplan.catalog import load_model
from gpuplan.core.memory import activations as A
from gpuplan.core.memory import training as M
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.time.step import layer_activation_bytes

from helpers import published_rows_by_id


@pytest.mark.parametrize("pp, vpp, micro_batches, stage, chunks", [
    # Megatron-Core get_pp_rank_microbatches (schedules.py@core_v0.14.0 L733-734): w = 2 (pp - i - 1) + (v - 1) pp
    # warm-up chunks, w + 1 held at the first steady-state backward, each 1 / v of the stage's layers
    (8, 5, 64, 0, 2 * 7 + 4 * 8 + 1),  # 47 chunks = 9.4 stages' worth = 8 (1 + 7 / 40), Korthikanti Sec. 4.2.3
    (8, 5, 64, 3, 2 * 4 + 4 * 8 + 1),  # 41
    (8, 5, 64, 7, 0 + 4 * 8 + 1),      # 33 = 6.6 stages' worth on the last rank
    (4, 2, 4, 0, 4 * 2),               # 2·3 + 4 + 1 = 11 > m·v = 8 chunks: all of the step in warm-up
])
def test_interleaved_in_flight_per_rank(pp, vpp, micro_batches, stage, chunks):
    assert A.pipeline_micro_batches_in_flight(pp, vpp, micro_batches, stage) == pytest.approx(chunks / vpp, rel=1e-12)


@pytest.mark.parametrize("pp, micro_batches, stage, held", [(4, 64, 0, 4), (4, 64, 3, 1), (4, 2, 1, 2), (4, 2, 3, 1)])
def test_one_f_one_b_in_flight_per_rank(pp, micro_batches, stage, held):
    # non-interleaved: min(pp - i - 1, m) warm-up micro-batches + the steady-state one (at most m)
    assert A.pipeline_micro_batches_in_flight(pp, 1, micro_batches, stage) == held


def test_last_interleaved_stage_holds_33_of_47_chunks():
    """Llama 3 70B, tp 4 pp 8 vpp 5 (the Megatron-Bridge H100 FP8 recipe), 8,192 tokens, 64 micro-batches:
    every stage has 10 layers, so the last stage's layer activations are 33 / 47 of the first's."""
    spec = load_model("llama-3-70b")
    layout = ParallelLayout(dp=2, tp=4, pp=8, vpp=5, micro_batch=1, global_batch=128)
    settings = M.MemorySettings(seq_len=8192, recipe="megatron", implementation="megatron", framework="megatron")
    first = M.stage_memory(spec, layout, settings, 0).activations
    last = M.stage_memory(spec, layout, settings, 7).activations
    assert last / first == pytest.approx(33 / 47, rel=1e-9)


def test_megatron_moe_routed_row_keeps_no_expert_output():
    """Qwen3-30B-A3B (h 2,048, 128 experts, top 8, expert width 768), per token of one MoE layer, bf16:
    router 4·128 + 2·128 = 768; per routed row fc1 input 2·2048, fc1 output 2·2·768, fc2 input 2·768 and the
    fp32 probability 4 (no 2·2048 expert output: Megatron-Core >= 0.13 unpermutes without probs)."""
    spec = load_model("qwen3-30b-a3b")
    assert (spec.hidden_size, spec.moe.num_experts, spec.moe.experts_per_token,
            spec.moe.expert_intermediate_size, spec.moe.shared_intermediate_size) == (2048, 128, 8, 768, 0)
    router = 4 * 128 + 2 * 128
    assert A.moe_bytes(spec, "megatron", 2) == router + 8 * (2 * 2048 + 4 + 4 * 768 + 2 * 768)  # 70,432
    # MXFP8 (TE's quantised inputs, 1 + 1/32 B): fc1 input 2,112, fc2 input 792
    assert A.moe_bytes(spec, "megatron", 2, linear_input_bytes=1 + 1 / 32) == pytest.approx(
        router + 8 * (2112 + 4 + 4 * 768 + 792), rel=1e-12)  # 48,608
    # HF's loop over experts weights each expert's output: gathered row + weighted output 2·2048 each, 4i MLP
    assert A.moe_bytes(spec, "hf", 2) == router + 8 * (2 * 2 * 2048 + 4 * 2 * 768)


def test_step_traffic_still_reads_the_unpermuted_row():
    """core.time.step's elementwise traffic proxy keeps the row the unpermute reads (c·h per routed row)."""
    spec = load_model("qwen3-30b-a3b")
    saved = A.layer_activations(spec, 4096, impl="megatron", moe_layer=True).total
    assert layer_activation_bytes(spec, 4096, "megatron") - saved == 8 * (2 * 2048 - 4)


def test_published_qwen3_30b_row_drops_by_the_expert_outputs(monkeypatch):
    """Qwen3-30B-A3B on 8 B200, ep 8, micro-batch 4 x 4,096 tokens, no recompute, MXFP8 (Megatron-Bridge
    26.04), pp 1 (one micro-batch in flight): 48 MoE layers x 16,384 tokens x 8 rows x (2·2048 - 4) B =
    25,744,637,952 B (23.98 GiB) fewer activations; refused before, fits now."""
    from gpuplan.jobs.validation.published_fits import row_plan

    run = published_rows_by_id()["mbridge-26.04-qwen3-30b-a3b-b200-8g-mxfp8"]
    now = row_plan(run)
    monkeypatch.setattr(A, "unsaved_expert_output_bytes", lambda *a: 0.0)
    before = row_plan(run)
    assert before.memory.activations - now.memory.activations == 48 * 16384 * 8 * (2 * 2048 - 4)
    assert before.headroom_bytes < 0 < now.headroom_bytes


@pytest.mark.parametrize("linear_input_bytes, any_layout, copies", [
    (1.0, True, 1),            # tensor-scaled FP8 on sm_100: no transpose (TE is_non_tn_fp8_gemm_supported)
    (1.0, False, 2),           # Hopper: FP8 GEMMs are TN-only, TE keeps the transpose
    (1 + 1 / 32, True, 2),     # MXFP8: row-wise and column-wise scale blocks, on any GPU
    (0.5 + 1 / 16, True, 2),   # NVFP4 likewise
])
def test_fp8_weight_copies(linear_input_bytes, any_layout, copies):
    from gpuplan.core.memory.recipe_facts import weight_copies

    settings = M.MemorySettings(linear_input_bytes=linear_input_bytes, fp8_any_layout_gemm=any_layout)
    assert weight_copies(settings) == copies


def test_fp8_primary_weights_on_blackwell_hold_one_byte_per_matrix_parameter():
    """Llama 3 70B, FP8 primary weights, dp 8 (weights unsharded): the layer matrices are
    80 x (8192 x (8192 + 2 x 1024) + 8192 x 8192 + 3 x 8192 x 28672) = 68,451,041,280 parameters, so the
    sm_100 run holds that many bytes fewer than the Hopper one (1 B instead of data + transpose)."""
    spec = load_model("llama-3-70b")
    layout = ParallelLayout(dp=8, zero=1, micro_batch=1, global_batch=8)
    hopper = M.MemorySettings(seq_len=8192, recipe="megatron", implementation="megatron", framework="megatron",
                              linear_input_bytes=1.0, low_precision_weights="primary")
    blackwell = M.MemorySettings(**{**hopper.__dict__, "fp8_any_layout_gemm": True})
    saved = M.stage_memory(spec, layout, hopper, 0).weights - M.stage_memory(spec, layout, blackwell, 0).weights
    assert saved == pytest.approx(80 * (8192 * (8192 + 2 * 1024) + 8192 * 8192 + 3 * 8192 * 28672), rel=1e-12)


def test_plan_sets_any_layout_gemm_on_the_sm100_parts():
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for

    def flag(gpu):
        inputs = PlanInputs(model="llama-3-70b", tokens=1e12, gpu=gpu, gpus=64, dtype="fp8", framework="megatron")
        return evaluator_for(inputs).memory.fp8_any_layout_gemm
    assert [flag(g) for g in ("b200", "gb200", "b300", "gb300", "h100-sxm", "h200-sxm")] == [True] * 4 + [False] * 2


def test_nemo2_fp8_rows_run_a_bf16_gradient_buffer():
    """NeMo 25.02 / 25.04 FP8 perf scripts set grad_reduce_in_fp32 False (pretrain_llama31_405b.py@v2.2.0 L80,
    scripts/performance/utils.py@v2.3.0 L351): the 405B rows' gradient buffer is 2 B per parameter, half the
    fp32 buffer counted before; the row (tp 4 pp 8 vpp 8 cp 2 on 128 B200) was refused and fits."""
    from gpuplan.jobs.validation.published_fits import recipe_memory_fields, row_plan

    run = published_rows_by_id()["nemo2502-llama-3.1-405b-b200-128g"]
    # + its FP8 primary weights (fp8_params = True, mixed_precision.py@v2.2.0 L53: tests/test_fp8_param_gather)
    assert recipe_memory_fields(run) == {"grad_dtype": "bf16", "low_precision_weights": "primary"}
    now = row_plan(run)
    before = row_plan({**run, "recipe_memory": {"zero": 1}})
    assert now.memory.grads / before.memory.grads == pytest.approx(2 / 4, rel=1e-12)
    assert before.headroom_bytes < 0 < now.headroom_bytes


@pytest.mark.parametrize("ep, expected", [
    # DeepSeek-V3 (hidden 7,168, bf16 tokens: 14,336 B), Megatron's 20 SMs = 10 channels, DeepEP v1.2.1 configs;
    # per buffered token 14,336 + 8 (source meta) + 128 x 8 + 128 x 4 + 128 x 4 = 16,392 B (RDMA: + 16)
    # ep 64 = 8 nodes of 8: NVL 10 x 8 x (19 x 4 + 288 x 16,392) = 377,677,760 -> 377,677,824 (128-aligned);
    # RDMA 10 x 8 x (18 x 2 x 4 + 2 x 140 x 16,408) = 367,550,720 -> one 2^29 NVSHMEM granule; + 32 MiB workspace
    (64, 377_677_824 + 2**29 + 2**25),
    # ep 8, one node: NVL 10 x 8 x (5 x 4 + 256 x 16,392) = 335,709,760 -> 335,709,824; no RDMA buffer
    (8, 335_709_824 + 2**25),
    (1, 0.0),
])
def test_deep_ep_buffers_by_hand(ep, expected):
    from gpuplan.core.memory.deep_ep import deep_ep_bytes

    assert deep_ep_bytes(ep, 7168) == expected


def test_deepep_row_holds_deepep_buffers_not_nccl_all_to_all_peers():
    """DeepSeek-V3 on 1,024 H100 (Megatron-Bridge 25.09, moe_enable_deepep, ep 64): NCCL all-to-all's 63 peers x
    3.28 GB / 7 (x 1.5 / 1.5 on H100) = 29.52 GB replaced by DeepEP's 948,103,168 B; refused before, fits."""
    from gpuplan.jobs.validation.published_fits import row_plan

    run = published_rows_by_id()["mbridge-25.09-deepseek-v3-h100-sxm-1024g-fp8cs"]
    now = row_plan(run)
    before = row_plan({**run, "moe_comm": {**run["moe_comm"], "dispatcher": "alltoall"}})
    assert now.fixed_bytes - before.fixed_bytes == pytest.approx(377_677_824 + 2**29 + 2**25 - 63 * 3.28e9 / 7,
                                                                 rel=1e-12)
    assert before.headroom_bytes < 0 < now.headroom_bytes


def test_combined_1f1b_holds_its_warm_up_and_one_layer():
    """--overlap-moe-expert-parallel-comm warms up one chunk more (schedules.py@d98e8a64 L964-970) and then fuses each
    forward with a backward layer by layer (model_chunk_schedule_plan.py L553-586): pp 8 vpp 4, first rank
    w = 2 x 7 + 3 x 8 = 38, so 38 + 1 = 39 chunks held, as without it (39 / 4 stages' worth), and one layer of the
    stage's 12 more: 39 / 4 + 1 / 12 (it was 40 / 4). pp 1: one micro-batch and one layer of 48; one micro-batch in
    the step has no fused step. All in warm-up (pp 2 vpp 2, m 2: w + 1 = 5 >= m v = 4): the step's 2 micro-batches."""
    assert A.pipeline_micro_batches_in_flight(8, 4, 128, 0, True, 12) == pytest.approx(39 / 4 + 1 / 12, rel=1e-12)
    assert A.pipeline_micro_batches_in_flight(8, 4, 128, 0, False, 12) == 39 / 4
    assert A.pipeline_micro_batches_in_flight(1, 1, 8, 0, True, 48) == pytest.approx(1 + 1 / 48, rel=1e-12)
    assert A.pipeline_micro_batches_in_flight(1, 1, 1, 0, True, 48) == 1
    assert A.pipeline_micro_batches_in_flight(2, 2, 2, 0, True, 24) == 2


def test_published_a2a_overlap_row_holds_one_layer_more(monkeypatch):
    """Qwen3-235B-A22B on 256 H100 (tp 2 pp 8 vpp 4 ep 32, a2a overlap, Megatron-Bridge 26.04): the first rank holds
    39 / 4 stages' worth either way and one of its 11 decoder layers more ((94 + 2 slots) / 8 = 12, less the
    embedding's slot): its activations grow by (39 / 4 + 1 / 11) / (39 / 4) (they grew by 40 / 39); it still fits."""
    from gpuplan.jobs.validation import published_fits

    run = published_rows_by_id()["mbridge-26.04-qwen3-235b-a22b-h100-sxm-256g-fp8cs"]
    assert run["moe_comm"]["a2a_overlap"] and published_fits.recipe_memory_fields(run)["ep_a2a_overlap"]
    now = published_fits.row_plan(run)
    orig = published_fits.recipe_memory_fields
    monkeypatch.setattr(published_fits, "recipe_memory_fields",
                        lambda r: {k: v for k, v in orig(r).items() if k != "ep_a2a_overlap"})
    before = published_fits.row_plan(run)
    assert now.memory.stage == before.memory.stage == 0
    assert now.memory.activations / before.memory.activations == pytest.approx(1 + 4 / (39 * 11), rel=1e-12)
    assert now.headroom_bytes > 0


def test_skill_row_runs_its_recipes_allocator_and_gradient_buffer():
    """Megatron-Bridge 302976773079's 16-H100 Qwen3-30B-A3B recipe sets expandable segments in its env_vars and
    grad_reduce_in_fp32 False (perf_recipes/qwen/h100/qwen3_moe.py L52, perf_recipes/_common.py L73): the
    reserve is 3% (not 12%) and the gradient buffer 2 B per parameter; the row was refused (+3.6%) and fits."""
    from gpuplan.jobs.validation.published_fits import recipe_memory_fields, row_plan

    run = published_rows_by_id()["mbridge-skill-qwen3-30b-a3b-h100-16g-bf16-hybridep"]
    assert {k: recipe_memory_fields(run)[k] for k in ("grad_dtype", "allocator")} == {"grad_dtype": "bf16",
                                                                                   "allocator": "expandable"}
    now, before = row_plan(run), row_plan({k: v for k, v in run.items() if k != "recipe_memory"})
    assert (now.fragmentation, before.fragmentation) == (0.03, 0.12)
    assert now.memory.grads / before.memory.grads == pytest.approx(2 / 4, rel=1e-12)
    assert before.headroom_bytes < 0 < now.headroom_bytes


def test_nemo2502_mixtral_keeps_the_expert_output_core_0_11_saved():
    """NeMo 25.02 pins megatron-lm 791b70e0 (core_r0.11.0; requirements/manifest.json@v2.2.0 L12-14), whose
    all-to-all dispatcher unpermutes with probs (token_dispatcher.py L630 there): each routed row keeps its expert
    output, c·h = 2 x 4,096 B, where core >= 0.13 keeps one fp32 probability (4 B). Mixtral 8x7B, top-2, 32 MoE
    layers, micro-batch 2 x 4,096 tokens, pp 1 (one micro-batch in flight), tp 1:
    32 x 2 x (8,192 - 4) x 8,192 = 4,292,870,144 B = 3.998 GiB more activations (exact)."""
    from gpuplan.jobs.validation.published_fits import row_plan

    run = published_rows_by_id()["nemo2502-mixtral-8x7b-b200-64g"]
    assert run["recipe_memory"]["moe_keeps_expert_output"] is True
    as_core_0_16 = {k: v for k, v in run["recipe_memory"].items() if k != "moe_keeps_expert_output"}
    now, before = row_plan(run), row_plan({**run, "recipe_memory": as_core_0_16})
    assert now.memory.activations - before.memory.activations == pytest.approx(32 * 2 * 8188 * 8192, abs=1)
    assert before.headroom_bytes - now.headroom_bytes > 32 * 2 * 8188 * 8192  # the reserve grows with it
