"""review_w11_r1 NOTE (llm.c's GPT-2 shape check): --framework llmc refuses, naming the model, what train_gpt2.cu@f1e2ace
cannot run: linears without bias (it has qkvb, attprojb, fcb, fcprojb), a parallel residual, sliding windows, QK norm,
softcaps, and a width C that is not a multiple of 64 (its bias-gradient kernel: "OC must be a multiple of 64!",
llmc/matmul.cuh@f1e2ace L253; GPT-2's output widths are 3C, C, 4C). MPT-7B's refusal says 'layernorm without bias'."""

import json
from dataclasses import replace

import pytest


def _gpt2_large():
    from gpuplan.adapters.resolve import resolve_model

    return resolve_model("gpt2-large")


@pytest.mark.parametrize("change, fragment", [
    (lambda s: replace(s, attention=replace(s.attention, qkv_bias=False)), "no q/k/v bias"),
    (lambda s: replace(s, attention=replace(s.attention, out_bias=False)), "no attention output bias"),
    (lambda s: replace(s, mlp=replace(s.mlp, bias=False)), "no MLP bias"),
    (lambda s: replace(s, parallel_residual=True), "a parallel residual"),
    (lambda s: replace(s, sliding_window=256), "sliding-window attention"),
    (lambda s: replace(s, final_logit_softcap=30.0), "logit softcaps"),
])
def test_refuses_what_gpt2s_block_in_llmc_does_not_have(change, fragment):
    from gpuplan.core.memory.llmc_memory import gpt2_shape_refusal

    assert gpt2_shape_refusal(_gpt2_large()) is None
    reason = gpt2_shape_refusal(change(_gpt2_large()))
    assert reason is not None and fragment in reason, reason


def test_width_800_is_refused_at_the_door(run_cli, tmp_path):
    """A GPT-2 config with n_embd 800 and 10 heads (head size 80; 800 = 12.5 x 64): train exited 0 before."""
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 800, "n_head": 10, "n_layer": 12,
              "n_positions": 1024, "n_ctx": 1024, "vocab_size": 50257, "activation_function": "gelu_new",
              "tie_word_embeddings": True}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, out, err = run_cli("train", "--model", str(path), "--framework", "llmc", "--gpu", "h100", "--gpus", "8",
                             "--tokens", "1e10", "--mfu", "predicted")
    assert code == 2, out + err
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: model: got") and "width 800, not a multiple of 64" in line and "L253" in line
    code, out, err = run_cli("train", "--model", str(path), "--framework", "megatron", "--gpu", "h100", "--gpus", "8",
                             "--tokens", "1e10", "--mfu", "predicted")
    assert code == 0, err  # only llm.c's kernels need it


def test_mpt_7b_is_said_to_have_layernorm_without_bias(run_cli):
    code, out, err = run_cli("memory", "mpt-7b", "--framework", "llmc", "--gpus", "8")
    assert code == 2
    assert "mpt-7b has layernorm without bias (llm.c: LayerNorm with bias)" in err
