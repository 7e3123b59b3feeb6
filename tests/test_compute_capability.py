"""The catalog's CUDA compute capability (catalog/hardware/*.toml ``compute_capability``, Accelerator.compute_capability)
and Transformer Engine's FP8 layout rule taken from it (is_non_tn_fp8_gemm_supported,
transformer_engine/pytorch/utils.py@v2.8 L462-467: (10, 0) <= cc < (12, 0) or cc >= (13, 0))."""

import pytest

from gpuplan.catalog import accelerator_from_entry, hardware_entries, load_accelerator
from gpuplan.core.hardware import Accelerator
from gpuplan.errors import InputError

# NVIDIA's CUDA GPUs page (developer.nvidia.com/cuda-gpus; V100 on its legacy page)
EXPECTED = {"h100-sxm": (9, 0), "h200-sxm": (9, 0), "h20": (9, 0), "b200": (10, 0), "gb200": (10, 0),
            "b300": (10, 3), "gb300": (10, 3), "l40s": (8, 9), "rtx-4090": (8, 9), "l4": (8, 9),
            "a100-sxm4-80gb": (8, 0), "a10": (8, 6), "rtx-3090": (8, 6), "v100-sxm2-32gb": (7, 0)}


@pytest.mark.parametrize("gpu_id, cc", sorted(EXPECTED.items()))
def test_catalog_parts_carry_nvidias_compute_capability(gpu_id, cc):
    assert load_accelerator(gpu_id).compute_capability == cc


def test_every_nvidia_part_has_one_and_no_other_vendor_does():
    for gpu_id, entry in hardware_entries().items():
        gpu = load_accelerator(gpu_id)
        nvidia = entry["vendor"] == "NVIDIA"
        assert (gpu.compute_capability is not None) == nvidia, gpu_id
        if nvidia:  # each names its source
            assert any("developer.nvidia.com/cuda" in s for s in entry["sources"]), gpu_id


@pytest.mark.parametrize("cc, any_layout", [
    (None, False), ((8, 9), False), ((9, 0), False), ((10, 0), True), ((10, 3), True), ((11, 0), True),
    ((12, 0), False), ((12, 1), False), ((13, 0), True)])
def test_te_rule_by_compute_capability(cc, any_layout):
    gpu = Accelerator("x", "x", "NVIDIA", 1e9, 1e12, (("bf16", 1e15),), compute_capability=cc)
    assert gpu.fp8_any_layout_gemm is any_layout


def test_catalog_parts_with_any_layout_are_the_sm100_ones():
    # the same four the NCCL-arch stand-in picked (no catalog part moves)
    assert sorted(g for g in hardware_entries() if load_accelerator(g).fp8_any_layout_gemm) == \
        ["b200", "b300", "gb200", "gb300"]


def _sm120_part() -> dict:
    """A user's entry for an sm_120 part tagged with NCCL's Blackwell tuning (as an RTX PRO 6000 Blackwell
    would be): B200's entry under another id, compute capability 12.0."""
    entry = {**hardware_entries()["b200"], "id": "rtx-pro-6000-test", "compute_capability": "12.0", "aliases": []}
    assert entry["scale_up"]["nccl_arch"] == "blackwell"
    return entry


def test_an_sm120_part_keeps_two_fp8_copies(monkeypatch):
    import gpuplan.catalog as C
    from gpuplan.core.memory.recipe_facts import weight_copies
    from gpuplan.core.time.megatron_ops import non_tn_fp8
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for

    part = accelerator_from_entry(_sm120_part())
    assert part.collective_arch == "blackwell" and part.compute_capability == (12, 0)
    assert not part.fp8_any_layout_gemm and not non_tn_fp8(part)
    real = C.load_accelerator
    monkeypatch.setattr(C, "load_accelerator", lambda name: part if name == "rtx-pro-6000-test" else real(name))

    def memory(gpu):
        inputs = PlanInputs(model="llama-3-70b", tokens=1e12, gpu=gpu, gpus=64, dtype="fp8", framework="megatron")
        return evaluator_for(inputs).memory
    sm120, b200 = memory("rtx-pro-6000-test"), memory("b200")
    assert (sm120.fp8_any_layout_gemm, b200.fp8_any_layout_gemm) == (False, True)
    assert weight_copies(sm120) == 2 and weight_copies(b200) == 1  # TE: data + transpose on sm_120


@pytest.mark.parametrize("value", ["9", "9.0.1", "sm_90", "ten", 9, 9.0, "", " 9.0", "0.5", "100.0"])
def test_bad_values_are_refused_naming_the_field(value):
    entry = {**hardware_entries()["h100-sxm"], "compute_capability": value}
    with pytest.raises(InputError, match=r"^compute_capability \(h100-sxm\): got .*MAJOR\.MINOR"):
        accelerator_from_entry(entry)


def test_other_vendors_take_none():
    entry = {**hardware_entries()["mi300x"], "compute_capability": "9.4"}
    with pytest.raises(InputError, match="NVIDIA parts only"):
        accelerator_from_entry(entry)
    assert accelerator_from_entry(hardware_entries()["mi300x"]).compute_capability is None


def test_a_bad_catalog_entry_is_one_line_and_exit_2(monkeypatch, capsys):
    import gpuplan.catalog as C
    from gpuplan.cli import main

    bad = {**hardware_entries()["h100-sxm"], "compute_capability": "9"}
    entries = {**hardware_entries(), "h100-sxm": bad}
    monkeypatch.setattr(C, "hardware_entries", lambda: entries)
    assert main(["memory", "llama-2-7b", "--gpu", "h100-sxm", "--gpus", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "compute_capability (h100-sxm)" in err
