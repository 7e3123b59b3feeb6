"""Every accelerator entry: parses, is sourced, dense peaks are sane, names are unique."""

import pytest

from gpuplan.catalog import hardware_entries, load_accelerator
from gpuplan.errors import InputError

ENTRIES = hardware_entries()


def test_catalog_has_at_least_25_accelerators():
    assert len(ENTRIES) >= 25


@pytest.mark.parametrize("gpu_id", sorted(ENTRIES))
def test_entry_is_sourced_and_consistent(gpu_id):
    entry = ENTRIES[gpu_id]
    gpu = load_accelerator(gpu_id)
    assert entry["sources"], "every entry names its source"
    assert entry["confidence"] in ("high", "medium", "low")
    assert gpu.memory_bytes > 1e9 and gpu.memory_bandwidth > 1e11
    peaks = dict(gpu.peak_flops)
    assert peaks, "at least one dense peak"
    # dense tensor paths: fp16 >= tf32 and fp8 >= bf16 where both exist (never the reverse)
    if "fp8" in peaks and "bf16" in peaks:
        assert peaks["fp8"] >= peaks["bf16"]
    if "tf32" in peaks and "fp16" in peaks:
        assert peaks["fp16"] >= peaks["tf32"]
    # no part ships a dense BF16 peak above 10 PFLOP/s per device (GB300-class is ~2.5)
    assert peaks.get("bf16", 0) < 10e15


def test_aliases_are_unique():
    seen = {}
    for gpu_id, entry in ENTRIES.items():
        for alias in [gpu_id, *entry.get("aliases", [])]:
            assert alias.lower() not in seen, f"{alias} used by {seen.get(alias.lower())} and {gpu_id}"
            seen[alias.lower()] = gpu_id


@pytest.mark.parametrize("alias, gpu_id", [("a100", "a100-sxm4-80gb"), ("H100", "h100-sxm"), ("h200", "h200-sxm")])
def test_common_aliases(alias, gpu_id):
    assert load_accelerator(alias).id == gpu_id


def test_article_a100_figures():
    a100 = load_accelerator("a100")
    assert a100.peak("bf16") == 312e12 and a100.peak("fp16") == 312e12  # dense, A100 datasheet
    assert a100.memory_bytes >= 80e9


def test_unknown_gpu_suggests_names():
    with pytest.raises(InputError, match="did you mean"):
        load_accelerator("h10")


def test_kernels_like_names_a_catalog_part_and_carries_its_efficiencies():
    """A same-die variant (the power-capped Grand Teton H100 of torchtitan's runs) takes the H100's
    measured kernel fractions: MAMF 0.803 and FA2-era attention 0.20, not the defaults 0.75 / 0.30."""
    from gpuplan.catalog import hardware_entries, load_accelerator
    from gpuplan.core.time import step as S

    entries = hardware_entries()
    for gpu_id, entry in entries.items():
        if entry.get("kernels_like"):
            assert entry["kernels_like"] in entries, gpu_id
    gt = load_accelerator("h100-sxm-96gb-500w")
    assert gt.kernels_like == "h100-sxm"
    assert S.gemm_efficiency(gt, 1e9, 0.0) == S.MAMF_FRACTION["h100-sxm"] == 0.803
    assert S.attention_efficiency(gt) == 0.20
    assert S.attention_efficiency(gt, hopper_tuned=True) == 0.20 * S.HOPPER_TUNED_ATTENTION_SPEEDUP


def test_gb300_rates_match_the_rack_figures_and_gb200():
    """GB300 NVL72 without sparsity (Verda's rack table; Glenn Lockwood: '360 PF FP8 for training'):
    FP4 1,080 PF, FP8 360 PF, BF16 180 PF over 72 GPUs. Blackwell Ultra raised NVFP4 (1.5x GB200's
    10 PF) but not FP8 or BF16, which equal GB200's (720 / 360 PF sparse per NVL72)."""
    gb300, gb200 = load_accelerator("gb300"), load_accelerator("gb200")
    for dtype, rack_pflops in (("fp4", 1080), ("fp8", 360), ("bf16", 180)):
        assert gb300.peak(dtype) * 72 == pytest.approx(rack_pflops * 1e15, rel=1e-9)
    assert gb300.peak("fp8") == gb200.peak("fp8") and gb300.peak("bf16") == gb200.peak("bf16")
    assert gb300.peak("fp4") / gb200.peak("fp4") == pytest.approx(1.5)


def test_scale_up_ranks_is_the_nvlink_domain_then_the_node_then_8():
    """Accelerator.scale_up_ranks: GB200 NVL72 trays hold 4 GPUs (devices_per_node = 4) but the catalog's
    NVLink domain is 72 (gb200.toml domain_size); a part without a domain size falls back to its node's
    GPUs, and one with neither to 8 (DGX / HGX)."""
    from dataclasses import replace

    gb200 = load_accelerator("gb200")
    assert (gb200.devices_per_node, gb200.scale_up_ranks) == (4, 72)
    assert replace(gb200, scale_up_domain=None).scale_up_ranks == 4
    assert replace(gb200, scale_up_domain=None, devices_per_node=None).scale_up_ranks == 8
