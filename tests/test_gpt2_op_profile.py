"""GPT-2's eager op profile (transformers' models/gpt2, read at 5.17.0 by scripts/hf_op_profiles.py) and the census
taking a CUDA step's path where the CPU would dispatch otherwise (gpuplan.profile.cuda_dispatch): dropout's fused
kernel, SDPA's in-kernel dropout and CUDA autocast's fp32 list. Coefficients are bytes per token and feature unit of
one decoder layer's memory-bound kernels (core.time.op_profile), worked out by hand from modeling_gpt2.py."""

from __future__ import annotations

from collections import Counter

import pytest

from gpuplan.catalog.op_profiles import eager_ops_for, families, family_profiles

H_TERMS = ("T*h", "T*q", "T*kv")  # equal for GPT-2 (no GQA, head dim = n_embd / n_head): only their sum is read


def _layer(setting: str, cell: str) -> dict:
    return family_profiles("gpt2")[setting].counts["layer"][cell]["bytes"]


def test_gpt2_is_profiled_not_llama_standing_in():
    assert "gpt2" in families()
    ops = eager_ops_for("gpt2", "amp", "full", "flash")
    assert "llama's used" not in (ops.note or "")


def test_gpt2_layer_forward_bytes_bf16():
    """bf16 parameters, SDPA (dropout in the kernel). Per token: ln_1 and ln_2 read and write 2 h each (4 h
    apiece); the two residual dropouts, native_dropout, read 2 h and write 2 h plus a 1-byte mask (5 h
    apiece); the two residual adds read 4 h and write 2 h (6 h apiece): 2 x (4 + 5 + 6) = 30 h. gelu_new,
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) on the I-wide c_fc output: pow, three scalar muls, tanh and
    the '1 +' read 2 I and write 2 I (6 x 4 I), the x + and the final product read 4 I and write 2 I (2 x 6 I):
    36 I. Tolerance 0.1 B: the solve's residual over the generator's shapes."""
    f = _layer("bf16", "forward.memory")
    assert sum(f.get(k, 0.0) for k in H_TERMS) == pytest.approx(30.0, abs=0.1)
    assert f["T*I"] == pytest.approx(36.0, abs=0.1)


def test_gpt2_layer_forward_bytes_amp_as_cuda_autocast_runs_it():
    """fp32 parameters under torch.autocast on CUDA. h: ln_1 / ln_2 on the fp32 residual stream, fp32 in and out
    (8 h apiece); autocast's cast of each linear's input to bf16 before c_attn and c_fc (4 h read, 2 h written:
    6 h apiece); the residual dropouts on the bf16 linear outputs (5 h apiece); the residual adds, fp32 + bf16 into
    fp32 (4 + 2 + 4 = 10 h apiece): 2 x (8 + 6 + 5 + 10) = 58 h. I: pow is on CUDA autocast's fp32 list
    (autocast_mode.h AT_FORALL_FP32), so x is cast up (2 I read, 4 I written: 6 I) and pow, the scalar muls,
    tanh and '1 +' run in fp32 (8 I each: 5 x 8 I), x + and the final product read bf16 x and an fp32 operand
    and write fp32 (10 I each), 0.5 x stays bf16 (4 I), and c_proj's input is cast back (4 I read, 2 I written:
    6 I): 6 + 40 + 20 + 4 + 6 = 76 I. On the CPU's own autocast lists pow stays bf16 and the I term read 36."""
    f = _layer("amp", "forward.memory")
    assert sum(f.get(k, 0.0) for k in H_TERMS) == pytest.approx(58.0, abs=0.2)
    assert f["T*I"] == pytest.approx(76.0, abs=0.1)


@pytest.mark.parametrize("setting,per_param", [("bf16", 1.0), ("amp", 2.0)])
def test_learned_positions_updated_as_the_embedding(setting, per_param):
    """GPT-2's wpe (n_positions x n_embd, the Pos*h feature) takes the same AdamW update per parameter as the
    token embedding (V*h); fp32 parameters and states (amp) move twice bf16's bytes."""
    opt = family_profiles("gpt2")[setting].counts["rest"]["optimizer.optimizer"]["bytes"]
    base = family_profiles("gpt2")["bf16"].counts["rest"]["optimizer.optimizer"]["bytes"]["V*h"]
    assert opt["Pos*h"] == pytest.approx(opt["V*h"], rel=1e-3)
    assert opt["V*h"] == pytest.approx(per_param * base, rel=1e-6)


def _tiny_gpt2(attention: str = "sdpa", precision: str = "bf16"):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from gpuplan.profile.op_census import CensusSettings, take_census

    cfg = {"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_inner": 128, "n_positions": 64, "vocab_size": 128,
           "activation_function": "gelu_new", "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1}
    st = CensusSettings(micro_batch=2, seq_len=16, attention=attention, precision=precision)
    one, two = (Counter((p, n) for p, c, n, *_ in take_census(cfg, layers, st).ops if c != "view") for layers in (1, 2))
    return two - one, two


@pytest.mark.parametrize("attention,dropouts", [("sdpa", 2), ("eager", 3)])
def test_census_dropout_is_cudas_fused_kernel(attention, dropouts):
    """Dropout.cpp's fused path (native_dropout forward, native_dropout_backward backward) once per dropout a
    layer: the two residual dropouts, plus the attention probabilities' on the eager path (SDPA keeps it in the
    kernel); none of the CPU's bernoulli_ / div_ path, and SDPA is not decomposed into the math path."""
    layer, _ = _tiny_gpt2(attention)
    assert layer[("forward", "native_dropout")] == dropouts
    assert layer[("backward", "native_dropout_backward")] == dropouts
    assert not [k for k in layer if k[1] in ("bernoulli_", "div_", "_safe_softmax")]
    if attention == "sdpa":
        assert ("forward", "bmm") not in layer


def test_census_amp_casts_gelu_up_as_cuda_does(monkeypatch):
    """Under amp a GPT-2 layer's forward casts 12 tensors (torch.autocast on CUDA): the four linears' weights and
    biases (8), the bf16 inputs of c_attn and c_fc (the fp32 residual stream's LayerNorm outputs: 2), pow's upcast
    of the bf16 c_fc output (AT_FORALL_FP32) and c_proj's cast of the fp32 gelu output back to bf16 (2). Without the
    CUDA policy (CPU autocast's own lists) the last two are not dispatched: 10."""
    import contextlib

    import gpuplan.profile.cuda_dispatch as cuda_dispatch

    layer, _ = _tiny_gpt2(precision="fp32-autocast")
    assert layer[("forward", "pow")] == 1
    assert layer[("forward", "_to_copy")] == 12
    monkeypatch.setattr(cuda_dispatch, "cuda_autocast_policy", lambda torch: contextlib.nullcontext())
    cpu_lists, _ = _tiny_gpt2(precision="fp32-autocast")
    assert cpu_lists[("forward", "_to_copy")] == 10


def test_cuda_autocast_policy_applies_inside_and_restores():
    torch = pytest.importorskip("torch")
    from gpuplan.profile.cuda_dispatch import cuda_autocast_policy

    x = torch.ones(4, 4, dtype=torch.bfloat16)
    target = torch.tensor([0, 1, 2, 3])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with cuda_autocast_policy(torch):
            assert torch.pow(x, 3).dtype == torch.float32
            assert torch.softmax(x, -1).dtype == torch.float32
            assert torch.nn.functional.layer_norm(x, (4,)).dtype == torch.float32
        assert torch.pow(x, 3).dtype == torch.bfloat16  # the CPU's own lists again
        assert torch.nn.functional.cross_entropy(x, target).dtype == torch.float32  # CPU's fp32 nll_loss kept


@pytest.mark.parametrize("setting,h_bytes", [("bf16", 30.0), ("amp", 58.0)])
def test_gpt_bigcode_layer_forward_bytes(setting, h_bytes):
    """GPT-BigCode (SantaCoder / StarCoder; modeling_gpt_bigcode.py@5.17.0) has GPT-2's block around multi-query
    attention: the same h terms as GPT-2 (bf16 30 h, amp 58 h: the docstrings above), but gelu_pytorch_tanh is one
    kernel (F.gelu, approximate='tanh': 2 I read, 2 I written) and not on autocast's fp32 list, so the MLP's
    element-wise bytes are 4 I in bf16 and amp alike (c_proj's input stays bf16: no cast back)."""
    f = family_profiles("gpt_bigcode")[setting].counts["layer"]["forward.memory"]["bytes"]
    assert sum(f.get(k, 0.0) for k in H_TERMS if k != "T*kv") == pytest.approx(h_bytes, abs=0.2)
    assert f["T*I"] == pytest.approx(4.0, abs=0.1)


def test_santacoder_reads_its_own_profile():
    ops = eager_ops_for("gpt_bigcode", "amp", "full", "flash")
    assert "llama's used" not in (ops.note or "")


@pytest.mark.parametrize("family", ["gpt2", "gpt_bigcode"])
@pytest.mark.parametrize("setting,element", [("bf16", 2.0), ("amp", 4.0)])
def test_position_rows_read_once_a_micro_batch(family, setting, element):
    """``wpe(position_ids)`` looks up (1, s, h): the table's s rows read and written once, then read again by the
    broadcast add into the token embeddings, whatever the micro-batch (sPos*h, 3 accesses an element: 6 B bf16,
    12 B for amp's fp32 table). Tolerance 0.05 B: the solve's residual."""
    rest = family_profiles(family)[setting].counts["rest"]["forward.memory"]["bytes"]
    assert rest["sPos*h"] == pytest.approx(3 * element, abs=0.05)
