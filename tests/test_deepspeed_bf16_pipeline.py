"""DeepSpeed bf16 at ZeRO stage 0 under its pipeline engine runs the BF16_Optimizer (core.memory.bf16_optimizer,
FrameworkProfile.pipeline_bf16_optimizer): fp32 master and AdamW states over the data-parallel ranks, a whole bf16
accumulation buffer beside autograd's bf16 gradients, the bf16 weights all-gathered after each step
(core.comm.dp_costs), its 6 B accumulation pass (core.time.optimizer) and an optimizer step over 1/dp."""

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.memory import bf16_optimizer as BO
from gpuplan.core.memory import training as M
from gpuplan.core.parallel import ParallelLayout

# DeepSpeed's own code at edaa722 (the profile's commit), scripts/measure_deepspeed_bf16.py: a PipelineModule of
# 33,088 parameters, bf16, ZeRO stage 0, AdamW, one train_batch of 3 micro-batches, rank 0. One stage (engine.py
# L2014 keys the choice on pipeline_parallelism, a PipelineModule, not on its stage count): the last stage's
# backward (super().backward -> backward_epilogue). Two stages (--stages 2, world 2 x dp, re-measured in review
# wave7 r4 SHOULD-FIX 5): rank 0 is the first stage, 64 x 256 + 256 = 16,640 parameters, whose backward is the
# PipelineEngine's own (pipe/engine.py L861-863 clear_lp_grads, L882-885 update_hp_grads(clear_lp_grads=False)).
MEASURED = {  # (stages, dp): (stage parameters, accumulation buffer, master partition, each AdamW moment,
    #                          lp.grad at the step, step partition)
    (1, 2): (33_088, (33_088, "bfloat16"), (16_544, "float32"), (16_544, "float32"), (33_088, "bfloat16"),
             (16_544, "float32")),
    (1, 4): (33_088, (33_088, "bfloat16"), (8_272, "float32"), (8_272, "float32"), (33_088, "bfloat16"),
             (8_272, "float32")),
    (2, 2): (16_640, (16_640, "bfloat16"), (8_320, "float32"), (8_320, "float32"), (16_640, "bfloat16"),
             (8_320, "float32")),
    (2, 4): (16_640, (16_640, "bfloat16"), (4_160, "float32"), (4_160, "float32"), (16_640, "bfloat16"),
             (4_160, "float32")),
}
WIDTH = {"bfloat16": 2, "float32": 4}
DS = M.MemorySettings(framework="deepspeed", recipe="mixed", implementation="hf", seq_len=4096, deepspeed_bf16=True)


def _bytes(entry):
    elements, dtype = entry
    return elements * WIDTH[dtype]


def _flat_params(n: float) -> M.StageParams:
    return M.StageParams(layers=1, moe_layers=0, dense=n, experts=0.0, matrices=n, largest_layer=n, root=0.0)


@pytest.mark.parametrize("stages, dp", sorted(MEASURED))
def test_states_match_deepspeeds_own_buffers(stages, dp):
    """gpuplan's bytes for the measured run's parameters equal the buffers DeepSpeed allocated, exactly."""
    n, acc, master, moment, lp_grads, step_grad = MEASURED[stages, dp]
    params = _flat_params(n)
    layout = ParallelLayout(dp=dp, pp=2, zero=0)
    recipe = M.RECIPES["mixed"]
    states = BO.bf16_optimizer_states(lambda at: M.model_state_bytes(params, at, recipe, M.OPTIMIZERS["adamw"], 64),
                                      layout, DS, recipe)
    assert states.weights == 2 * n  # the bf16 flat group
    assert states.grads == _bytes(lp_grads) + _bytes(acc)  # autograd's bf16 grads + the bf16 accumulation buffer
    assert states.master == _bytes(master)
    assert states.optimizer == 2 * _bytes(moment)
    step = BO.optimizer_step_buffers(load_model("llama-2-7b"), params, layout, recipe, DS)
    assert step == _bytes(step_grad)  # fused AdamW: no kernel buffer; the fp32 copy of the rank's partition


def test_llama31_8b_stage_by_hand():
    """Llama-3.1-8B at dp4 pp2 ZeRO-0: the last stage's 16 layers (16 x 218,112,000: attention 41,943,040, MLP
    176,160,768, norms 8,192), the untied head (128,256 x 4,096 = 525,336,576) and the final norm (4,096) are
    4,015,132,672 parameters; 2 + 2 + 4 + 8 = 16 B each before, 2 + (2 + 2) + 4/4 + 8/4 = 9 B with the
    BF16_Optimizer: 7 x 4,015,132,672 = 28,105,928,704 B less at the start of backward (its peak, both ways)."""
    spec = load_model("llama-3.1-8b")
    layout = ParallelLayout(dp=4, pp=2, zero=0, micro_batch=1)
    n = M.stage_params(spec, layout, 1).total
    assert n == 4_015_132_672
    fp16 = M.stage_memory(spec, layout, replace(DS, deepspeed_bf16=False), 1)
    bf16 = M.stage_memory(spec, layout, DS, 1)
    assert (fp16.weights, fp16.grads, fp16.master, fp16.optimizer) == (2 * n, 2 * n, 4 * n, 8 * n)
    assert (bf16.weights, bf16.grads, bf16.master, bf16.optimizer) == (2 * n, 4 * n, n, 2 * n)
    assert fp16.peak_phase == bf16.peak_phase == "backward start"
    assert fp16.allocated - bf16.allocated == pytest.approx(28_105_928_704, rel=1e-12)
    # inside the step: FP16_Optimizer's whole fp32 gradient copy (4n) against the partition's (4n / 4)
    assert fp16.optimizer_step_total - bf16.optimizer_step_total == pytest.approx((16 + 4 - 9 - 1) * n, rel=1e-12)


def test_mixtral_expert_states_over_the_expert_data_parallel_group():
    """BF16_Optimizer gives each MoE parameter group its expert-data-parallel group (bf16_optimizer.py@edaa722
    _configure_moe_settings L125-134: real_dp_process_group[i] = _get_expert_data_parallel_group, the partition
    L144-170), as ZeRO-1 does. Mixtral 8x7B at dp8 pp2 ep8 ZeRO-0, first stage: 16 layers x (attention
    4,096 x (4,096 + 1,024 + 1,024) + 4,096 x 4,096 = 41,943,040, router 4,096 x 8 = 32,768, two norms 8,192)
    + the embedding 32,000 x 4,096 = 131,072,000 -> 802,816,000 dense; one expert of 3 x 4,096 x 14,336 =
    176,160,768 per layer -> 2,818,572,288 expert parameters, over 8 / 8 = 1 expert-data-parallel rank.
    fp32 master 4 x (802,816,000 / 8 + 2,818,572,288) = 11,675,697,152 B (was 4 x 3,621,388,288 / 8 =
    1,810,694,144: every state over 8), AdamW 2 x that, 23,351,394,304 B: 29,595,009,024 B more in all (9,865,003,008 + 19,730,006,016)."""
    spec = load_model("mixtral-8x7b")
    layout = ParallelLayout(dp=8, pp=2, ep=8, zero=0, micro_batch=1)
    params = M.stage_params(spec, layout, 0)
    assert (params.dense, params.experts) == (802_816_000, 2_818_572_288)
    held = M.stage_memory(spec, layout, DS, 0)
    assert held.master == 11_675_697_152 and held.optimizer == 23_351_394_304
    assert held.weights == 2 * 3_621_388_288 and held.grads == 4 * 3_621_388_288  # whole, as before
    zero1 = M.stage_memory(spec, replace(layout, zero=1), DS, 0)
    assert (held.master, held.optimizer) == (zero1.master, zero1.optimizer)
    fp16 = M.stage_memory(spec, layout, replace(DS, deepspeed_bf16=False), 0)  # FP16_Optimizer: whole fp32 states
    assert (fp16.master, fp16.optimizer) == (4 * 3_621_388_288, 8 * 3_621_388_288)


@pytest.mark.parametrize("change", [dict(pp=1), dict(zero=1), dict(zero=3, pp=1)])
def test_only_at_zero_0_under_a_pipeline(change):
    """A plain module at ZeRO 0 runs FP16_Optimizer in bf16 (DDP_BFLOAT16, engine.py L2019), ZeRO >= 1 the ZeRO
    optimizer: their states as before (deepspeed_bf16 makes no difference there)."""
    spec = load_model("llama-2-7b")
    layout = ParallelLayout(**{**dict(dp=4, tp=2, pp=4, zero=0, micro_batch=1), **change})
    assert not BO.layout_runs_bf16_optimizer(layout, DS)
    on, off = M.stage_memory(spec, layout, DS, 0), M.stage_memory(spec, layout, replace(DS, deepspeed_bf16=False), 0)
    assert on == off


def test_other_frameworks_and_arrays():
    from gpuplan.core.frameworks import deepspeed_bf16_engine

    for name in ("megatron", "torchtitan", "hf", "generic"):
        assert not deepspeed_bf16_engine(name, "bf16", M.framework(name).recipe)
    assert deepspeed_bf16_engine("deepspeed", "bf16", "mixed")
    assert not deepspeed_bf16_engine("deepspeed", "fp16", "mixed") and not deepspeed_bf16_engine("deepspeed", "bf16", "bf16")
    import numpy as np

    many = ParallelLayout(dp=np.array([4, 4, 4]), pp=np.array([2, 1, 2]), zero=np.array([0, 0, 1]))
    assert BO.layout_runs_bf16_optimizer(many, DS).tolist() == [True, False, False]


def test_step_time_terms_by_hand():
    """Llama 2 7B, tp2 pp4 dp4 ZeRO-0, 16 micro-batches, A100 80GB (2.039 TB/s x 0.75 = 1.52925e12 B/s): the
    accumulation pass at 6 B over the largest stage (875,106,304: tests/test_fp32_grad_accumulation.py) is
    16 x 6 x 875,106,304 / 1.52925e12 = 0.0549357 s; the optimizer step over 1/4; and a parameter all-gather
    of the stage's 842,301,952 parameters x 2 B appears beside the gradient all-reduce."""
    from gpuplan.core.comm.dp_costs import data_parallel_costs
    from gpuplan.core.comm.topology import cluster_for
    from gpuplan.core.time.step import StepSettings, step_time

    spec, cluster = load_model("llama-2-7b"), cluster_for(load_accelerator("a100-sxm4-80gb"))
    plain = StepSettings(seq_len=2048, recompute="full", dp_schedule="deepspeed")
    bf16 = replace(plain, deepspeed_bf16=True)
    layout = dict(dp=4, tp=2, pp=4, zero=0, micro_batch=1, micro_batches=16)
    before, after = step_time(spec, cluster, plain, **layout), step_time(spec, cluster, bf16, **layout)
    assert after.compute - before.compute == pytest.approx(16 * 6 * 875_106_304 / 1.52925e12, rel=1e-5)
    assert after.optimizer == pytest.approx(before.optimizer / 4, rel=1e-12)
    kw = dict(dp=4, tp=2, pp=4, cp=1, ep=1, zero=0, micro_batches=16, shard_group=None, layers=8,
              trained_params=842_301_952, t_bwd_gemm_mb=0.05, compute=1.0)

    def gathered(settings, **change):
        costs = data_parallel_costs(spec, cluster, settings, **{**kw, **change})
        return sum(float(c.calls * c.bytes_per_call) for c in costs if c.collective == "param all-gather")

    assert gathered(bf16) == pytest.approx(842_301_952 * 2, rel=1e-12)
    assert gathered(plain) == gathered(bf16, pp=1) == gathered(bf16, zero=0, dp=1) == 0.0


def test_train_bf16_against_fp16_through_the_cli(run_json):
    """`train` at dp8 pp2 ZeRO-0 on H200: --dtype fp16 is FP16_Optimizer (16 B a parameter), bf16 the
    BF16_Optimizer (2 + 4 + 12/8 = 7.5 B); the first stage (16 layers, 3,489,792,000, and the embedding,
    525,336,576: 4,015,128,576) peaks at the start of backward both ways: 8.5 x 4,015,128,576 B apart."""
    args = ("train", "llama-3.1-8b", "--framework", "deepspeed", "--gpus", "16", "--tp", "1", "--pp", "2",
            "--zero", "0", "--gpu", "h200", "--micro-batch", "2")
    bf16 = run_json(*args)["results"]["mem_peak_allocated"]
    fp16 = run_json(*args, "--dtype", "fp16")["results"]["mem_peak_allocated"]
    assert fp16 - bf16 == pytest.approx(8.5 * 4_015_128_576, rel=1e-9)


@pytest.mark.parametrize("change, runs", [({}, True), ({"recipe": "bf16"}, False), ({"dtype": "fp16"}, False),
                                          ({"framework": "megatron"}, False)])
def test_memory_and_step_read_one_rule(change, runs):
    """Memory and the step's three terms (accumulation pass, optimizer over 1/dp, weight all-gather) read the
    same flag, set by one rule (core.frameworks.deepspeed_bf16_engine: DeepSpeed, bf16, its own mixed recipe)."""
    from gpuplan.core.frameworks import deepspeed_bf16_engine
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for

    inputs = PlanInputs(**{"model": "llama-3.1-8b", "framework": "deepspeed", "gpu": "h200", **change})
    ev = evaluator_for(inputs)
    assert ev.memory.deepspeed_bf16 == ev.step.deepspeed_bf16 == runs
    assert deepspeed_bf16_engine(inputs.framework, inputs.dtype, inputs.recipe_name) == runs


def test_pure_bf16_recipe_steps_without_the_bf16_optimizer(run_json):
    """`--recipe bf16` (bf16 weights, no fp32 master) is not DeepSpeed's BF16_Optimizer: its memory said so, but
    its step kept the optimizer over 1/dp (0.00446 s), the weight all-gather and the 6 B pass (25.803 s, the
    default's). Now its step is FP16_Optimizer's (the --dtype fp16 run: the same step model on H200, whose fp16
    and bf16 peaks are equal): the optimizer step over all 8 x the default's stage parameters."""
    args = ("train", "llama-3.1-8b", "--framework", "deepspeed", "--gpus", "16", "--tp", "1", "--pp", "2",
            "--zero", "0", "--gpu", "h200", "--micro-batch", "2")
    default = run_json(*args)["results"]
    pure = run_json(*args, "--recipe", "bf16")["results"]
    fp16 = run_json(*args, "--dtype", "fp16")["results"]
    assert pure["class_optimizer"] == pytest.approx(8 * default["class_optimizer"], rel=1e-9)
    assert pure["io_step_seconds"] == pytest.approx(fp16["io_step_seconds"], rel=1e-9)
    assert pure["class_comm"] == pytest.approx(fp16["class_comm"], rel=1e-9)


def test_published_memory_reads_the_rows_precision():
    """jobs.validation.published_memory sets the flag from the row's precision: an fp16 DeepSpeed row (NeoX,
    Pythia) at ZeRO 0 under a pipeline keeps FP16_Optimizer's whole fp32 states; a bf16 one gets BF16_Optimizer's.
    Llama-3.1-8B dp4 pp2, 2,048 tokens with full recompute: both peak inside the optimizer step on the last stage
    (4,015,132,672 parameters, test_llama31_8b_stage_by_hand), FP16_Optimizer at 2 + 2 + 4 + 8 + 4 (its whole fp32
    gradient copy) = 20 B a parameter, BF16_Optimizer at 2 + 4 + 4/4 + 8/4 + 4/4 = 10 B: 10 B a parameter apart.
    Both were BF16_Optimizer's before (the flag defaulted to True): 0 apart."""
    from gpuplan.jobs.validation.published_memory import _estimate

    spec = load_model("llama-3.1-8b")
    row = {"framework": "deepspeed", "recompute": "full", "micro_batch": 1, "seq_len": 2048, "kind": "allocated",
           "layout": {"dp": 4, "tp": 1, "pp": 2, "cp": 1, "zero": 0, "microbatches": 8}}
    bf16, _ = _estimate({**row, "precision": "bf16"}, spec)
    fp16, _ = _estimate({**row, "precision": "fp16"}, spec)
    assert fp16 - bf16 == pytest.approx(10 * 4_015_132_672, rel=1e-12)


@pytest.mark.skipif(not os.environ.get("GPUPLAN_DEEPSPEED_SRC"), reason="needs a DeepSpeed source tree "
                    "(GPUPLAN_DEEPSPEED_SRC, with py-cpuinfo, hjson, msgpack, ninja and einops importable)")
@pytest.mark.parametrize("stages, dp", sorted(MEASURED))
def test_measurement_reruns(tmp_path, stages, dp):
    """Re-measure on the DeepSpeed tree named (the constants above are edaa722's): 20-55 s each on 2 CPU cores."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "measure_deepspeed_bf16.py"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (os.environ["GPUPLAN_DEEPSPEED_SRC"],
                                                                     os.environ.get("PYTHONPATH")))))
    out = tmp_path / "bf16.json"
    subprocess.run([sys.executable, str(script), "--dp", str(dp), "--stages", str(stages), "--out", str(out),
                    "--port", str(29_531 + 10 * stages + dp)], env=env, check=True, timeout=600, capture_output=True)
    got = json.loads(out.read_text())
    n, acc, master, moment, lp_grads, step_grad = MEASURED[stages, dp]
    assert got["optimizer"] == "BF16_Optimizer" and got["params"] == n and got["stage"] == 0
    assert [tuple(x) for x in got["accumulation_buffer"]] == [(acc[0], "torch." + acc[1])]
    assert [tuple(x) for x in got["master_partition"]] == [(master[0], "torch." + master[1])]
    assert [tuple(x) for x in got["optimizer_states"]] == [(moment[0], "torch." + moment[1])] * 2
    assert sum(n for n, _ in got["lp_grads_at_step"]) == lp_grads[0]
    assert [tuple(x) for x in got["step_grad_partition"]] == [(step_grad[0], "torch." + step_grad[1], True)]
