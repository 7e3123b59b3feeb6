"""The recompute-mode part of the planner's advantage on torchtitan (issue 37, eighth pass), checked on the
only published torchtitan pairs that change the recompute mode and nothing else it models:
pytorch/torchtitan docs/performance.md @1ea476e9f (2024-04-24, 'Llama 2 performance numbers', FSDP2 on 64
A100 80GB, eager: train_configs/llama2_13b.toml / llama2_70b.toml @1ea476e9f compile = false, seq_len 4096;
13B fused_rmsnorm, 70B the Python rmsnorm): Llama 2 13B, local batch 2, no AC 2,162 against op-level SAC
1,904 tokens/s/GPU (x1.136); Llama 2 70B op-level SAC at local batch 1, 355, against full AC at local batch
2, 353 (x1.006; the page: local batch 2 with selective AC runs out of memory).

Not packaged as published rows: the page does not print the network (taken here as the catalog's A100, a
DGX A100's 200 Gb/s per GPU; the ratios below move by at most 0.033 between 100 and 400 Gb/s). Ratios at
one layout cancel what the two runs share.
"""

from __future__ import annotations

import pytest

SOURCE = "pytorch/torchtitan docs/performance.md@1ea476e9f, Llama 2 table (64 A100 80GB, FSDP2)"


def _row(model: str, local_batch: int, recompute: str, tokens_per_s: int, python_norm: bool) -> dict:
    """A published_throughput.yaml-shaped row of that table (FSDP over all 64 GPUs, eager)."""
    return {"id": f"titan-2404-{model}-{recompute}", "family": "torchtitan-2024-04-a100", "source": SOURCE,
            "model": {"catalog": model, "name": model, "seq_len": 4096}, "gpu": "a100-sxm4-80gb", "gpus": 64,
            "layout": {"tp": 1, "pp": 1, "vpp": 1, "cp": 1, "ep": 1, "etp": None, "dp": 64, "zero": 3,
                       "micro_batch": local_batch, "global_batch": 64 * local_batch, "recompute": recompute,
                       "sequence_parallel": False},
            "precision": "bf16",
            # core.time.titan_ops.from_framework_label: '9dec370' selects the Python RMSNorm's op list
            "framework": "torchtitan @1ea476e (FSDP2" + ("; 9dec370's Python RMSNorm" if python_norm else "") + ")",
            "measured": {"tokens_per_s_per_gpu": tokens_per_s}}


def _predicted(row: dict) -> float:
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    return predict_tokens_per_gpu_s(row)


def test_dropping_op_level_sac_gains_no_more_in_the_model_than_torchtitan_measured():
    """The 8B groups' advantage is mostly dropping op-level SAC (+8.5 ... +10% predicted on H100). On the
    one published pair the model gives x1.094 where torchtitan measured x1.136: it does not overstate it."""
    none, sac = _row("llama-2-13b", 2, "none", 2162, False), _row("llama-2-13b", 2, "selective", 1904, False)
    model = _predicted(none) / _predicted(sac)
    measured = 2162 / 1904
    assert measured == pytest.approx(1.1355, abs=1e-4)
    assert model == pytest.approx(1.094, abs=0.01)  # printed when written (1.0942)
    assert model < measured


def test_op_level_sac_at_half_the_batch_against_full_ac_is_overstated_by_the_model():
    """The 70B choices trade torchtitan's full AC for op-level SAC at a smaller micro-batch (+20% of their
    +35% / +20% advantage is the recompute mode). The published pair of that trade: x1.006 measured, x1.062
    in the model (1.038 ... 1.071 at 100 ... 400 Gb/s per GPU): 3 ... 6.5% of the 70B advantage is the
    model's optimism on this trade."""
    sac, full = _row("llama-2-70b", 1, "selective", 355, True), _row("llama-2-70b", 2, "full", 353, True)
    model = _predicted(sac) / _predicted(full)
    assert 355 / 353 == pytest.approx(1.0057, abs=1e-4)
    assert model == pytest.approx(1.062, abs=0.01)  # printed when written (1.0623)
    assert model - 355 / 353 > 0.03
