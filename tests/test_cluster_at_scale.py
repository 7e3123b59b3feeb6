"""Issue 37, second pass: the SMs NCCL holds beside compute (core.comm.collectives.nccl_sm_share,
core.comm.dp_overlap), torchtitan's embedding unit under FSDP2 (core.comm.dp_costs), and the planner's layout
uncertainty by distance from published layouts (planner/uncertainty.py)."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm import collectives as K
from gpuplan.core.comm import dp_overlap as O
from gpuplan.core.comm.dp_costs import data_parallel_costs, params_per_gpu
from gpuplan.core.time.step import StepSettings
from gpuplan.core.comm.topology import cluster_for
from gpuplan.planner import uncertainty as U


def test_nccl_holds_sixteen_sms_of_the_generation():
    # nccl#689: 16 SMs on an 8-NIC DGX; H100 SXM 132 SMs -> 0.1212, B200 148 -> 0.1081, A100 108 -> 0.1481
    assert K.nccl_sm_share("hopper") == pytest.approx(16 / 132) == pytest.approx(0.1212, abs=1e-4)
    assert K.nccl_sm_share("blackwell") == pytest.approx(0.1081, abs=1e-4)
    assert K.nccl_sm_share("ampere") == pytest.approx(0.1481, abs=1e-4)
    assert K.nccl_sm_share(None) == K.nccl_sm_share("hopper")


def test_hidden_buckets_slow_the_compute_beside_them():
    # 1.0 s in 10 buckets: the last 0.1 s always exposed; the other 0.9 s run beside the window.
    # Behind 0.7 s: max(0.9 - 0.7, 0.12 x 0.9) = 0.2 -> 0.3 s (the window is the bottleneck: no SM cost)
    assert float(O.bucketed_exposed(1.0, 10, 0.7, 0.12)) == pytest.approx(0.3)
    # behind 2 s all 0.9 s hide, but the compute runs at 88% while they do: 0.1 + 0.108 = 0.208 s
    assert float(O.bucketed_exposed(1.0, 10, 2.0, 0.12)) == pytest.approx(0.208)
    # FSDP, 4 blocks, 10 ms collective beside 20 ms of compute each: the first 10 ms exposed, then
    # 3 x max(10 - 20, 0.12 x 10) ms = 3.6 ms
    assert float(O.fsdp_pass_exposed(0.010, 0.020, 4, 0.12)) == pytest.approx(0.0136)


def test_torchtitan_exposes_its_embedding_unit_every_micro_batch():
    # Llama 3.1 8B on 8 H100 (one NVLink node), FSDP2, 2 micro-batches: tok_embeddings = 128,256 x 4,096 =
    # 525.3M parameters, gathered in bf16 (1.051 GB) before each micro-batch's first block and reduced in
    # fp32 (2.101 GB) after its last. NVLink ring at 450 GB/s x 0.82 = 369 GB/s: 7/8 x 1.051 / 369 = 2.49 ms
    # + 7/8 x 2.101 / 369 = 4.98 ms -> 7.47 ms a micro-batch, 14.9 ms a step, none of it hidden
    spec = load_model("llama-3.1-8b")
    cluster = cluster_for(load_accelerator("h100-sxm"))
    settings = StepSettings(seq_len=8192, dp_overlap=1.0, dp_schedule="fsdp2", grad_comm_bytes=4.0)
    costs = data_parallel_costs(spec, cluster, settings, dp=8, tp=1, pp=1, cp=1, ep=1, zero=3, micro_batches=2,
                                shard_group=None, layers=32, trained_params=params_per_gpu(spec, 1, 1, 1),
                                t_bwd_gemm_mb=0.5, compute=1.5)
    embedding = costs[-1]
    assert embedding.bytes_per_call == pytest.approx(128256 * 4096 * 2)
    assert float(embedding.calls) == 4
    # + NCCL's ring / Simple latency on NVLink per call (core.comm.collectives BASE_US / HW_US from NCCL
    # src/graph/tuning.cc): 8.4 + 7 steps x 3.4 = 32.2 us, 4 calls: 14.949 + 0.129 = 15.077 ms (was 0.0149 rel 0.03)
    by_hand = 2 * 7 / 8 * 128256 * 4096 * (2 + 4) / (450e9 * 0.82) + 4 * (8.4 + 7 * 3.4) * 1e-6
    assert float(embedding.total) == pytest.approx(by_hand, rel=1e-9)
    assert float(embedding.exposed) == float(embedding.total)
    # the blocks' gathers carry the rest: (8.03B - 0.525B) / 32 blocks in bf16
    blocks = costs[1]
    assert float(blocks.bytes_per_call) == pytest.approx((params_per_gpu(spec, 1, 1, 1) - 128256 * 4096) * 2 / 32)
    # Megatron's schedule has no such unit (its ZeRO-3 path is left as it was)
    megatron = data_parallel_costs(spec, cluster, StepSettings(seq_len=8192, dp_overlap=1.0), dp=8, tp=1, pp=1, cp=1,
                                   ep=1, zero=3, micro_batches=2, shard_group=None, layers=32,
                                   trained_params=params_per_gpu(spec, 1, 1, 1), t_bwd_gemm_mb=0.5, compute=1.5)
    assert float(megatron[-1].total) == 0.0


def test_a_layout_is_a_point_and_its_distance_an_uncertainty():
    columns = {"tp": np.array([8, 4, 8]), "pp": np.array([4, 4, 4]), "vpp": np.array([2, 2, 2]),
               "cp": np.array([1, 1, 2]), "ep": np.array([1, 1, 1]), "zero": np.array([1, 1, 1]),
               "dp": np.array([4, 8, 2]), "micro_batch": np.array([1, 1, 1])}
    points = U.layout_points(columns, 8e9)
    assert points[0] == pytest.approx([np.log2(8e9), 3, 2, 0, 2, 0, 0, 1, 0])
    # kinds on 8-GPU domains: pipeline + interleaved + tensor parallel (bits 2, 3, 5) = 44; the third adds
    # context parallelism (bit 4) = 60
    kinds = U.kind_code(U.layout_features(columns, 8, moe=False))
    assert list(kinds) == [44, 44, 60]
    # the second is tp halved and dp doubled from the first (128 GPUs, still 16 domains): sqrt(1 + 1) =
    # 1.414 units; the third is as near (cp x2, dp /2) but of a kind no known layout has: infinitely far
    d = U.nearest_distance(points, kinds, points[:1], kinds[:1])
    assert list(d[:2]) == pytest.approx([0.0, 2 ** 0.5]) and np.isinf(d[2])
    known = U.KnownLayouts(rms=0.08, growth=0.0143, points=points[:1], kinds=kinds[:1], groups=("a",))
    # sqrt(0.08^2 + (0.0143 x 1.414)^2) = sqrt(0.0064 + 0.000409) = 0.0825; the unseen kind: the widest
    u = U.layout_uncertainty(columns, 8e9, 8, False, known, widest=0.45)
    assert list(u) == pytest.approx([0.08, 0.0825, 0.45], abs=1e-4)
    # the group left out, nothing is known: the widest figure everywhere
    assert list(U.layout_uncertainty(columns, 8e9, 8, False, known.without("a"), widest=0.45)) == [0.45] * 3


def test_the_variogram_fit_reads_nugget_and_growth():
    # 2 gamma(d) = 0.1^2 + (0.02 d)^2 at d = 1, 2, 3 (each sample is half the squared difference); a pair
    # beyond VARIOGRAM_RANGE (6 units) is left out whatever its value
    d = np.array([1.0, 2.0, 3.0, 8.0])
    half = (0.01 + 0.0004 * d ** 2) / 2
    half[-1] = 5.0
    nugget, growth = U.fit_growth(d, half)
    assert nugget == pytest.approx(0.1) and growth == pytest.approx(0.02)


def test_packaged_uncertainty_is_dense_and_moe_families():
    from gpuplan.catalog import reference_json

    data = reference_json("layout_uncertainty.json")
    assert set(data) >= {"bf16", "fp8", "moe", "widest"}
    # dense BF16 and FP8 share their layouts and growth; MoE's error grows faster away from what ran
    assert data["bf16"]["growth"] == data["fp8"]["growth"] < data["moe"]["growth"]
    assert len(data["bf16"]["points"]) == len(data["fp8"]["points"]) > 100
    assert data["widest"] == max(data[c]["rms"] for c in ("bf16", "fp8", "moe"))


def test_the_planner_check_does_not_know_its_own_group():
    from gpuplan.catalog import load_model
    from gpuplan.jobs.plan.search import uncertainty_table
    from gpuplan.jobs.validation.uncertainty import group_key

    spec = load_model("llama-3.1-70b")
    group = group_key("llama-3.1-70b", "h100-sxm-96gb-500w", 256, "bf16", "torchtitan")
    every = uncertainty_table(spec, "bf16").known
    without = uncertainty_table(spec, "bf16", leave_out=group).known
    assert group in every.groups and group not in without.groups
    assert len(without.points) == len(every.points) - every.groups.count(group) and len(without.kinds) == len(without.points)


def test_transformer_engine_keeps_fp8_linear_inputs():
    from gpuplan.core.memory import activations as A

    assert A.saved_linear_input_bytes("tensorwise") == 1.0 and A.saved_linear_input_bytes(None) is None
    assert A.saved_linear_input_bytes("mxfp8") == pytest.approx(1.03125)
    assert A.saved_linear_input_bytes("nvfp4") == pytest.approx(0.5625)
    # Llama 3.1 8B layer (h 4,096, i 14,336): the QKV and fc1 inputs 2 x (2 - 1) x 4,096 = 8,192 B fewer, the
    # down projection's input (2 - 1) x 14,336 fewer, the output projection's FP8 copy of the attention output
    # 32 x 128 = 4,096 more: 18,432 bytes per token less than BF16's 139,400
    spec = load_model("llama-3.1-8b")
    bf16 = A.layer_activations(spec, 8192, impl="megatron").total
    fp8 = A.layer_activations(spec, 8192, impl="megatron", linear_input_bytes=1.0).total
    assert bf16 - fp8 == pytest.approx(18432)
    # Qwen3-30B-A3B MoE layer (h 2,048, 8 experts of 768 per token): the QKV input 2,048 fewer, the router's input
    # stays bf16, the attention output's copy 32 x 128 = 4,096 more, each routed copy keeps its fc1 and fc2 inputs
    # in FP8: 8 x (2,048 + 768) = 22,528 fewer -> 20,480 bytes per token less
    qwen = load_model("qwen3-30b-a3b")
    moe_bf16 = A.layer_activations(qwen, 4096, impl="megatron", moe_layer=True).total
    moe_fp8 = A.layer_activations(qwen, 4096, impl="megatron", moe_layer=True, linear_input_bytes=1.0).total
    assert moe_bf16 - moe_fp8 == pytest.approx(20480)
    # torchao's Float8Linear (torchtitan) keeps the bf16 input: no change
    assert A.layer_activations(spec, 8192, impl="torchtitan", linear_input_bytes=1.0).total == \
        A.layer_activations(spec, 8192, impl="torchtitan").total


def test_distinct_rows_is_numpys_row_wise_unique_even_when_sums_collide(monkeypatch):
    import numpy as np

    from gpuplan.planner import uncertainty as U

    rows = np.array([[1.0, 0.0, 3.0], [0.0, 1.0, 3.0], [1.0, 0.0, 3.0], [2.0, 2.0, 0.0]])
    unique, inverse = U.distinct_rows(rows)
    assert len(unique) == 3 and np.array_equal(unique[inverse], rows)
    # all weights 1 (sqrt(1) has no fractional part): rows 0 and 1 share the sum 4 and must still
    # be told apart (the row-wise path)
    monkeypatch.setattr(U, "PRIMES", np.ones(16))
    unique, inverse = U.distinct_rows(rows)
    assert len(unique) == 3 and np.array_equal(unique[inverse], rows)


def test_nearest_of_is_the_exact_brute_force_minimum():
    """The matrix-product search returns the same floats as the (rows x known) difference array,
    ties and exact matches included (search coordinates are halves of small integers and logs)."""
    from gpuplan.planner import uncertainty as U

    rng = np.random.default_rng(7)
    known = np.round(rng.normal(size=(40, 9)) * 4) / 2
    rows = np.vstack([known[:10], np.round(rng.normal(size=(200, 9)) * 4) / 2, np.log2(rng.integers(1, 64, (50, 9)))])
    rows[-1] = (known[0] + known[1]) / 2  # equidistant from two known layouts
    brute = np.sqrt(((rows[:, None, :] - known[None, :, :]) ** 2).sum(axis=2)).min(axis=1)
    got = U.nearest_of(rows, known)
    assert np.array_equal(got, brute)
    assert np.all(got[:10] == 0.0)
