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


def test_transformers_5x_picks_grouped_mm_by_default():
    """Runs against the installed transformers (5.25 in the project's .venv, not the H200 runs' 5.17): any 5.x
    with the experts interface picks grouped_mm for a config that asks for nothing. 5.17's own line, read in
    its wheel, is the same: modeling_utils.py@5.17.0 L1883 ``applicable_experts = "grouped_mm" if
    requested_experts is None else requested_experts`` (docs/step.md); this test does not read 5.17."""
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


def test_peft_adapts_the_experts_of_a_moe_layer():
    """peft 0.21's "all-linear" on transformers 5.17's Qwen3-MoE layer (printed from get_peft_model on the meta
    device, r 16): q (16x2048, 4096x16), k and v (16x2048, 512x16), o (16x4096, 2048x16), the router (16x2048,
    128x16), the experts' gate_up_proj (4096x2048, 1536x4096: 128 experts x rank 32) and down_proj (2048x768,
    2048x2048: rank 16) = 278,528 + 34,816 + 14,680,064 + 5,767,168 = 20,760,576 trained parameters. The dense
    count (core.model.finetune) would put adapters on a 6,144-wide MLP the layer does not run."""
    from gpuplan.core.model.finetune import lora_params_per_layer
    from gpuplan.core.time.op_profile import adapter_params, layer_features

    spec = resolve_model("qwen3-30b-a3b")
    assert adapter_params(spec, 16, moe_layer=True) == 278_528 + 34_816 + 14_680_064 + 5_767_168 == 20_760_576
    assert adapter_params(spec, 16) == lora_params_per_layer(spec, 16)  # dense layers: unchanged
    assert layer_features(spec, 4096, 4096, 16, moe_layer=True)["R"] == 20_760_576


def test_lora_on_experts_folds_them_every_step():
    """peft's fold W' = baddbmm(W, B, A) per expert (Qwen3-30B-A3B layer, 4,096 tokens, r 16, bf16 on the H200,
    each GEMM max(compute at MAMF x d/(d+512), operands at 0.89 x HBM + 7.84 us)): forward gate_up (128 x 1536 x
    32 x 2048, bound by its 834.7 MB of operands, 0.2032 ms, + reading W 805.3 MB, 0.1885 ms) + down (0.1991 ms)
    = 0.5908 ms, run twice (torch's register_parametrization evaluates it once to check it) = 1.1816 ms;
    backward: the experts' weight gradient (1.1677 ms, as full fine-tuning's) and the fold's two batched GEMMs
    over it (0.6160 ms) = 1.7837 ms."""
    from dataclasses import replace

    spec = resolve_model("qwen3-30b-a3b")
    run = replace(_run(spec, "bf16", 2.0), lora_rank=16)
    fwd, bwd = E.expert_lora_seconds(G.layer_linears(spec, moe_layer=True), run, 4096)
    assert fwd == pytest.approx(1.1816e-3, rel=1e-3) and bwd == pytest.approx(1.7837e-3, rel=1e-3)
    assert E.expert_lora_seconds(G.layer_linears(resolve_model("llama-3.2-1b")), run, 4096) == (0.0, 0.0)
    # through the step: the layer's LoRA matmuls no longer carry adapters on a dense MLP it does not have
    f, b = E.microbatch(spec, run, 4096, 1, head=0.0)
    base = G.layer_linears(spec, moe_layer=True)
    f0, b0 = G.linears_seconds(base, 4096, E._rates(run, run.peak, 2.0), weight_grads=False)
    attn = [x for lin in base[:4] for x in (G.Linear("a", lin.inputs, 16), G.Linear("b", 16, lin.outputs))]
    fa, ba = G.linears_seconds(attn, 4096, E._rates(run, run.fp32_peak, 4.0), weight_grads=True)
    assert f.gemm == pytest.approx(f0 + fa + 1.1816e-3, rel=1e-3)
    assert b.gemm == pytest.approx(b0 + ba + 1.7837e-3, rel=1e-3)


def test_lora_moe_optimizer_walks_peft_expert_adapters():
    """The optimizer step of a LoRA run on a MoE model updates peft's adapters (20,760,576 a Qwen3-30B-A3B
    layer at r 16, above): the step's trained count (core.model.finetune.lora_params via
    core.time.trained_params.trained_params_per_gpu, the one the DP gradient bytes use too) is 48 x 20,760,576 under
    --framework hf (eager ops), the dense rule's 48 x 671,744 otherwise."""
    from gpuplan.core.time.eager_path import eager_optimizer_seconds
    from gpuplan.core.time.trained_params import trained_params_per_gpu

    spec = resolve_model("qwen3-30b-a3b")
    ops = eager_ops_for(spec.model_type, "bf16", "lora", "flash")
    settings = StepSettings(seq_len=4096, eager_ops=ops, finetune="lora", lora_rank=16)
    assert trained_params_per_gpu(spec, settings, 1, 1) == 48 * 20_760_576
    assert trained_params_per_gpu(spec, StepSettings(seq_len=4096, finetune="lora", lora_rank=16), 1, 1) == 48 * 671_744
    cluster = cluster_for(H200, None, None)
    got = eager_optimizer_seconds(spec, cluster, settings, trained=trained_params_per_gpu(spec, settings, 1, 1), pp=1)
    run = eager_run(spec, cluster, settings)
    want = E.optimizer_step(run, spec.num_layers * 20_760_576, E.trained_tensors(spec, 16, spec.num_layers)).wall
    assert got == pytest.approx(want, rel=1e-12)


def test_peft_activation_is_host_time_of_a_lora_moe_layer(monkeypatch):
    """peft 0.21 registers and removes the experts' and router's parametrizations each forward: 2 x 171 + 122 =
    464 us of the measuring CPU's Python a MoE layer (E.PEFT_ACTIVATION_CPU_SECONDS), carried to the H200's
    host at r = reference_scale().python; full recompute runs it again in the backward. 4 layers."""
    from dataclasses import replace

    from gpuplan.core.time.host import reference_scale

    spec = resolve_model("qwen3-30b-a3b")
    run = replace(_run(spec, "bf16", 2.0, 512), lora_rank=16)
    f1, b1 = E.microbatch(spec, run, 512, 4, head=0.0)
    monkeypatch.setattr(E, "PEFT_ACTIVATION_CPU_SECONDS", {"expert": 0.0, "router": 0.0})
    f0, b0 = E.microbatch(spec, run, 512, 4, head=0.0)
    r = reference_scale().python
    assert f1.host - f0.host == pytest.approx(4 * 464e-6 * r, rel=1e-6) and b1.host == b0.host
    full = replace(run, recompute="full")
    _, bf0 = E.microbatch(spec, full, 512, 4, head=0.0)
    monkeypatch.undo()
    _, bf1 = E.microbatch(spec, full, 512, 4, head=0.0)
    assert bf1.host - bf0.host == pytest.approx(4 * 464e-6 * r, rel=1e-6)
