"""--grad-dtype fp32 reduces gradients in fp32 (Megatron-Core grad_reduce_in_fp32, distributed_data_parallel_config.py
@core_v0.16.0 L11-12): 4 bytes a gradient on the data-parallel wire, as torchtitan's FSDP2 reduce already was. The
SmolLM3 row passes it from its nanotron config (accumulate_grad_in_fp32 true: gradient_accumulator.py@7bc99232 L383
all-reduces the fp32 buffers)."""

from pathlib import Path
from types import SimpleNamespace

import yaml

import gpuplan
from gpuplan.jobs.plan.search import grad_comm_bytes
from gpuplan.jobs.validation.gpu_hours import end_to_end_gpu_hours, run_inputs

RUNS = Path(gpuplan.__file__).parent / "catalog" / "reference" / "training_runs.yaml"


def _smollm3() -> dict:
    return next(r for r in yaml.safe_load(RUNS.read_text())["runs"] if r["id"] == "smollm3-3b")


def test_grad_comm_bytes_by_framework_and_dtype():
    assert grad_comm_bytes(SimpleNamespace(framework="megatron", grad_dtype=None)) == 2.0
    assert grad_comm_bytes(SimpleNamespace(framework="megatron", grad_dtype="bf16")) == 2.0
    assert grad_comm_bytes(SimpleNamespace(framework="megatron", grad_dtype="fp32")) == 4.0
    assert grad_comm_bytes(SimpleNamespace(framework="torchtitan", grad_dtype=None)) == 4.0


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
    bf16, _ = end_to_end_gpu_hours({k: v for k, v in row.items() if k != "grad_dtype"})
    steps = 11.3e12 / (576 * 4096)
    extra_s = (fp32 - bf16) * 3600 / 384 / steps
    assert 0.0 < extra_s <= 0.25, extra_s
