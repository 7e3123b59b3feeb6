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
    # the peft count is ~31x the dense rule on this model; the fused (non-hf) path keeps the dense rule
    assert _trained_params(_case(spec), hf) > 20 * spec.num_layers * lora_params_per_layer(spec, 16)
    assert _trained_params(_case(spec), fused) == pytest.approx(spec.num_layers * lora_params_per_layer(spec, 16))
