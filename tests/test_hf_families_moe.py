"""MoE families under --framework hf (Qwen3-MoE, Mixtral) as transformers 5.17.0 runs them, the release the
H200 measurements used: the experts implementation transformers picks, and what an amp run's experts cost.

transformers 5.17 runs a MoE layer's experts with ``experts_implementation="grouped_mm"`` unless asked otherwise
(modeling_utils.py@5.17.0 L1883: ``"grouped_mm" if requested_experts is None``): the tokens sorted by expert, one
grouped GEMM per projection (integrations/moe.py@5.17.0 grouped_mm_experts_forward L377-480). The step times
them as one grouped launch in bf16; under amp the weights are fp32, transformers casts the tokens to them (L332)
and torch's CUDA _grouped_mm runs fp32 on its per-group fallback: one fp32 mm per expert (eager_step.fp32_expert_loop).
"""

from __future__ import annotations

import pytest

from gpuplan.adapters.resolve import resolve_gpu, resolve_model
from gpuplan.catalog.op_profiles import eager_ops_for
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time import eager_step as E
from gpuplan.core.time import linears as G
from gpuplan.core.time.eager_path import eager_run
from gpuplan.core.time.step import StepSettings

H200 = resolve_gpu("h200")


def _run(spec, recipe: str, param_bytes: float, seq_len: int = 4096):
    ops = eager_ops_for(spec.model_type, recipe, "full", "flash")
    settings = StepSettings(seq_len=seq_len, eager_ops=ops, param_bytes=param_bytes)
    return eager_run(spec, cluster_for(H200, None, None), settings)


def test_amp_experts_run_fp32_one_gemm_per_expert():
    """Qwen3-30B-A3B, one MoE layer, 4,096 tokens: each of the 128 experts gets 4,096 x 8 / 128 = 256 rows.
    gate_up (256 x 2048 x 1536) in fp32 on the H200 (67 TFLOP/s, MAMF 0.803 x 256 / (256 + 512)):
    2 x 256 x 2048 x 1536 / (67e12 x 0.26767) = 89.81 us per expert; down (256 x 768 x 2048): 44.91 us;
    x 128 experts = 17.24 ms forward. As one bf16 grouped GEMM they took 128 x (1.611 + 0.805) GFLOP /
    (989.4e12 x 0.26767) = 1.168 ms: amp's experts are 14.8x slower (the fp32 / bf16 peaks at the same shape)."""
    spec = resolve_model("qwen3-30b-a3b")
    amp, bf16 = _run(spec, "amp", 4.0), _run(spec, "bf16", 2.0)
    experts = [lin for lin in G.layer_linears(spec, moe_layer=True) if lin.groups > 1]
    fwd_amp, _ = E._base_matmuls(experts, amp, 4096, weight_grads=True)
    fwd_bf16, _ = E._base_matmuls(experts, bf16, 4096, weight_grads=True)
    eff = 0.803 * 256 / (256 + 512)
    by_hand = 128 * (2 * 256 * 2048 * 1536 + 2 * 256 * 768 * 2048) / (67e12 * eff)
    assert fwd_amp == pytest.approx(by_hand, rel=1e-3) and by_hand == pytest.approx(17.24e-3, rel=1e-3)
    assert fwd_bf16 == pytest.approx(128 * (2 * 256 * 2048 * 1536 + 2 * 256 * 768 * 2048) / (989.4e12 * eff), rel=1e-3)


def test_amp_leaves_dense_layers_and_bf16_moe_alone():
    """Only routed experts change: a dense model's amp matmuls and a MoE model's bf16 ones are as before."""
    llama = resolve_model("llama-3.2-1b")
    base = G.layer_linears(llama)
    run = _run(llama, "amp", 4.0, 2048)
    assert E._base_matmuls(base, run, 4096, True) == G.linears_seconds(base, 4096, E._rates(run, run.peak, 2.0),
                                                                       weight_grads=True)
    assert E.fp32_expert_loop(base) == base
    spec = resolve_model("mixtral-8x7b")
    moe = G.layer_linears(spec, moe_layer=True)
    run = _run(spec, "bf16", 2.0)
    assert E._base_matmuls(moe, run, 4096, True) == G.linears_seconds(moe, 4096, E._rates(run, run.peak, 2.0),
                                                                      weight_grads=True)
    looped = E.fp32_expert_loop(moe)
    assert [(lin.count, lin.groups) for lin in looped if "experts" in lin.name] == [(8.0, 1.0), (8.0, 1.0)]


def test_transformers_517_picks_grouped_mm_by_default():
    """Read from the installed transformers where it is 5.17 (the H200 stack); any 5.x with the experts
    interface picks grouped_mm for a config that asks for nothing."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    if not hasattr(transformers.PreTrainedModel, "get_correct_experts_implementation"):
        pytest.skip("transformers without the experts interface")
    cfg = transformers.Qwen3MoeConfig(hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
                                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                      head_dim=32, num_experts=4, num_experts_per_tok=2, vocab_size=128)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    assert model.config._experts_implementation == "grouped_mm"


def test_amp_moe_step_charges_the_fp32_experts():
    """Through the step's own entry (one layer, no LM head, 4,096 tokens): amp's forward matmuls exceed bf16's
    by the experts' fp32 loop less their bf16 grouped GEMM, 17.24 - 1.168 = 16.07 ms (hand-worked above); the
    backward (input and weight gradients) by twice that."""
    spec = resolve_model("qwen3-30b-a3b")
    f_amp, b_amp = E.microbatch(spec, _run(spec, "amp", 4.0), 4096, 1, head=0.0)
    f_bf16, b_bf16 = E.microbatch(spec, _run(spec, "bf16", 2.0), 4096, 1, head=0.0)
    assert f_amp.gemm - f_bf16.gemm == pytest.approx(16.07e-3, rel=2e-3)
    assert b_amp.gemm - b_bf16.gemm == pytest.approx(2 * 16.07e-3, rel=2e-3)

