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
    none_tokens_per_s = _predicted(none)
    model = none_tokens_per_s / _predicted(sac)  # x1.1140 with 1ea476e's wq, wk, wv (x1.0942 fused, at ae3dfd8)
    measured = 2162 / 1904  # x1.1355
    assert model < measured
    # Lower bound by hand: op-level SAC at @1ea476e (parallelize_llama.py, _custom_policy) saves every odd
    # mm of a layer's forward and re-runs every even one; torchtitan's Llama (models/llama/model.py) runs
    # wq, wk, wv, wo, w1, w3, w2 in that order, so wk, wo and w3 run again in backward. Llama 2 13B (h 5120,
    # 40 heads of 128, MLP 13824, 40 layers): 2 x 40 x (5120^2 + 5120^2 + 5120 x 13824) = 9.857e9 FLOP a
    # token. At the A100's dense BF16 peak (312 TFLOP/s, catalog/hardware/a100-sxm4-80gb.toml) they add at
    # least 9.857e9 / 312e12 s a token to a step the model runs at none_tokens_per_s, so the ratio is at
    # least 1 + that x none_tokens_per_s (1.0737 at ae3dfd8) while the step is compute-bound, as the
    # measured x1.136 shows it is (FSDP's transfers would otherwise hide the recompute)
    recomputed_flops = 2 * 40 * (5120 * 5120 + 5120 * 5120 + 5120 * 13824)
    assert model > 1 + recomputed_flops / 312e12 * none_tokens_per_s


def test_op_level_sac_at_half_the_batch_against_full_ac_is_overstated_by_the_model():
    """The 70B choices trade torchtitan's full AC for op-level SAC at a smaller micro-batch (+20% of their
    +35% / +20% advantage is the recompute mode). The published pair of that trade: x1.006 measured, x1.062
    in the model (1.038 ... 1.071 at 100 ... 400 Gb/s per GPU): 3 ... 6.5% of the 70B advantage is the
    model's optimism on this trade."""
    sac, full = _row("llama-2-70b", 1, "selective", 355, True), _row("llama-2-70b", 2, "full", 353, True)
    sac_tokens_per_s = _predicted(sac)
    model = sac_tokens_per_s / _predicted(full)  # x1.0600 with 1ea476e's wq, wk, wv (x1.0623 fused, at ae3dfd8)
    assert model - 355 / 353 > 0.03  # measured x1.0057
    # Derived comparisons in place of the printed 1.0623. At one local batch (1) the trade is recompute
    # alone: full AC re-runs the forward matmuls op-level SAC keeps (the odd ones of wq, wk, wv, wo, w1,
    # w3, w2: wq, wv, w1, w2; see the 13B test) and the attention SAC saves. Llama 2 70B (h 8192, 64 query
    # and 8 KV heads of 128, MLP 28672, 80 layers): 2 x 80 x (8192^2 + 8192 x 1024 + 2 x 8192 x 28672) =
    # 8.724e10 FLOP a token, at least 8.724e10 / 312e12 s a token at the A100's BF16 peak: the same-batch
    # ratio is at least 1 + that x sac_tokens_per_s (1.107 at ae3dfd8; the model's own 1.163)
    same_batch = sac_tokens_per_s / _predicted(_row("llama-2-70b", 1, "full", 353, True))
    kept_by_sac = 2 * 80 * (8192 * 8192 + 8192 * 1024 + 2 * 8192 * 28672)
    assert same_batch > 1 + kept_by_sac / 312e12 * sac_tokens_per_s
    # full AC at local batch 2 runs at least as fast a token as at 1 (each FSDP all-gather and kernel
    # launch serves twice the tokens), so the published pair's ratio is at most the same-batch one
    assert model <= same_batch
