"""Invariants over VALID inputs (wave 14 helper A8, 2026-12-06): answers that cannot be right, found by a seeded random
sweep of every job through the Python API (catalog models x GPUs x frameworks, tokens 1 .. 1e15, GPUs 1 .. 1e6,
days 1e-3 .. 1e4, seq_len 1 .. 1M, batch 1 .. 1e6, serving contexts, rates, quantisations and engines), one test per
defect it found; each fails on the commit before its fix. Waves 9 and 10's grids: tests/test_invariants_wave9.py,
tests/test_invariants_wave10.py."""

from __future__ import annotations

import pytest

from gpuplan import estimate_budget, estimate_inference, estimate_memory, estimate_training
from gpuplan.errors import InputError

pytestmark = pytest.mark.usefixtures("time_box")
PARTS = ("weights", "grads", "master", "optimizer", "activations", "outside_layers", "temporaries", "fsdp_working_set")
"""The memory report's per-GPU parts (jobs.memory.estimate._peak_section): they sum to the allocated peak."""


@pytest.mark.parametrize(("model", "gpu", "framework", "micro_batch"),
                         [("llama-3-8b", "h100", "megatron", 1), ("pythia-6.9b", "b200", "torchtitan", 16)])
def test_full_recompute_parts_sum_to_the_allocated_peak(model, gpu, framework, micro_batch):
    """Under --recompute full the peak can fall later in backward, with one layer's activations recomputed
    (core.memory.training.stage_memory_parts): that layer is printed among the temporaries, so the parts sum to the
    allocated peak. Before: Llama-3-8B on 8 H100s (megatron) printed parts 570,982,400 B (545 MiB) short of it,
    Pythia-6.9B at micro-batch 16 on 64 B200s (torchtitan) 1,576,009,728 B."""
    r = estimate_memory({"model": model, "gpu": gpu, "gpus": 8 if framework == "megatron" else 64, "recompute": "full",
                         "framework": framework, "micro_batch": micro_batch}).to_dict()["results"]
    parts = sum(r[f"peak_{k}"] for k in PARTS)
    assert parts == pytest.approx(r["peak_allocated"], rel=1e-12), (parts, r["peak_allocated"])
    assert r["peak_temporaries"] > 0


def test_weights_per_gpu_name_what_they_add_to_the_whole_model():
    """On one GPU the per-GPU weights exceeded the whole model's with nothing printed to say why: vLLM pads
    gpt-oss-20b's MXFP4 experts (core.serving.weights.mxfp4_padding_bytes): 2,880 x 2,880 -> 2,944 x 3,072 per
    matrix, 3 x (2,944 x 3,072 - 2,880 x 2,880) x 32 experts x 24 layers = 1,727,004,672 weights at
    4.25 bits = 917,471,232 B (0.92 GB). The per-GPU line's formula now names it (before: the split only)."""
    report = estimate_inference({"model": "gpt-oss-20b", "gpu": "b300", "search": False})
    whole, per_gpu = report.line("weights_total"), report.line("weights_per_gpu")
    assert per_gpu.value - whole.value == pytest.approx(917_471_232, rel=1e-9)
    assert per_gpu.formula.endswith("+ 0.92 GB (874.97 MiB) MXFP4 expert padding (vLLM's MoE layout)"), per_gpu.formula
    plain = estimate_inference({"model": "llama-3.1-8b", "gpu": "h100", "search": False})
    assert plain.value("weights_per_gpu") == plain.value("weights_total")
    assert plain.line("weights_per_gpu").formula.endswith("embedding / LM head / tp")


V100_FULL_RECOMPUTE = {"model": "llama-3.1-8b", "gpu": "v100-sxm2-32gb", "dtype": "fp16", "tokens": "100B", "gpus": 64,
                       "recompute": "full"}
"""No published MFU ceiling bounds a V100 (jobs/validation/mfu_ceiling.py), so only the dense peak does."""


@pytest.mark.parametrize("estimate", [estimate_training, estimate_budget], ids=["train", "budget"])
def test_gpus_and_days_whose_solved_mfu_needs_an_hfu_past_the_peak_are_refused(estimate):
    """GPUs and days given, MFU solved: under --recompute full the GPUs run 1.31x the model's FLOPs (Llama-3.1-8B
    at 4,096 tokens), so an MFU above 1 / 1.31 = 76.2% of 6ND (81.4% of the exact count) needs an HFU above the
    dense peak. A given --mfu so high was refused (timing._check_hfu); a solved one printed 'MFU 83.6%,
    HFU 110%' for 64 V100s in 10 days (before). Now refused as an MFU above 100% is, naming the GPUs that do it."""
    with pytest.raises(InputError, match=r"above 81\.4%: with --recompute full the GPUs run 1\.31x the model's "
                                         r"FLOPs, an HFU above 100%") as refused:
        estimate(dict(V100_FULL_RECOMPUTE, days=10))
    assert str(refused.value).startswith("gpus/days: got '64 GPUs in 10.00 days'; needs MFU 8"), refused.value
    met = estimate(dict(V100_FULL_RECOMPUTE, days=12)).to_dict()["results"]  # a longer deadline: answered
    # hardware / model FLOPs a token, by hand (core.model.flops.training_flops_per_token, Llama-3.1-8B at 4,096):
    # layer matmuls 2 x 32 x 218,103,808 = 13,958,643,712; attention 32 x 2 x 32 heads x 256 x 4,096 keys =
    # 2,147,483,648; LM head 2 x 128,256 x 4,096 = 1,050,673,152; model 3 x their sum = 51,470,401,536; full
    # recompute adds the layers' and attention's forward, 16,106,127,360: 1 + 16,106,127,360 / 51,470,401,536 = 1.31292
    assert 0 < met["hfu"] <= 1 and met["hfu"] == pytest.approx(met["mfu"] * 1.31292, rel=1e-5), met["hfu"]


def test_a_deadline_met_on_more_gpus_than_it_needs_searches_the_larger_sizes_once(monkeypatch):
    """--days that 1 GPU would meet, on a model that needs more GPUs to fit: jobs.training.timing._first_fitting
    tried each larger common size in turn, and each refusal below the first that fits searched every larger size
    again for its message's hint (planner.plan.smallest_fitting_count): `train qwen3-30b-a3b --gpu l4 --tokens 1e9
    --days 1e4` took 3.4 s (before: a search after 1, 2, 3, 4, 6, 8, ... GPUs; on tpu-v5e 4.7 s). It goes to the
    size the first refusal names; the answer is unchanged (40 L4s, dp 20 x cp 2, ep 4, ZeRO-3, full recompute). Since
    the experts are split by expert TP (etp = tp, Megatron-Core's default: core.expert_layout) 32 L4s fit: dp 4 x tp 4
    x cp 2, ep 2, ZeRO-3, full recompute."""
    from gpuplan.planner import plan as P

    calls = []
    counted = P.smallest_fitting_count
    monkeypatch.setattr(P, "smallest_fitting_count", lambda *a, **k: calls.append(a[1]) or counted(*a, **k))
    results = estimate_training({"model": "qwen3-30b-a3b", "gpu": "l4", "tokens": int(1e9), "days": 1e4}
                                ).to_dict()["results"]
    assert results["gpus"] == 32 and (results["mem_layout"]["dp"], results["mem_layout"]["tp"]) == (4, 4), \
        results["mem_layout"]
    assert len(calls) <= 2, calls


def test_a_deadline_whose_model_needs_over_64x_its_gpus_is_answered():
    """--days that 1 L4 would meet (1e9 tokens in 1,000 days) for a 405B that fits on no fewer than 448 L4s: the
    larger sizes _first_fitting tried stopped at 64x the count (planner.plan.larger_counts), so the valid ask was
    refused 'gpus: got 1; no layout fits' though --gpus was not given (before); `plan` answered 448. Now the sizes
    past 64x are searched too: 448 GPUs (dp 7 x tp 8 x cp 8, ZeRO-3, full recompute), the deadline met."""
    results = estimate_training({"model": "llama-3.1-405b", "gpu": "l4", "tokens": int(1e9), "days": 1000}
                                ).to_dict()["results"]
    assert results["gpus"] == 448 and results["mem_fits"], results["mem_layout"]
    assert 0 < results["deadline_met"] <= 1000
    # where no size up to 131,072 fits (plan: 112.1 GiB at best on an L40S), the refusal is the first one, not
    # that of a size searched past 64x, which names a count nobody gave ('gpus: got '4096'', e3019ac6)
    with pytest.raises(InputError, match=r"^gpus: got 1; no layout fits NVIDIA L40S 48GB on 1 GPU or fewer"):
        estimate_training({"model": "mixtral-8x7b", "gpu": "l40s", "tokens": 184_597_772, "days": 60,
                           "framework": "hf", "dtype": "fp16", "seq_len": 7636})


def test_the_largest_micro_batch_is_bisected_below_its_guess(monkeypatch):
    """core.memory.micro_batch_fit.largest_micro_batch walked down one micro-batch at a time from a guess linear in
    the activations per sequence: at --seq-len 2 that guess is ~1e5, each step a whole peak, and `memory
    tinyllama-1.1b --gpu a10 --gpus 164 --framework torchtitan --seq-len 2 --tp 2 --pp 2 --recompute full` ran for
    minutes (before). Now capped at the 1,024 it answers at most and bisected: a handful of peaks per GPU type."""
    from gpuplan.core.memory import micro_batch_fit as MB

    calls = []
    counted = MB.peak_memory

    def peak(*args, **kwargs):
        calls.append(1)
        assert len(calls) < 2000, "walked one micro-batch at a time"
        return counted(*args, **kwargs)

    monkeypatch.setattr(MB, "peak_memory", peak)
    report = estimate_memory({"model": "tinyllama-1.1b", "gpu": "a10", "gpus": 164, "framework": "torchtitan",
                              "seq_len": 2, "tp": 2, "pp": 2, "recompute": "full"})
    rows = next(rows for title, rows in report.to_dict()["tables"].items() if title.startswith("verdict"))
    assert rows[0]["gpu"] == "a10" and rows[0]["largest micro-batch"] == 1024, rows[0]


def test_a_batch_the_kv_budget_does_not_hold_does_not_print_fits_yes():
    """TensorRT-LLM's KV budget is free_gpu_memory_fraction x what is free, so 'needed <= visible memory' held for
    Qwen2.5-1.5B at 33,612 tokens on 2 H800s (pp 2) while the budget holds 305 sequences: 'fits: yes' beside 'only
    305 sequences of 33,612 tokens fit, not 318' and no speed (before). Fits now also needs the batch held."""
    ask = {"model": "qwen2.5-1.5b", "gpu": "h800-sxm", "search": False, "context": 33612, "output_tokens": 3,
           "kv_dtype": "fp8", "engine": "trtllm", "pp": 2}
    over = estimate_inference(dict(ask, batch=318)).to_dict()["results"]
    assert over["max_sequences"] == 305 and over["fits"] is False and "tpot" not in over, over["fits"]
    held = estimate_inference(dict(ask, batch=305)).to_dict()["results"]
    assert held["fits"] is True and held["tpot"] > 0
