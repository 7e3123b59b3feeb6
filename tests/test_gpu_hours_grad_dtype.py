"""--grad-dtype fp32 reduces gradients in fp32 (Megatron-Core grad_reduce_in_fp32, distributed_data_parallel_config.py
@core_v0.16.0 L11-12): 4 bytes a gradient on the data-parallel wire, as torchtitan's FSDP2 reduce already was. The
SmolLM3 row passes it from its nanotron config (accumulate_grad_in_fp32 true: gradient_accumulator.py@7bc99232 L383
all-reduces the fp32 buffers). Without --grad-dtype, megatron's default is that fp32 buffer too (one rule for memory
and wire: core.memory.recipe_facts.reduced_grad_bytes)."""

from types import SimpleNamespace

from helpers import reference_runs_by_id

from gpuplan.jobs.plan.step_settings import grad_comm_bytes
from gpuplan.jobs.validation.gpu_hours import end_to_end_gpu_hours, run_inputs


def _smollm3() -> dict:
    return reference_runs_by_id()["smollm3-3b"]


def _inputs(framework: str, grad_dtype: str | None, recipe: str | None = None) -> SimpleNamespace:
    """The three fields grad_comm_bytes reads, as PlanInputs / TrainingInputs give them (schema.training_fields)."""
    recipe = recipe or {"megatron": "megatron", "generic": "mixed", "torchtitan": "fsdp2"}.get(framework, "mixed")
    width = {"fp32": 4.0, "bf16": 2.0}
    return SimpleNamespace(framework=framework, recipe_name=recipe,
                           recipe_memory_settings=lambda: {"grad_bytes": width.get(grad_dtype)})


def test_grad_comm_bytes_by_framework_and_dtype():
    """One width for the buffer and the wire (core.memory.recipe_facts.reduced_grad_bytes): megatron's recipe holds
    fp32 gradients (grad_reduce_in_fp32, Megatron-LM's bf16 default), so 4 B unless --grad-dtype bf16; generic's
    'mixed' recipe holds bf16 (2 B); torchtitan reduces in fp32 whatever is stated."""
    assert grad_comm_bytes(_inputs("megatron", None)) == 4.0
    assert grad_comm_bytes(_inputs("megatron", "fp32")) == 4.0
    assert grad_comm_bytes(_inputs("megatron", "bf16")) == 2.0
    assert grad_comm_bytes(_inputs("megatron", None, recipe="mixed")) == 2.0  # --recipe mixed: bf16 buffer
    assert grad_comm_bytes(_inputs("generic", None)) == 2.0
    assert grad_comm_bytes(_inputs("generic", "fp32")) == 4.0
    assert grad_comm_bytes(_inputs("torchtitan", None)) == 4.0
    assert grad_comm_bytes(_inputs("deepspeed", None)) == 2.0


def test_smollm3_passes_its_fp32_gradient_reduction():
    row = _smollm3()
    assert row["grad_dtype"] == "fp32" and "accumulate_grad_in_fp32 true" in row["grad_dtype_source"]
    assert run_inputs(row).grad_dtype == "fp32"


def test_fp32_reduction_lengthens_the_smollm3_step_by_a_bounded_amount():
    """dp192 tp2: 1.54e9 gradients a rank; bf16 -> fp32 adds 3.08 GB a step to the all-reduce buffer. A ring
    all-reduce moves 2 x that x 191/192 = 6.1 GB more through each GPU: 0.12 s at a GPU's 400 Gb/s NIC (50 GB/s),
    0.25 s at half that rate. DDP's buckets overlap it with the backward, so the step grows by more than 0 and at
    most 0.25 s."""
    row = _smollm3()
    fp32, _ = end_to_end_gpu_hours(row)
    bf16, _ = end_to_end_gpu_hours({**row, "grad_dtype": "bf16"})
    assert (float(row["tokens"]), row["global_batch"], row["seq_len"], row["gpus"]) == (11.3e12, 576, 4096, 384)
    steps = 11.3e12 / (576 * 4096)
    extra_s = (fp32 - bf16) * 3600 / 384 / steps
    assert 0.0 < extra_s <= 0.25, extra_s
