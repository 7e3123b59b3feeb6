"""Tests for gpuplan.profile: measured training memory under FakeTensorMode (no GPU, no weights).

Each trap listed in docs/measure.md has a test that shows it is handled and, where a switch
exists, that switching the defence off changes the number (so the defence is not a no-op).
The heavy tests need the ``profile`` extra (torch, transformers) and are skipped without it.
Whole file: ~40 s on 2 CPU cores (the full-depth Llama-2-7B run is ~5 s of that).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from gpuplan.errors import InputError
from gpuplan.profile import (
    CATEGORIES,
    PHASES,
    MemoryMeasurement,
    extrapolate_to_depth,
    measure_training_memory,
)

HAVE_BACKEND = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))
needs_backend = pytest.mark.skipif(not HAVE_BACKEND, reason="needs the profile extra (torch, transformers)")

GIB = 2**30

# A tiny Llama: fast to measure, same layer structure as the big ones. Its torch_dtype is
# float32 on purpose: the measurement must not take the dtype from the config (trap 1).
TINY = {
    "model_type": "llama",
    "hidden_size": 128,
    "intermediate_size": 352,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1024,
    "num_hidden_layers": 2,
    "max_position_embeddings": 4096,
    "torch_dtype": "float32",
}

# Llama-2-7B's config.json shape fields (as in the catalog; kept inline so the test does not
# depend on the catalog's contents). torch_dtype float16 as published.
LLAMA2_7B = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
    "hidden_act": "silu",
    "rms_norm_eps": 1e-05,
    "torch_dtype": "float16",
}
S7 = 4096
SBH7 = S7 * 1 * 4096  # s·b·h for Llama-2-7B at b=1, s=4096


def _private(**kw) -> MemoryMeasurement:
    """The implementation with its test switches (trap defences off, stock tracker)."""
    from gpuplan.profile.measure import _measure

    return _measure(**kw)


def _per_layer_activation(cfg, layers=(2, 4), **kw) -> float:
    a, b = (measure_training_memory(cfg, num_layers=n, **kw) for n in layers)
    return (b.activation_bytes_end_of_forward - a.activation_bytes_end_of_forward) / (layers[1] - layers[0])


def _llama_layer_bytes(s, b, h, a, h_kv, i) -> int:
    """Exact saved bytes of one HF Llama layer (bf16, SDPA flash/efficient, no dropout)."""
    return s * b * (16 * h + 4 * h + 4 * h_kv + 8 * i) + 4 * a * s * b + 8 * s * b


# --------------------------------------------------------------------------------------------
# no torch needed


def test_import_does_not_import_torch():
    code = "import sys, gpuplan.profile; assert 'torch' not in sys.modules; assert 'transformers' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("missing", ["torch", "transformers"])
def test_missing_backend_is_an_input_error(monkeypatch, missing):
    monkeypatch.setitem(sys.modules, missing, None)  # makes `import <missing>` raise ImportError
    with pytest.raises(InputError) as err:
        measure_training_memory(TINY)
    assert (err.value.field, err.value.value) == ("measure", "torch")
    assert "pip install 'gpuplan[profile]'" in err.value.expected


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"precision": "fp16"}, "precision"),
        ({"optimizer": "lion"}, "optimizer"),
        ({"recompute": "selective"}, "recompute"),
        ({"attention": "flash_attention_2"}, "attention"),
        ({"micro_batch": 0}, "micro_batch"),
        ({"seq_len": -1}, "seq_len"),
        ({"seq_len": 2048.0}, "seq_len"),
        ({"world_size": 0}, "world_size"),
        ({"num_layers": 0}, "num_layers"),
        ({"micro_batch": True}, "micro_batch"),
        ({"foreach": "yes"}, "foreach"),
    ],
)
def test_bad_inputs_raise_input_error(kwargs, field):
    with pytest.raises(InputError) as err:
        measure_training_memory(TINY, **kwargs)
    assert err.value.field == field


@pytest.mark.parametrize("cfg", [{"hidden_size": 8}, "llama", None])
def test_bad_config_raises_input_error(cfg):
    with pytest.raises(InputError) as err:
        measure_training_memory(cfg)
    assert err.value.field == "hf_config"


def _synthetic(layers, *, fwd, bwd, opt, temp_bwd, temp_opt) -> MemoryMeasurement:
    def cats(total, temp=0):
        return {"total": total, **dict.fromkeys(CATEGORIES, 0), "temp": temp, "param": total - temp}

    phase_peaks = {"forward": cats(fwd), "backward": cats(bwd, temp_bwd), "optimizer_step": cats(opt, temp_opt)}
    phase_max = {p: {k: v for k, v in c.items() if k != "total"} for p, c in phase_peaks.items()}
    peak_phase = max(phase_peaks, key=lambda p: phase_peaks[p]["total"])
    return MemoryMeasurement(
        peak_bytes=phase_peaks[peak_phase]["total"], peak_phase=peak_phase,
        at_peak=phase_max[peak_phase],
        max_by_category={k: max(m[k] for m in phase_max.values()) for k in CATEGORIES},
        activation_bytes_end_of_forward=fwd, settings={"num_layers": layers, "num_params": layers, "x": 1},
        versions={}, wall_seconds=0.0, phase_peaks=phase_peaks, phase_max_by_category=phase_max)


def test_extrapolation_follows_the_phase_that_wins_at_depth():
    # Backward peaks at 2 and 4 layers (big constant), the optimizer step grows faster and wins
    # at 32: a straight line through the two overall peaks would say 130 instead of 340.
    shallow = _synthetic(2, fwd=90, bwd=100, opt=40, temp_bwd=50, temp_opt=10)
    deeper = _synthetic(4, fwd=92, bwd=102, opt=60, temp_bwd=50, temp_opt=20)
    assert (shallow.peak_phase, deeper.peak_phase) == ("backward", "backward")
    out = extrapolate_to_depth(shallow, deeper, 32)
    assert out["peak_phase"] == "optimizer_step"
    assert out["peak_bytes"] == 40 + 30 * 10 == 340
    assert out["at_peak"]["temp"] == 10 + 30 * 5
    # temp's maximum switches from the backward's constant to the optimizer step's line
    assert out["max_by_category"]["temp"] == 160
    assert out["per_layer"]["activation_bytes_end_of_forward"] == 1
    assert out["settings"]["num_layers"] == 32 and out["settings"]["num_params"] == 32


def test_extrapolation_rejects_mismatched_runs():
    a = _synthetic(2, fwd=1, bwd=2, opt=3, temp_bwd=0, temp_opt=0)
    b = _synthetic(4, fwd=1, bwd=2, opt=3, temp_bwd=0, temp_opt=0)
    with pytest.raises(InputError):
        extrapolate_to_depth(b, a, 32)  # not deeper
    with pytest.raises(InputError):
        extrapolate_to_depth(a, a, 32)
    with pytest.raises(InputError):
        extrapolate_to_depth(a, b, 0)
    other = MemoryMeasurement(**{**b.__dict__, "settings": {**b.settings, "x": 2}})
    with pytest.raises(InputError) as err:
        extrapolate_to_depth(a, other, 32)
    assert err.value.value == ["x"]


# --------------------------------------------------------------------------------------------
# measurements (torch + transformers)


@needs_backend
def test_measurement_is_consistent_and_leaves_no_global_state_behind():
    import torch
    import torch.distributed as dist
    import transformers.masking_utils as mu

    find_before = mu.find_packed_sequence_indices
    m = measure_training_memory(TINY, micro_batch=2, seq_len=128)
    assert isinstance(m, MemoryMeasurement)
    assert set(m.at_peak) == set(m.max_by_category) == set(CATEGORIES)
    assert m.peak_phase in PHASES
    assert m.peak_bytes == sum(m.at_peak.values()) == m.phase_peaks[m.peak_phase]["total"]
    assert all(m.max_by_category[k] >= m.at_peak[k] for k in CATEGORIES)
    assert m.peak_bytes == max(p["total"] for p in m.phase_peaks.values())
    assert 0 < m.activation_bytes_end_of_forward <= m.max_by_category["activation"]
    assert set(m.versions) == {"torch", "transformers", "python"}
    st = m.settings
    assert (st["micro_batch"], st["seq_len"], st["num_layers"], st["config_num_layers"]) == (2, 128, 2, 2)
    assert (st["device"], st["world_size"], st["optimizer"], st["foreach"]) == ("cpu", 1, "adamw", True)  # trap 6
    assert m.wall_seconds > 0
    # nothing leaks out of the run
    assert torch.get_default_dtype() == torch.float32
    assert mu.find_packed_sequence_indices is find_before
    assert not dist.is_initialized()


@needs_backend
def test_unknown_model_type_is_an_input_error():
    with pytest.raises(InputError) as err:
        measure_training_memory({"model_type": "no-such-model"})
    assert err.value.field == "hf_config.model_type"


@needs_backend
def test_trap1_bf16_parameters_really_are_bf16():
    import torch

    m = measure_training_memory(TINY, seq_len=64)  # config says float32; bf16 asked for
    n = m.settings["num_params"]
    assert m.settings["param_dtype"] == "bfloat16"
    assert m.max_by_category["param"] == 2 * n
    assert m.max_by_category["grad"] == 2 * n
    # AdamW: exp_avg + exp_avg_sq in bf16, plus one fp32 'step' scalar per parameter tensor
    assert 4 * n < m.max_by_category["optimizer_state"] <= 4 * n + 4 * 64
    assert torch.get_default_dtype() == torch.float32

    mixed = measure_training_memory(TINY, seq_len=64, precision="fp32-autocast")
    assert mixed.settings["param_dtype"] == "float32"
    assert mixed.settings["mixed_precision"] == "autocast"
    assert mixed.max_by_category["param"] == mixed.max_by_category["grad"] == 4 * n
    assert 8 * n < mixed.max_by_category["optimizer_state"] <= 8 * n + 4 * 64


@needs_backend
def test_trap1_default_dtype_restored_after_a_failure():
    import torch

    bad = {**TINY, "model_type": "gemma2", "head_dim": 32}  # Gemma 2 has no SDPA path in HF
    with pytest.raises(InputError) as err:
        measure_training_memory(bad, seq_len=64)
    assert err.value.field == "attention"
    assert torch.get_default_dtype() == torch.float32
    assert measure_training_memory(bad, seq_len=64, attention="eager").peak_bytes > 0


@needs_backend
def test_trap2_causal_mask_is_not_saved_per_layer():
    import transformers.masking_utils as mu

    b = 2
    per_layer = {s: _per_layer_activation(TINY, (1, 2), seq_len=s, micro_batch=b) for s in (256, 512)}
    # Linear in s (no s² term): exactly the Llama formula, so doubling s doubles it.
    for s, got in per_layer.items():
        assert got == _llama_layer_bytes(s, b, h=128, a=4, h_kv=64, i=352)
    assert per_layer[512] == 2 * per_layer[256]

    # Without the defence HF builds a [b,1,s,s] mask and every layer keeps it.
    s = 512
    unpatched = [_private(hf_config=TINY, num_layers=n, seq_len=s, micro_batch=b, _patch_packed_mask=False)
                 for n in (1, 2)]
    extra = unpatched[1].activation_bytes_end_of_forward - unpatched[0].activation_bytes_end_of_forward
    assert extra - per_layer[s] >= b * s * s
    assert mu.find_packed_sequence_indices.__name__ == "find_packed_sequence_indices"  # restored


@needs_backend
@pytest.mark.parametrize("world_size", [1, 2])
def test_trap3_fast_tracker_equals_stock_tracker(world_size):
    kw = {"hf_config": TINY, "micro_batch": 2, "seq_len": 128, "world_size": world_size}
    fast, stock = _private(**kw, _tracker="fast"), _private(**kw, _tracker="stock")
    assert fast.settings["tracker"] == "fast" and stock.settings["tracker"] == "stock"
    assert fast.peak_bytes == stock.peak_bytes
    assert fast.peak_phase == stock.peak_phase
    assert fast.at_peak == stock.at_peak
    assert fast.raw_at_peak == stock.raw_at_peak
    assert fast.max_by_category == stock.max_by_category
    assert fast.phase_peaks == stock.phase_peaks


def _clear_dtensor_sharding_caches():
    """Sharding propagation results are cached (Python and C++); the trap only bites on a miss."""
    import torch
    from torch.distributed.tensor import DTensor

    prop = DTensor._op_dispatcher.sharding_propagator
    prop.propagate_op_sharding.cache_clear()
    type(prop)._propagate_tensor_meta_cached.cache_clear()
    torch._C._clear_DTensor_sharding_propagator_cache()


@needs_backend
def test_trap4_fsdp_optimizer_state_is_sharded():
    import torch.distributed as dist

    world = 4
    single = measure_training_memory(TINY, seq_len=128)
    _clear_dtensor_sharding_caches()
    sharded = measure_training_memory(TINY, seq_len=128, world_size=world)
    assert sharded.settings["parallelism"] == "fsdp2"
    assert not dist.is_initialized()  # fake process group torn down: repeated calls work
    n_tensors_bound = 4 * 64  # fp32 step scalars, one per parameter tensor, on every rank
    opt1, optw = single.max_by_category["optimizer_state"], sharded.max_by_category["optimizer_state"]
    assert abs(optw - opt1 / world) <= n_tensors_bound
    step1, stepw = single.phase_peaks["optimizer_step"], sharded.phase_peaks["optimizer_step"]
    assert stepw["param"] == step1["param"] // world  # only the local shards during the step
    assert stepw["grad"] == step1["grad"] // world
    assert stepw["temp"] == step1["temp"] // world  # foreach temporary is per shard, too

    # Without the defence, sharding propagation under our fake mode is counted: global-shape
    # tensors appear in the optimizer step.
    _clear_dtensor_sharding_caches()
    bad = _private(hf_config=TINY, seq_len=128, world_size=world, _patch_sharding_fake_mode=False)
    assert bad.phase_peaks["optimizer_step"]["total"] > stepw["total"] + step1["param"]
    assert not dist.is_initialized()


# --------------------------------------------------------------------------------------------
# reference numbers (docs/measure.md): Llama-2-7B, b=1, s=4096


@pytest.fixture(scope="module")
def llama7b_shallow():
    return [measure_training_memory(LLAMA2_7B, seq_len=S7, num_layers=n) for n in (2, 4)]


@needs_backend
def test_llama2_7b_sdpa_activations_per_layer(llama7b_shallow):
    a, b = llama7b_shallow
    per_layer = (b.activation_bytes_end_of_forward - a.activation_bytes_end_of_forward) / 2
    assert per_layer == _llama_layer_bytes(S7, 1, h=4096, a=32, h_kv=4096, i=11008)
    assert round(per_layer / SBH7, 3) == 45.533
    assert a.settings["param_dtype"] == "bfloat16"  # config's float16 not taken


@needs_backend
def test_llama2_7b_eager_and_recompute_activations_per_layer():
    eager = _per_layer_activation(LLAMA2_7B, seq_len=S7, attention="eager")
    sdpa = _llama_layer_bytes(S7, 1, h=4096, a=32, h_kv=4096, i=11008)
    assert eager == sdpa + 6 * 32 * S7 * S7 - 4 * 32 * S7  # eager keeps the fp32/bf16 score tensors
    assert round(eager / SBH7, 2) == 237.50
    full = _per_layer_activation(LLAMA2_7B, seq_len=S7, recompute="full")
    assert full == 2 * SBH7  # only the bf16 layer input is saved


@needs_backend
def test_llama2_7b_full_depth_reference_and_extrapolation(llama7b_shallow):
    # The one full-depth 7B run in the suite (~5 s on 2 cores).
    m = measure_training_memory(LLAMA2_7B, seq_len=S7)
    n = m.settings["num_params"]
    assert n == 6_738_415_616
    assert m.peak_phase == "optimizer_step"
    assert round(m.peak_bytes / GIB, 2) == 62.76
    assert m.at_peak["param"] == m.at_peak["grad"] == 2 * n
    assert m.at_peak["temp"] == 2 * n  # foreach AdamW's temporary
    assert m.at_peak["optimizer_state"] == 4 * n + 4 * 291  # + one fp32 step per tensor
    assert round(m.phase_peaks["backward"]["total"] / GIB, 2) == 62.26  # steady-state backward

    ext = extrapolate_to_depth(*llama7b_shallow, 32)
    assert ext["peak_phase"] == "optimizer_step"
    assert ext["settings"]["num_params"] == n
    assert abs(ext["peak_bytes"] - m.peak_bytes) <= 0.001 * m.peak_bytes
    assert ext["at_peak"] == m.at_peak


@needs_backend
def test_extrapolation_matches_a_real_12_layer_run():
    cfg = {**TINY, "hidden_size": 256, "intermediate_size": 704, "vocab_size": 4096, "num_hidden_layers": 12}
    kw = {"seq_len": 512}
    shallow, deeper = (measure_training_memory(cfg, num_layers=n, **kw) for n in (2, 4))
    full = measure_training_memory(cfg, **kw)
    ext = extrapolate_to_depth(shallow, deeper, 12)
    assert full.settings["num_layers"] == 12
    assert abs(ext["peak_bytes"] - full.peak_bytes) <= 0.01 * full.peak_bytes
    assert ext["peak_phase"] == full.peak_phase
    for k in CATEGORIES:
        assert abs(ext["at_peak"][k] - full.at_peak[k]) <= 0.01 * full.peak_bytes
        assert abs(ext["max_by_category"][k] - full.max_by_category[k]) <= 0.01 * full.peak_bytes
    assert ext["settings"]["num_params"] == full.settings["num_params"]


@needs_backend
def test_fsdp_extrapolation_from_4_and_8_layers():
    cfg = {**TINY, "num_hidden_layers": 12}
    kw = {"seq_len": 256, "world_size": 4}
    runs = {n: measure_training_memory(cfg, num_layers=n, **kw) for n in (2, 4, 8, 12)}
    ext = extrapolate_to_depth(runs[4], runs[8], 12)
    full = runs[12]
    assert ext["warnings"] == []
    assert ext["peak_bytes"] == full.peak_bytes and ext["peak_phase"] == full.peak_phase
    assert ext["at_peak"] == full.at_peak
    assert ext["max_by_category"] == full.max_by_category
    # a 2-layer FSDP run is flagged: prefetch/reduce-scatter overlap is not steady yet
    assert any("FSDP" in w for w in extrapolate_to_depth(runs[2], runs[4], 12)["warnings"])
