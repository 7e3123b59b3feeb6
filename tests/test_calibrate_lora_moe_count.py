"""calibrate's trial prediction counts LoRA adapters with the one rule the step and memory models share
(core.model.finetune.lora_params): on a MoE model under hf's eager ops that is peft 0.21's count, which adapts
the 3-D expert weights (20,760,576 a Qwen3-30B-A3B layer at r 16, tests/test_lora_moe_memory.py), not the
dense r·(in + out) rule (0.67 M a layer)."""

from types import SimpleNamespace

import pytest

from gpuplan.calibrate.predict import _trained_params
from gpuplan.core.model.finetune import lora_params, lora_params_per_layer
from gpuplan.catalog import load_model


def _case(spec):
    return SimpleNamespace(spec=spec, layout=SimpleNamespace(dp=1, zero=0))


def test_hf_trial_counts_peft_adapters_on_a_moe_model():
    spec = load_model("qwen3-30b-a3b")
    hf = SimpleNamespace(finetune="lora", lora_rank=16, eager_ops=object())
    fused = SimpleNamespace(finetune="lora", lora_rank=16, eager_ops=None)
    assert _trained_params(_case(spec), hf) == pytest.approx(lora_params(spec, 16, peft_experts=True), rel=1e-12)
    # by hand (review w9 N3; core.model.finetune.peft_moe_layer_params' rule), from the config's hidden 2048, 32 / 4
    # heads of 128, 128 experts of 768, no shared expert, 48 MoE layers, r 16:
    #   attention r·Σ(in + out) = 16 · ((2048+4096) + 2·(2048+512) + (4096+2048)) = 16 · 17,408   =    278,528
    #   router (a folded 2-D parameter) 16 · (2048 + 128)                                         =     34,816
    #   experts' gate_up at 2r: 128 · 2·16 · (2048 + 2·768)                                       = 14,680,064
    #   experts' down: 128 · 16 · (768 + 2048)                                                    =  5,767,168
    #   a layer 20,760,576 (peft's own count: tests/test_hf_families_moe.py); 48 layers           = 996,507,648
    a, m = spec.attention, spec.moe
    assert (spec.hidden_size, a.num_heads, a.num_kv_heads, a.qk_head_dim, m.num_experts, m.expert_intermediate_size,
            m.shared_intermediate_size, spec.num_moe_layers) == (2048, 32, 4, 128, 128, 768, 0, 48)
    assert _trained_params(_case(spec), hf) == 996_507_648
    # the peft count is ~31x the dense rule on this model; the fused (non-hf) path keeps the dense rule
    assert _trained_params(_case(spec), hf) > 20 * spec.num_layers * lora_params_per_layer(spec, 16)
    assert _trained_params(_case(spec), fused) == pytest.approx(spec.num_layers * lora_params_per_layer(spec, 16))
