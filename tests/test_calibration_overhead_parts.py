"""A calibration's memory_overhead on parts of either kind (review w17 of 7e45c2ee, M1 / S1 / N5; mender MD).

The overhead is the bytes a PyTorch trial measured above the modelled tensors that do not scale with activations
(calibrate.fit._fit_memory). calibrate.apply.apply_to_overheads keeps it in one device-neutral field
(Overheads.measured) whatever --gpu is, so a memory --compare row re-targeted to its own part (Overheads.on_device)
keeps it: beside the CUDA context and NCCL buffers on a GPU, alone on a TPU (clamped at 0 there). Before, it went
to cuda_context when --gpu was a GPU and to an XLA-only field when a TPU, and a row of the other kind lost it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuplan import MemoryInputs, estimate_memory
from gpuplan.calibrate import Measurement, apply_to_overheads, fit_calibration, save_calibration
from gpuplan.calibrate import predict as P
from gpuplan.calibrate.compatibility import compatibility
from gpuplan.core.memory.device_memory import Overheads
from gpuplan.core.units import format_bytes

GiB = 2**30

ASK = {"model": "llama-3.1-8b", "gpus": 8, "framework": "generic"}
PARTS = ("tpu-v5p", "h100-sxm")


def _calibration(overhead: float):
    """A fit of two Llama-3.2-1B trials on an H100 whose allocated peaks sit ``overhead`` bytes above the modelled
    tensors (activation factor 1): memory_overhead = ``overhead``."""
    trials = []
    for micro_batch in (1, 2):
        m = Measurement(source=f"mb{micro_batch}", kind="table", model="llama-3.2-1b", seq_len=4096, world_size=1,
                        gpu="h100-sxm", micro_batch=micro_batch)
        trials.append(replace(m, peak_memory_bytes=P.memory_parts(P.case_of(m)).peak(1.0, overhead),
                              memory_kind="allocated"))
    return fit_calibration(trials)


@pytest.fixture(scope="module")
def one_gib(tmp_path_factory):
    cal = _calibration(GiB)
    assert cal.memory_overhead.value == pytest.approx(GiB, rel=1e-6)
    return cal, str(save_calibration(cal, tmp_path_factory.mktemp("cal") / "cal.json"))


def test_each_compare_row_keeps_the_overhead_whatever_part_is_gpu(one_gib):
    """Each verdict row's headroom is its own part's calibrated headroom (memory --gpu <that part>), which is the
    uncalibrated one less the 1 GiB: with --gpu tpu-v5p the h100-sxm row read 1.37 GiB (the overhead dropped),
    with --gpu h100-sxm the tpu-v5p row 25.22 GiB; both 1 GiB under-counted."""
    _, path = one_gib
    for part in PARTS:
        plain = estimate_memory(MemoryInputs(**ASK, gpu=part)).to_dict()["results"]["headroom"]
        alone = estimate_memory(MemoryInputs(**ASK, gpu=part, calibration=path)).to_dict()["results"]["headroom"]
        assert alone == pytest.approx(plain - GiB, rel=1e-6)
        for gpu in PARTS:
            table = estimate_memory(MemoryInputs(**ASK, gpu=gpu, compare=PARTS, calibration=path)).to_dict()["tables"]
            row, = (r for r in table["verdict per GPU type"] if r["gpu"] == part)
            assert row["headroom after margin"] == format_bytes(alone), (part, gpu)


def test_a_gpu_shows_the_overhead_in_its_cuda_context_line(one_gib):
    """GPU answers read as before: the CUDA context assumption shows 0.5 GiB + the calibration's 1 GiB."""
    _, path = one_gib
    report = estimate_memory(MemoryInputs(**ASK, gpu="h100-sxm", calibration=path))
    line, = (a for a in report.assumptions if a.key == "cuda_context")
    assert line.value == "1.50 GiB"


def test_a_negative_overhead_is_not_taken_below_a_tpus_tensors(tmp_path):
    """calibrate.fit allows a negative overhead (a trial's peak under the modelled tensors): on a TPU it is counted
    as 0, so the memory needed is the tensors (not less), and the assumption says so; a GPU still subtracts it."""
    cal = _calibration(-0.25 * GiB)
    path = str(save_calibration(cal, tmp_path / "cal.json"))
    tpu = {**ASK, "gpu": "tpu-v5p"}
    plain = estimate_memory(MemoryInputs(**tpu)).to_dict()["results"]
    report = estimate_memory(MemoryInputs(**tpu, calibration=path))
    got = report.to_dict()["results"]
    assert got["overheads"] == 0 and got["peak_total"] == pytest.approx(plain["peak_total"], rel=1e-9)
    runtime, = (a for a in report.assumptions if a.key == "runtime")
    assert runtime.value == "-256.00 MiB measured (calibration); counted as 0 on a TPU (not below the tensors)"
    gpu = apply_to_overheads(cal, Overheads())
    assert gpu.measured == pytest.approx(-0.25 * GiB, rel=1e-6)


def test_the_tpu_warning_says_where_the_overhead_was_measured(one_gib):
    """S1: the bytes are a torch peak on the calibration's part, not XLA's reserve; planned on a TPU the warning
    names that part and kind, on another GPU it reads as before."""
    cal, _ = one_gib
    tpu = compatibility(cal, "tpu-v5p", None).warning
    assert tpu.endswith("; the fixed memory overhead was measured under PyTorch on h100-sxm (torch allocated peak), "
                        "carried to the TPU as is")
    assert "PyTorch" not in compatibility(cal, "a100", None).warning
    assert compatibility(cal, "h100-sxm", None).warning == ""
