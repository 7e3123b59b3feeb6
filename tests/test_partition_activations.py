"""DeepSpeed's partition_activations (core.comm.partition_activations, schema.partition_activations): the checkpoints
1 / tp in memory, one exposed all-gather of each checkpointed layer input a micro-batch (with its zero fill and copies)
in the step, refused in one line at the four doors where it does nothing or does not exist."""

import pytest
from helpers import four_door_refusal

import gpuplan
from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm import collectives as K
from gpuplan.core.comm.partition_activations import copy_bytes, copy_kernels
from gpuplan.core.comm.step_comm import step_communication
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time.memory_kernels import memory_bound_seconds
from gpuplan.core.time.step_settings import StepSettings

pytestmark = pytest.mark.usefixtures("time_box")

MIB = 2**20
NEOX = {"framework": "deepspeed", "implementation": "megatron"}
TRAIN = {"model": "llama-3-8b", "gpus": 16, "gpu": "h100"}


def _gather_row(**settings):
    """Llemma 7B's step on one A100 40GB node (tp 2, micro-batch 4 x 4,096 tokens, 2 micro-batches, 32 layers)."""
    spec, cluster = load_model("llemma-7b"), cluster_for(load_accelerator("a100-sxm4-40gb"))
    costs = step_communication(spec, cluster, StepSettings(seq_len=4_096, recompute="full", sequence_parallel=False,
                                                           **settings),
                               dp=128, tp=2, pp=1, vpp=1, cp=1, ep=1, zero=1, micro_batch=4, micro_batches=2,
                               shard_group=None, layers=32, trained_params=3.4e9, t_attn_mb=0.01, t_bwd_gemm_mb=0.05,
                               compute=1.0)
    (row,) = [c for c in costs if c.collective.startswith("checkpoint all-gather")]
    return row, cluster


def test_each_checkpoint_is_gathered_once_a_micro_batch_with_its_copies():
    """64 calls (2 micro-batches x 32 layers) of the 128 MiB layer input (4 x 4,096 x 4,096 x 2 B); each call one NCCL
    all-gather on the pair plus the copies: forward clone 2 x 64 MiB, zero fill 128 MiB, slice copy 2 x 64 MiB, and
    PyTorch's copy of the 2 parts back from its flat gather buffer (ProcessGroupNCCL::allgather's list form) 2 x 128
    MiB = 640 MiB = 671,088,640 B over 3 + 2 kernels, at the A100's HBM line (core.time.memory_kernels); all exposed."""
    row, cluster = _gather_row(partition_activations=True)
    assert float(row.calls) == 64 and row.bytes_per_call == 128 * MIB
    assert copy_bytes(128 * MIB, 2) == 640 * MIB == 671_088_640 and copy_kernels(2) == 5 and copy_kernels(8) == 11
    gather = float(K.collective_seconds("all_gather", 128 * MIB, cluster.group(2, 1)))
    copies = memory_bound_seconds(671_088_640, 5, cluster.gpu.memory_bandwidth)
    assert copies > 671_088_640 / 1.555e12  # at most the HBM's full rate
    assert float(row.total) == pytest.approx(64 * (gather + copies), rel=1e-12)
    assert float(row.exposed) == float(row.total)
    # GPT-NeoX's fp32_allreduce does not reach DeepSpeed's gather: the same 128 MiB and seconds
    wide, _ = _gather_row(partition_activations=True, tp_comm_bytes=4.0)
    assert wide.bytes_per_call == 128 * MIB and float(wide.total) == pytest.approx(float(row.total), rel=1e-12)


def test_off_it_costs_nothing():
    row, _ = _gather_row()
    assert float(row.calls) == 0 and float(row.total) == 0.0 == float(row.exposed)


def test_memory_keeps_one_tp_th_of_the_checkpoints():
    """Llemma 34B at tp 8, micro-batch 2: 48 checkpoints of 2 x 4,096 x 8,192 x 2 B = 6 GiB whole, 768 MiB split."""
    ask = {"model": "llemma-34b", "gpu": "a100-sxm4-40gb", "gpus": 256, **NEOX, "tp": 8, "zero": 1,
           "micro_batch": 2, "recompute": "full", "sequence_parallel": False}

    def activations(**more):
        answer = gpuplan.estimate_memory(gpuplan.MemoryInputs(**ask, **more))
        return float(answer.value("peak_activations"))

    assert activations() == 48 * 2 * 4_096 * 8_192 * 2 == 6 * 2**30
    assert activations(partition_activations=True) == 6 * 2**30 / 8 == 768 * MIB


def test_the_step_and_memory_settings_carry_it():
    from gpuplan.jobs.training.schema import TrainingInputs

    taken = TrainingInputs(**TRAIN, **NEOX, tp=2, recompute="full", sequence_parallel=False, partition_activations=True)
    assert taken.recompute_settings()["partition_activations"] is True
    assert TrainingInputs(**TRAIN).recompute_settings()["partition_activations"] is False


@pytest.mark.parametrize("job, route, ask, fragment", [
    ("train", "training", {**TRAIN, "framework": "megatron", "tp": 2, "recompute": "full",
                           "partition_activations": True}, "give --framework deepspeed (not megatron)"),
    ("memory", "memory", {**TRAIN, **NEOX, "tp": 2, "recompute": "none",
                          "partition_activations": True}, "give --recompute full"),
    # a Hugging Face model checkpoints with torch.utils.checkpoint: DeepSpeed's option never reaches it (S3, w17)
    ("train", "training", {**TRAIN, "framework": "deepspeed", "implementation": "hf", "tp": 2, "recompute": "full",
                           "partition_activations": True}, "give --implementation megatron (not hf)"),
    ("memory", "memory", {**TRAIN, "framework": "deepspeed", "tp": 2, "recompute": "full",
                          "partition_activations": True}, "give --implementation megatron (not hf)"),
    ("plan", "plan", {**TRAIN, **NEOX, "tp": 2, "partition_activations": True}, "left out, the search may choose none"),
    ("budget", "budget", {**TRAIN, **NEOX, "recompute": "full", "partition_activations": True},
     "without --tp the layout search may choose tp 1"),
    ("train", "training", {**TRAIN, **NEOX, "tp": 1, "recompute": "full", "partition_activations": True},
     "with --tp 1 it does nothing"),
    ("train", "training", {**TRAIN, **NEOX, "tp": 2, "recompute": "full", "partition_activations": True},
     "give --no-sequence-parallel"),
])
def test_refused_where_it_does_nothing_or_does_not_exist(run_cli, client, tmp_path, job, route, ask, fragment):
    four_door_refusal(run_cli, client, tmp_path, job, route, ask, "partition_activations", fragment)


def test_the_answer_names_it_where_taken():
    """One assumption line, set by the user, naming the slice (1 / 2 at tp 2) and the code read; none when off."""
    from gpuplan.jobs.training.schema import TrainingInputs
    from gpuplan.schema.partition_activations import partition_activations_assumption

    base = {**TRAIN, **NEOX, "tp": 2, "recompute": "full", "sequence_parallel": False}
    (line,) = partition_activations_assumption(TrainingInputs(**base, partition_activations=True))
    assert line.user_set and line.flag == "--partition-activations" and "1 / 2 slice" in str(line.value)
    assert "checkpointing.py L366-418, L255-291" in line.source
    assert partition_activations_assumption(TrainingInputs(**base)) == ()


@pytest.mark.parametrize("option, held, label", [
    ({"tp_comm_dtype": "fp32"}, {"tp": 2}, " at your --tp 2"),
    ({"partition_activations": True}, {"tp": 2, "recompute": "full"}, " at your --tp 2, --recompute full"),
])
def test_plan_compares_within_the_degrees_the_option_holds(monkeypatch, option, held, label):
    """plan with a layout given and an option taken only at a stated --tp (and full recompute): the free search it is
    ranked against keeps them (every row of its table at tp 2; with --partition-activations full recompute), and the
    rank and 'slower than' lines say so (jobs.plan.check_layout; wave 17 mend, S2 / S7); recompute left free where
    only --tp is held."""
    from gpuplan.jobs.plan import search as plan_search
    from gpuplan.planner.space import RECOMPUTE_MODES

    searched = []
    real = plan_search.search

    def spy(inputs, *args, **kwargs):
        result = real(inputs, *args, **kwargs)
        searched.append((inputs, result))
        return result

    monkeypatch.setattr(plan_search, "search", spy)
    ask = {**TRAIN, **NEOX, "tokens": 1e11, "tp": 2, "recompute": "full", "sequence_parallel": False, **option}
    answer = gpuplan.plan_report(gpuplan.PlanInputs(**ask))
    (mine, _), (free_inputs, free) = searched  # the ask's own search, then the free one
    assert mine.tp == 2 and free_inputs.pp is None and free_inputs.micro_batch is None
    assert len(free.table) > 0 and set(free.table["tp"].tolist()) == {2}
    modes = {RECOMPUTE_MODES[int(i)] for i in free.table["recompute"]}  # the table's column: an index into them
    if "recompute" in held:
        assert free_inputs.recompute == "full" and modes == {"full"}
    else:
        assert free_inputs.recompute is None and len(modes) > 1
    rank = answer.line("check_rank")
    assert rank.value >= 1 and rank.label == "rank among the fitting layouts on these GPUs" + label
    assert answer.line("check_loses_by").label == "slower than the planner's best" + label
    needs = "--partition-activations needs them" if "recompute" in held else "--tp-comm-dtype fp32 needs it"
    assert f"held: {needs}" in rank.formula and f"held: {needs}" in answer.line("check_loses_by").formula
