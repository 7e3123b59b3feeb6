"""--tp-comm-dtype (issue 37, wave 16): the tensor-parallel collectives' dtype, GPT-NeoX's fp32_allreduce. At
EleutherAI/gpt-neox@e59c873 megatron/mpu/mappings.py L36-46 casts a bf16 tensor to fp32 before the TP all-reduce and
back after it (core.comm.tp_comm_dtype); the Llemma rows' configurations set it (math-lm pretraining/llemma_7b.yml
@e4f8ee6 L65, llemma_34b.yml L67). Hand-worked: the call's bytes double, the two casts move 12 B an element of HBM
traffic; a refusal at the four doors where no modelled framework has the option."""

import pytest
from helpers import four_door_refusal

from gpuplan.core.comm.tp_comm_dtype import CAST_HBM_BYTES_PER_ELEMENT, cast_seconds, widened

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

MIB = 2**20
A100_HBM = 1.555e12  # catalog a100-sxm4-40gb memory_bandwidth, B/s
NEOX = {"framework": "deepspeed", "implementation": "megatron"}
TRAIN = {"model": "llama-3-8b", "gpus": 16, "gpu": "h100"}


def test_the_fp32_call_moves_twice_the_bytes_and_two_casts():
    """Llemma 7B's TP buffer: micro-batch 4 x 4,096 tokens x 4,096 hidden x 2 B = 128 MiB (`plan --explain`), 256 MiB in
    fp32. Casts: 67,108,864 elements x (2 + 4 + 4 + 2) = 805,306,368 B over 1,555 GB/s x 0.89 (core.time.memory_kernels
    HBM_STREAM_EFFICIENCY) = 0.58189 ms, + 2 kernels x 7.84 us = 0.59757 ms a call; none at the compute dtype."""
    bf16 = 4 * 4_096 * 4_096 * 2
    assert bf16 == 128 * MIB and widened(bf16, 4.0) == 256 * MIB and widened(bf16, 2.0) == bf16
    assert CAST_HBM_BYTES_PER_ELEMENT == 12
    assert cast_seconds(bf16, 4.0, A100_HBM) == pytest.approx(0.59757e-3, rel=1e-4)
    assert cast_seconds(bf16, 2.0, A100_HBM) == 0.0


def test_the_tp_all_reduce_row_doubles_its_bytes_and_adds_the_casts_exposed():
    """core.comm.step_comm._tp_cost on Llemma 7B's step (tp 2 on one A100 node, 2 micro-batches x 32 layers x 6
    all-reduces under full recompute = 384 calls): the row's buffer 128 -> 256 MiB; NCCL's time 1.9-2.0x the bf16
    one (a ring on NVLink: bandwidth-bound at these sizes, the per-call latency not doubled); the casts 384 x 0.59757
    ms = 0.2295 s, added to total and exposed alike; the label names the dtype."""
    from gpuplan.adapters.resolve import resolve_gpu, resolve_model
    from gpuplan.core.comm.step_comm import _tp_cost
    from gpuplan.core.comm.topology import cluster_for
    from gpuplan.core.time.step_settings import StepSettings

    spec, cluster = resolve_model("llemma-7b"), cluster_for(resolve_gpu("a100-sxm4-40gb"))
    act = 4 * 4_096 * spec.hidden_size * 2.0
    rows = {b: _tp_cost(spec, cluster, StepSettings(seq_len=4_096, dtype="bf16", recompute="full", tp_overlap=0.0,
                                                    sequence_parallel=False, tp_comm_bytes=b), 2, 2, 32, act)
            for b in (2.0, 4.0)}
    bf16, fp32 = rows[2.0], rows[4.0]
    assert float(bf16.calls) == float(fp32.calls) == 384
    assert (bf16.bytes_per_call, fp32.bytes_per_call) == (128 * MIB, 256 * MIB)
    casts = 384 * cast_seconds(act, 4.0, cluster.gpu.memory_bandwidth)
    assert casts == pytest.approx(0.2295, abs=5e-4)
    nccl = float(fp32.total) - casts
    assert 1.9 * float(bf16.total) <= nccl <= 2.0 * float(bf16.total)
    assert float(fp32.exposed) == pytest.approx(float(fp32.total))  # GPT-NeoX's all-reduces are synchronous
    assert "fp32" in fp32.collective and "fp32" not in bf16.collective


def test_the_casts_stay_exposed_when_the_collective_is_half_hidden():
    """At tp_overlap 0.5 the all-reduce's seconds are halved but the casts (compute-stream kernels between the GEMM and
    the synchronous all-reduce) stay whole: exposed - casts = 0.5 x (total - casts), 0.4471 - 0.2295 = 0.2177 =
    0.5 x 0.4353 s on Llemma 7B's step (review w16 R2 M3: at tp_overlap 0 any treatment of the casts passes)."""
    from gpuplan.adapters.resolve import resolve_gpu, resolve_model
    from gpuplan.core.comm.step_comm import _tp_cost
    from gpuplan.core.comm.topology import cluster_for
    from gpuplan.core.time.step_settings import StepSettings

    spec, cluster = resolve_model("llemma-7b"), cluster_for(resolve_gpu("a100-sxm4-40gb"))
    act = 4 * 4_096 * spec.hidden_size * 2.0
    row = _tp_cost(spec, cluster, StepSettings(seq_len=4_096, dtype="bf16", recompute="full", tp_overlap=0.5,
                                               sequence_parallel=False, tp_comm_bytes=4.0), 2, 2, 32, act)
    casts = 384 * cast_seconds(act, 4.0, cluster.gpu.memory_bandwidth)
    assert float(row.exposed) - casts == pytest.approx(0.5 * (float(row.total) - casts), rel=1e-9)
    assert float(row.exposed) == pytest.approx(0.4471, abs=5e-4) and casts == pytest.approx(0.2295, abs=5e-4)


def test_fp32_activations_move_four_bytes_an_element_and_no_casts():
    """--dtype fp32 / tf32: the activations, so the TP all-reduce's and the pipeline send's buffers, are fp32 (4 B an
    element; was 2 B under every dtype): Llemma 7B's micro-batch 4 x 4,096 x 4,096 = 128 MiB of TP buffer in bf16, 256
    MiB in fp32, the stage send 64 -> 128 MiB at tp 2; no cast (the collective runs in the activations' dtype)."""
    from gpuplan.adapters.resolve import resolve_gpu, resolve_model
    from gpuplan.core.comm.step_comm import step_communication
    from gpuplan.core.comm.tp_comm_dtype import activation_bytes
    from gpuplan.core.comm.topology import cluster_for
    from gpuplan.core.time.step_settings import StepSettings

    assert [activation_bytes(d) for d in ("bf16", "fp16", "fp8", "fp4", "tf32", "fp32")] == [2, 2, 2, 2, 4, 4]
    spec, cluster = resolve_model("llemma-7b"), cluster_for(resolve_gpu("a100-sxm4-40gb"))
    rows = {d: step_communication(spec, cluster, StepSettings(seq_len=4_096, dtype=d, recompute="full",
                                                              sequence_parallel=False),
                                  dp=1, tp=2, pp=2, vpp=1, cp=1, ep=1, zero=0, micro_batch=4, micro_batches=2,
                                  shard_group=1, layers=16, trained_params=7e9, t_attn_mb=0.01, t_bwd_gemm_mb=0.05,
                                  compute=1.0)[:2] for d in ("bf16", "fp32", "tf32")}
    for dtype, (tp, pp) in rows.items():
        wide = 2 if dtype != "bf16" else 1
        assert (tp.bytes_per_call, pp.bytes_per_call) == (wide * 128 * MIB, wide * 64 * MIB)
        assert "casts" not in tp.collective


@pytest.mark.parametrize("job, route, ask, fragment", [
    ("train", "training", {**TRAIN, "framework": "megatron", "tp_comm_dtype": "fp32"},
     "give --framework deepspeed --implementation megatron (not --framework megatron --implementation megatron)"),
    ("budget", "budget", {**TRAIN, "framework": "torchtitan", "tp_comm_dtype": "fp32"},
     "give --framework deepspeed --implementation megatron (not --framework torchtitan --implementation torchtitan)"),
    ("plan", "plan", {**TRAIN, **NEOX, "dtype": "fp16", "tp_comm_dtype": "fp32"}, "as at gpt-neox@e59c873 (Llemma's "
     "commit), which casts bf16 tensors only (mappings.py L38; from gpt-neox 8b43196f (2024-08) it also casts fp16"),
    ("train", "training", {**TRAIN, **NEOX, "tp": 1, "tp_comm_dtype": "fp32"}, "needs tensor parallelism"),
    ("budget", "budget", {**TRAIN, **NEOX, "tp_comm_dtype": "fp32"}, "without --tp the "
     "layout search may choose tp 1"),
    ("plan", "plan", {**TRAIN, **NEOX, "tp": 2, "tp_comm_dtype": "fp32"}, "which has no sequence parallelism (its TP "
     "exchanges are all-reduces; from gpt-neox 8b43196f (2024-08) it also casts fp16 and SP's reduce-scatter"),
    ("train", "training", {**TRAIN, **NEOX, "dtype": "fp16", "tp_comm_dtype": "bf16"}, "run in fp16"),
    ("train", "training", {**TRAIN, **NEOX, "dtype": "fp32", "tp_comm_dtype": "bf16"}, "run in fp32"),
    # fp32 under --dtype fp32 / tf32, the activations' own dtype restated, is answered since wave 18 (test_hostile_w18)
])
def test_fp32_tp_collectives_are_refused_where_no_modelled_framework_has_them(run_cli, client, tmp_path, job, route,
                                                                             ask, fragment):
    """Megatron-Core's and torchtitan's TP collectives run in the activations' dtype (no such option); GPT-NeoX at
    e59c873 casts bf16 only (mappings.py L38) and has no sequence parallelism, the words naming the commit and what
    8b43196f changed (review w16 R2 M1); tp 1, or no --tp (the search may pick tp 1), has no TP collective (S3); under
    --dtype fp32 / tf32 the collectives are fp32 already, neither narrowed to bf16 nor widened (M2)."""
    four_door_refusal(run_cli, client, tmp_path, job, route, ask, "tp_comm_dtype", fragment)


def test_gpt_neox_fp32_tp_collectives_are_taken_and_named_in_the_assumptions():
    """The neighbour that answers: --framework deepspeed --implementation megatron, --dtype bf16, tp 2, no SP; its
    StepSettings carry 4 B an element, and the default is said by name (the activations' bf16; fp32 under --dtype
    fp32). The fp32 line says the transient copy is not charged in memory, with its size: 6 B x 2 x 4,096 tokens x
    4,096 hidden = 201,326,592 B = 0.188 GiB at micro-batch 2 (Llemma 34B's 2 x 4,096 x 8,192: 0.375 GiB)."""
    from gpuplan.jobs.training.schema import TrainingInputs
    from gpuplan.schema.tp_comm_dtype import fp32_copy_bytes, tp_comm_dtype_assumption

    base = {**TRAIN, **NEOX, "tp": 2, "sequence_parallel": False}
    taken = TrainingInputs(**base, tp_comm_dtype="fp32")
    default = TrainingInputs(**base)
    assert taken.kernel_step_settings()["tp_comm_bytes"] == 4.0 and default.kernel_step_settings()["tp_comm_bytes"] == 2
    (line,) = tp_comm_dtype_assumption(default)
    assert str(line.value).startswith("bf16 (the activations', 2 B an element") and not line.user_set
    (wide,) = tp_comm_dtype_assumption(TrainingInputs(**base, dtype="fp32"))
    assert str(wide.value).startswith("fp32 (the activations', 4 B an element")
    (fp32,) = tp_comm_dtype_assumption(TrainingInputs(**base, micro_batch=2, tp_comm_dtype="fp32"))
    assert "0.188 GiB at micro-batch 2, is not charged in memory" in str(fp32.value) and fp32.user_set
    assert fp32_copy_bytes(2, 4_096, 8_192) == 402_653_184 == 0.375 * 2**30
    assert tp_comm_dtype_assumption(TrainingInputs(**TRAIN)) == ()  # Megatron-Core: no such choice, no line


@pytest.fixture(scope="module")
def llemma():
    from helpers import reference_runs_by_id

    runs = reference_runs_by_id()
    return {rid: runs[rid] for rid in ("llemma-7b", "llemma-34b")}


@pytest.mark.parametrize("rid, before, step, tp_bf16, calls, after", [
    # wave 17: + the embedding's and output layer's all-reduces (2 a micro-batch, core.comm.embedding_tp) and the rows'
    # partition_activations (its gathers are DeepSpeed's, not widened; with PyTorch's copy back from its flat gather
    # buffer since the wave-17 mend, S5); wave 16's figures in the docstring
    ("llemma-7b", 17_983, 5.996, 0.223, 388, 19_329),
    ("llemma-34b", 32_319, 37.581, 4.802, 4_640, 38_609),
])
def test_llemma_rows_move_as_the_arithmetic_says(llemma, rid, before, step, tp_bf16, calls, after):
    """Since wave 17 (`plan --explain` with --partition-activations, in bf16): 7B step 5.996 s, all-reduces 0.221 + 2 x
    0.001 s on 384 + 4 calls; 34B 37.581 s, 4.768 + 2 x 0.017 s on 4,608 + 32 calls; the same bound holds (19,329 is
    -0.1% below its 19,347; 38,609 -0.6% below 38,833). Wave 16: before (bf16, wave 15's `plan --explain`): 7B step 5.942 s with the TP all-reduce 0.221 s exposed, 34B 36.820 s
    with 4.768 s. At exactly twice the all-reduce seconds plus calls x 0.59757 ms of casts the step is 5.942 + 0.221 +
    0.2295 = 6.392 s (x 1.0758: 19,170 GPU-hours) and 36.820 + 4.768 + 2.7536 = 44.342 s (x 1.2043: 38,134); NCCL's
    per-call latency is not doubled, so the model lands at most 1% below that bound (19,152: -0.1%; 37,911: -0.6%)
    and well above the bf16 hours. The rows set tp_comm_dtype fp32 from their configurations' lines."""
    from gpuplan.jobs.validation.gpu_hours import end_to_end_gpu_hours

    run = llemma[rid]
    assert run["tp_comm_dtype"] == "fp32" and "fp32_allreduce true" in run["tp_comm_dtype_source"]
    run = {k: v for k, v in run.items() if k not in ("eval_interval", "eval_iters")}  # wave 19's evaluation apart
    without = {k: v for k, v in run.items() if k != "tp_comm_dtype"}
    old, new = end_to_end_gpu_hours(without)[0], end_to_end_gpu_hours(run)[0]
    assert round(old) == before and round(new) == after
    bound = before * (step + tp_bf16 + calls * 0.59757e-3) / step
    assert 0.99 * bound <= new <= bound
