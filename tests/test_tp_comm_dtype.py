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


@pytest.mark.parametrize("job, route, ask, fragment", [
    ("train", "training", {**TRAIN, "framework": "megatron", "tp_comm_dtype": "fp32"},
     "give --framework deepspeed --implementation megatron (not --framework megatron --implementation megatron)"),
    ("budget", "budget", {**TRAIN, "framework": "torchtitan", "tp_comm_dtype": "fp32"},
     "give --framework deepspeed --implementation megatron (not --framework torchtitan --implementation torchtitan)"),
    ("plan", "plan", {**TRAIN, **NEOX, "dtype": "fp16", "tp_comm_dtype": "fp32"}, "casts bf16 tensors only"),
    ("train", "training", {**TRAIN, **NEOX, "tp": 1, "tp_comm_dtype": "fp32"}, "needs tensor parallelism"),
    ("plan", "plan", {**TRAIN, **NEOX, "tp_comm_dtype": "fp32"}, "give --no-sequence-parallel"),
    ("train", "training", {**TRAIN, **NEOX, "dtype": "fp16", "tp_comm_dtype": "bf16"}, "run in fp16"),
])
def test_fp32_tp_collectives_are_refused_where_no_modelled_framework_has_them(run_cli, client, tmp_path, job, route,
                                                                             ask, fragment):
    """Megatron-Core's and torchtitan's TP collectives run in the activations' dtype (no such option); GPT-NeoX casts
    bf16 only (mappings.py L38), has no sequence parallelism at e59c873, and --tp 1 has no TP collective."""
    four_door_refusal(run_cli, client, tmp_path, job, route, ask, "tp_comm_dtype", fragment)


def test_gpt_neox_fp32_tp_collectives_are_taken_and_named_in_the_assumptions():
    """The neighbour that answers: --framework deepspeed --implementation megatron, --dtype bf16, tp 2, no SP; its
    StepSettings carry 4 B an element, and the default is said by name (bf16, the compute dtype)."""
    from gpuplan.jobs.training.schema import TrainingInputs
    from gpuplan.schema.tp_comm_dtype import tp_comm_dtype_assumption

    base = {**TRAIN, **NEOX, "tp": 2, "sequence_parallel": False}
    taken = TrainingInputs(**base, tp_comm_dtype="fp32")
    default = TrainingInputs(**base)
    assert taken.kernel_step_settings()["tp_comm_bytes"] == 4.0 and default.kernel_step_settings()["tp_comm_bytes"] == 2
    (line,) = tp_comm_dtype_assumption(default)
    assert str(line.value).startswith("bf16 (the compute dtype") and not line.user_set
    assert tp_comm_dtype_assumption(TrainingInputs(**TRAIN)) == ()  # Megatron-Core: no such choice, no line


@pytest.fixture(scope="module")
def llemma():
    from helpers import reference_runs_by_id

    runs = reference_runs_by_id()
    return {rid: runs[rid] for rid in ("llemma-7b", "llemma-34b")}


@pytest.mark.parametrize("rid, before, step, tp_bf16, calls, after", [
    ("llemma-7b", 17_820, 5.942, 0.221, 384, 19_152),
    ("llemma-34b", 31_665, 36.820, 4.768, 4_608, 37_911),
])
def test_llemma_rows_move_as_the_arithmetic_says(llemma, rid, before, step, tp_bf16, calls, after):
    """Before (bf16, wave 15's `plan --explain`): 7B step 5.942 s with the TP all-reduce 0.221 s exposed, 34B 36.820 s
    with 4.768 s. At exactly twice the all-reduce seconds plus calls x 0.59757 ms of casts the step is 5.942 + 0.221 +
    0.2295 = 6.392 s (x 1.0758: 19,170 GPU-hours) and 36.820 + 4.768 + 2.7536 = 44.342 s (x 1.2043: 38,134); NCCL's
    per-call latency is not doubled, so the model lands at most 1% below that bound (19,152: -0.1%; 37,911: -0.6%)
    and well above the bf16 hours. The rows set tp_comm_dtype fp32 from their configurations' lines."""
    from gpuplan.jobs.validation.gpu_hours import end_to_end_gpu_hours

    run = llemma[rid]
    assert run["tp_comm_dtype"] == "fp32" and "fp32_allreduce true" in run["tp_comm_dtype_source"]
    without = {k: v for k, v in run.items() if k != "tp_comm_dtype"}
    old, new = end_to_end_gpu_hours(without)[0], end_to_end_gpu_hours(run)[0]
    assert round(old) == before and round(new) == after
    bound = before * (step + tp_bf16 + calls * 0.59757e-3) / step
    assert 0.99 * bound <= new <= bound
