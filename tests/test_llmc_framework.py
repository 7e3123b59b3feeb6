"""--framework llmc: karpathy/llm.c as its code runs (@f1e2ace), through the user's door.

Memory is llm.c's own allocation count (train_gpt2.cu fill_in_parameter_sizes / fill_in_activation_sizes /
gpt2_allocate_state, llmc/cublas_common.h, llmc/cudnn_att.cpp), worked here by hand; the step's memory-bound
kernels are its kernels' loads and stores (core/time/llmc_ops.py); the framework runs data parallelism only,
ZeRO 0/1 and recompute none / selective (-r 0 / -r 1), and refuses the rest naming the field (exit 2)."""

import json

import pytest

GIB = 2**30
ROW_774M = ["train", "gpt2-large", "--framework", "llmc", "--gpu", "a100-sxm4-80gb", "--gpus", "8", "--seq-len", "1024",
            "--global-batch", "512", "--tp", "1", "--pp", "1", "--zero", "1", "--micro-batch", "32", "--recompute",
            "none", "--mfu", "predicted", "--tokens", "149999845376", "--dtype", "bf16", "--json"]


def hand_count(L, C, NH, B, T=1024, Vp=50304, maxT=1024, ranks=8, zero=1, recompute=0):
    """llm.c's device bytes, term by term (train_gpt2.cu@f1e2ace line numbers)."""
    params = Vp * C + maxT * C + L * (12 * C * C + 13 * C) + 2 * C  # L118-139
    shard = params // ranks if zero == 1 and params % ranks == 0 else params  # zero.cuh L565-573
    weights = grads = 2 * params  # bf16 params (L155) and grads (L370)
    master = m = v = 4 * shard  # L402-408
    bt = B * T
    # L219-254 with cuDNN: per layer ln1 C, atty C, residual2 C, ln2 C, fch 4C, fch_gelu 4C (-r 0), residual3 C,
    # qkvr 3C in bf16 = 16C; ln1/ln2 mean + rstd 4 floats, cuDNN stats NH floats
    layer_bf16 = C + C + C + C + 4 * C + (4 * C if recompute == 0 else 0) + C + 3 * C
    layers = L * bt * (2 * layer_bf16 + 4 * (4 + NH))
    # once: encoded C, lnf C, output max(3C, NH*T, Vp), scratch_bt4c 4C, scratch_btc C (+ fch_gelu 4C at -r 1);
    # lnf mean, rstd, losses
    once = bt * (2 * (C + C + max(3 * C, NH * T, Vp) + 4 * C + C + (4 * C if recompute >= 1 else 0)) + 4 * 3)
    io = 2 * 4 * bt  # inputs, targets (L380-381)
    workspaces = 32 * 2**20 + 256 * 2**20  # cuBLASLt (cublas_common.h L28), cuDNN's bound (cudnn_att.cpp L209)
    return weights + grads + master + m + v + layers + once + io + workspaces


def test_parameter_counts_are_llmcs():
    """GPT-2 124M with the unpadded 50,257-row table is the 124,439,808 llm.c's README prints (train_gpt2.c,
    README.md@f1e2ace L52); the CUDA trainer pads to 50,304 rows (+47 x 768) and 774M / 1558M are 36 x 1,280 /
    48 x 1,600 with the same rule."""
    from gpuplan.adapters.resolve import resolve_model
    from gpuplan.core.memory.llmc_memory import padded_vocab, parameter_count

    assert padded_vocab(50257) == 50304
    assert parameter_count(resolve_model("gpt2")) == 124_439_808 + 47 * 768 == 124_475_904
    assert parameter_count(resolve_model("gpt2-large")) == 774_090_240
    assert parameter_count(resolve_model("gpt2-xl")) == 1_557_686_400


def test_train_774m_memory_is_the_hand_count_and_mfu_below_one(run_cli):
    """The llm.c GPT-2 774M row's layout (scripts/run_gpt2_774M.sh: -b 32 -t 1024 -r 0 -z 1 on 8 A100 80GB).
    By hand: params 774,090,240 (x2 B weights, x2 B grads), shard 96,761,280 (x12 B master, m, v); activations
    36 x 32,768 x (2 x 16 x 1,280 + 4 x 24) = 48,431,628,288 B; once 32,768 x (2 x 59,264 + 12) = 3,884,318,720 B;
    inputs/targets 262,144 B; workspaces 301,989,888 B: 56,875,695,360 B = 52.97 GiB, reserved the same
    (cudaMalloc, no caching allocator)."""
    code, out, err = run_cli(*ROW_774M)
    assert code == 0, err
    r = json.loads(out)["results"]
    expected = hand_count(L=36, C=1280, NH=20, B=32)
    assert expected == 56_875_695_360
    assert r["mem_peak_allocated"] == pytest.approx(expected, rel=1e-12)
    assert r["mem_peak_reserved"] == pytest.approx(expected, rel=1e-12)
    assert r["mem_fits"] is True
    # MFU: a fraction of peak, and above the default framework's for the same layout (its fitted element-wise
    # factor and fp32 loss are gone): 0.489 before, 0.554 with llm.c's kernels (tolerance 0.01)
    assert 0 < r["mfu"] < 1
    assert r["mfu"] == pytest.approx(0.554, abs=0.01)


def test_350m_recompute_selective_drops_the_gelu_outputs():
    """-r 1 keeps one 4C fch_gelu buffer instead of one a layer: the 350M (24 x 1,024, mb 64) allocates
    23 x 65,536 x 4,096 x 2 B = 12,348,030,976 B less than at -r 0 (train_gpt2.cu L243)."""
    from gpuplan.adapters.resolve import resolve_model
    from gpuplan.core.memory.llmc_memory import stage_memory
    from gpuplan.core.parallel import ParallelLayout

    spec = resolve_model("gpt2-medium")
    lay = ParallelLayout(dp=8, zero=1, micro_batch=64, global_batch=512)
    none, sel = (stage_memory(spec, lay, 1024, mode)["backward_start"] for mode in ("none", "selective"))
    assert none == hand_count(L=24, C=1024, NH=16, B=64)
    assert sel == hand_count(L=24, C=1024, NH=16, B=64, recompute=1)
    assert none - sel == 23 * 65_536 * 4_096 * 2 == 12_348_030_976


def test_llmc_memory_bound_kernels_by_hand():
    """One GPT-2 774M layer (C = 1,280) on an A100 (2.039 TB/s x 0.89): forward 32C + 16 B, backward 58C + 16 B
    per token = 115,232 B; 3 + 13 kernels of 7.84 us per micro-batch of 32,768 tokens (core/time/llmc_ops.py).
    Per micro-batch and layer: 16 x 7.84 us + 32,768 x 115,232 / 1.81471e12 = 2.2062 ms."""
    from gpuplan.adapters.resolve import resolve_model
    from gpuplan.core.time.llmc_ops import class_seconds, layer_classes

    spec = resolve_model("gpt2-large")
    classes = layer_classes(spec, "none")
    assert sum(k.bytes for k in classes) == 32 * 1280 + 16 + 58 * 1280 + 16 == 115_232
    assert sum(k.kernels for k in classes) == 16
    seconds = class_seconds(spec, "none", 32_768, 2.039e12)
    layer = sum(v for name, v in seconds.items() if name != "loss")
    assert layer == pytest.approx(16 * 7.84e-6 + 32_768 * 115_232 / (2.039e12 * 0.89), rel=1e-9)
    assert layer == pytest.approx(2.2062e-3, rel=1e-4)


@pytest.mark.parametrize("flag, value, field", [("--tp", "2", "tp"), ("--pp", "2", "pp"), ("--zero", "3", "zero"),
                                                ("--zero", "2", "zero"), ("--recompute", "full", "recompute"),
                                                ("--dtype", "fp8", "dtype"), ("--attention-kernel", "flash1",
                                                                              "attention_kernel")])
def test_llmc_refuses_what_llmc_does_not_run(run_cli, flag, value, field):
    """Data parallelism only, -z 0 / 1 (zero.cuh L575-578), -r 0 / 1, the BF16 build: one line naming the field,
    exit 2."""
    code, out, err = run_cli("train", "gpt2-large", "--framework", "llmc", "--gpu", "a100-sxm4-80gb", "--gpus", "8",
                             "--tokens", "1e10", "--mfu", "predicted", flag, value)
    assert code == 2, out + err
    text = err.strip().splitlines()[-1]
    assert text.startswith(f"error: {field}: got") and "llmc" in text


def test_memory_advice_offers_only_what_llmc_runs():
    """`gpuplan memory --framework llmc`'s changes to try: micro-batch 1, ZeRO-1 and -r 1 (selective); not ZeRO-2/3,
    full recompute, TP/PP or CPU optimizer offload, which llm.c does not have (megatron's list, same layout, has
    ZeRO-2 and 3, full recompute and PP)."""
    from gpuplan.adapters.resolve import resolve_model
    from gpuplan.core.memory.training import MemorySettings
    from gpuplan.core.parallel import ParallelLayout
    from gpuplan.jobs.memory.estimate import _candidate_changes

    spec = resolve_model("gpt2-xl")
    lay = ParallelLayout(dp=8, zero=0, micro_batch=32, global_batch=1024)
    names = [c[0] for c in _candidate_changes(spec, lay, MemorySettings(seq_len=1024, recipe="mixed", framework="llmc",
                                                                         implementation="llmc"))]
    assert names == ["micro-batch 1", "ZeRO-1", "selective recompute"]
    mega = [c[0] for c in _candidate_changes(spec, lay, MemorySettings(seq_len=1024, recipe="mixed"))]
    assert {"ZeRO-3", "full recompute", "PP 2"} <= set(mega)


@pytest.mark.parametrize("command", ["train", "memory"])
def test_llmc_refuses_a_model_that_is_not_gpt2(run_cli, command):
    """train_gpt2.cu trains GPT-2 blocks only: Llama 3.1 8B (RMSNorm, gated SiLU MLP, 8 K/V heads, RoPE, untied head)
    is refused naming the model field, exit 2."""
    code, out, err = run_cli(command, "llama-3.1-8b", "--framework", "llmc", "--gpu", "h100", "--gpus", "8",
                             *(("--tokens", "1e10") if command == "train" else ()))
    assert code == 2, out + err
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: model: got 'llama-3.1-8b'") and "GPT-2 blocks only" in line and "rmsnorm" in line
