"""One gradient width for memory and the data-parallel wire (review w11 r1 M1;
core.memory.recipe_facts.reduced_grad_bytes): under --framework megatron the default gradient buffer is fp32 (Megatron-LM's bf16 runs set
accumulate_allreduce_grads_in_fp32, megatron/training/arguments.py@core_v0.16.0 L720-724, passed as
grad_reduce_in_fp32, training.py L1295) and Megatron-Core reduces that buffer in its own dtype
(distributed_data_parallel.py L147), so typing --grad-dtype fp32 changes nothing, through the train and plan doors;
--grad-dtype bf16 halves the gradient bytes on the wire; torchtitan reduces in fp32 whatever the recipe."""

from __future__ import annotations

import pytest

LAYOUT = ["--gpu", "h100", "--gpus", "256", "--tp", "2", "--pp", "1", "--zero", "1", "--micro-batch", "1",
          "--seq-len", "4096", "--tokens", "100B", "--global-batch", "256"]


def _train(run_json, *extra: str) -> dict:
    return run_json("train", "--model", "llama-3.1-8b", "--framework", "megatron", *LAYOUT, *extra)["results"]


def test_the_default_and_an_explicit_fp32_give_the_same_memory_and_step(run_json):
    default, fp32 = _train(run_json), _train(run_json, "--grad-dtype", "fp32")
    bf16 = _train(run_json, "--grad-dtype", "bf16")
    for key in ("mem_peak_allocated", "io_step_seconds", "gpu_hours"):
        assert default[key] == fp32[key], key
    # bf16 holds 2 B a gradient, not 4: memory's 4,015,263,744 params a GPU at tp 2 ((8,030,261,248 - 266,240) / 2
    # split + the 65 norm vectors of 4,096, 266,240 params, whole on each rank) x 2 B = 8,030,527,488 B = 7.479 GiB
    # less at the peak (the start of backward; the fp32 copy of the 1/128 shard the distributed optimizer makes
    # inside its step, 0.117 GiB, is not held there)
    assert default["mem_peak_allocated"] - bf16["mem_peak_allocated"] == pytest.approx(8_030_527_488, rel=1e-9)
    assert bf16["io_step_seconds"] < default["io_step_seconds"]


def _dp_grad_row(run_json, *extra: str) -> dict:
    out = run_json("plan", "llama-3.1-8b", "--framework", "megatron", *LAYOUT, "--explain", *extra)
    table = next(t for k, t in out["tables"].items() if k.startswith("Communication per step"))
    return next(r for r in table if r["group"] == "DP" and r["collective"].startswith("grad"))


def test_bf16_halves_the_gradient_bytes_on_the_wire(run_json):
    """8,030,261,248 params / tp 2 = 4,015,130,624 gradients a GPU, reduced in NeMo 2 / Bridge's 128 Mi-parameter buckets
    (--framework megatron, core.comm.dp_overlap.NEMO_BUCKET_PARAMS): 4,015,130,624 / 134,217,728 = 29.9 -> 30; at 2 B,
    8,030,261,248 B / 30 = 267,675,375 B = 255.28 MiB a call; at 4 B (the default, as memory holds them) 510.55 MiB."""
    default, fp32, bf16 = _dp_grad_row(run_json), _dp_grad_row(run_json, "--grad-dtype", "fp32"), \
        _dp_grad_row(run_json, "--grad-dtype", "bf16")
    assert default == fp32
    assert (bf16["calls"], bf16["bytes each"]) == ("30", "255.28 MiB")
    assert (default["calls"], default["bytes each"]) == ("30", "510.55 MiB")


def test_torchtitan_reduces_in_fp32_and_generic_at_its_bf16_recipe():
    """torchtitan: FSDP2's MixedPrecisionPolicy(reduce_dtype=float32) whatever the recipe holds (unchanged);
    generic: the 'mixed' recipe's bf16 buffer, 2 B unless --grad-dtype fp32 (unchanged)."""
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.step_settings import grad_comm_bytes

    def width(**kw) -> float:
        return grad_comm_bytes(PlanInputs(model="llama-3.1-8b", gpu="h100", gpus=8, **kw))

    assert width(framework="torchtitan") == width(framework="torchtitan", recipe="bf16") == 4.0
    assert width(framework="generic") == 2.0 and width(framework="generic", grad_dtype="fp32") == 4.0
    assert width(framework="megatron") == width(framework="megatron", grad_dtype="fp32") == 4.0
    assert width(framework="megatron", grad_dtype="bf16") == width(framework="megatron", recipe="mixed") == 2.0
    assert width(framework="deepspeed") == width(framework="hf") == 2.0


def test_a_published_rows_step_reads_its_recipes_width():
    """published_throughput.row_grad_comm_bytes: the Megatron-Bridge rows' grad_reduce_in_fp32 False (bf16, 2 B),
    NeMo 24.07's Apex grad_sync_dtype (fp32 unless set; Nemotron-4 340B's bf16), torchtitan's fp32."""
    from helpers import published_rows_by_id

    from gpuplan.jobs.validation.published_throughput import row_grad_comm_bytes

    rows = published_rows_by_id()
    assert row_grad_comm_bytes(rows["mbridge-26.02-llama-3-70b-gb200-64g-fp8cs"]) == 2.0
    assert row_grad_comm_bytes(rows["nemo2407-llama-3-8b-h100-8g"]) == 4.0
    assert row_grad_comm_bytes(rows["nemo2407-nemotron-4-340b-h100-128g"]) == 2.0
    titan = next(r for r in rows.values() if r["family"].startswith("torchtitan"))
    assert row_grad_comm_bytes(titan) == 4.0
    bare = {k: v for k, v in rows["mbridge-26.02-llama-3-70b-gb200-64g-fp8cs"].items() if k != "recipe_memory"}
    assert row_grad_comm_bytes(bare) == 4.0  # a recipe not read: Megatron-Core's default fp32 buffer


def test_an_fp16_run_holds_and_reduces_its_gradients_in_fp16(run_json):
    """Megatron-LM turns accumulate_allreduce_grads_in_fp32 on for bf16 only (megatron/training/arguments.py
    @core_v0.16.0 L711-724; the flag is store_true, L2194-2196): an fp16 run's buffer is its parameters' dtype,
    2 B held and reduced (core.memory.recipe_facts.default_grad_bytes), so the default and --grad-dtype bf16 (the
    2-byte choice) agree; --grad-dtype fp32 gives 4 B in both."""
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.step_settings import grad_comm_bytes

    def both(**kw) -> tuple:
        inputs = PlanInputs(model="llama-3.1-8b", gpu="h100", gpus=8, **kw)
        return inputs.recipe_memory_settings()["grad_bytes"], grad_comm_bytes(inputs)

    assert both(framework="megatron", dtype="fp16") == (2.0, 2.0)
    assert both(framework="megatron", dtype="fp16", grad_dtype="fp32") == (4.0, 4.0)
    assert both(framework="megatron", dtype="bf16") == (None, 4.0)  # None: the 'megatron' recipe's 4 B
    assert both(framework="generic", dtype="fp16") == (None, 2.0)  # the 'mixed' recipe holds 2 B already
    default, bf16 = _train(run_json, "--dtype", "fp16"), _train(run_json, "--dtype", "fp16", "--grad-dtype", "bf16")
    for key in ("mem_peak_allocated", "io_step_seconds"):
        assert default[key] == bf16[key], key
    fp32 = _train(run_json, "--dtype", "fp16", "--grad-dtype", "fp32")
    assert fp32["mem_peak_allocated"] - default["mem_peak_allocated"] == pytest.approx(8_030_527_488, rel=1e-9)
