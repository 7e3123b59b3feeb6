"""adapters/class_shapes.py: the one table of config-class defaults (CLASS_DEFAULTS) against the installed
transformers classes, and DeepSeek-V2's expert widths read as DeepseekV2Config builds them."""

from __future__ import annotations

import pytest

from gpuplan.adapters.class_shapes import CLASS_DEFAULTS

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite


@pytest.mark.parametrize("model_type, field, default", [
    (model_type, field, default) for model_type, (_, defaults) in CLASS_DEFAULTS.items()
    for field, default in defaults.items()])
def test_each_class_default_is_the_installed_classes(model_type, field, default):
    """Every default of CLASS_DEFAULTS (K/V heads, head_dim, expert widths, DeepSeek's MLA, positions) is what the
    named config class builds with no arguments (merged from test_hostile_w24b's K/V heads / head_dim and MLA tests
    and test_hostile_w25_mend's positions test: GPT-2 / GPTBigCode 1,024 n_positions, MPT / DBRX 2,048 max_seq_len,
    DeepseekV2Config / DeepseekV3Config kv_lora_rank 512, q_lora_rank 1,536, qk_nope 128, qk_rope 64, v_head 128)."""
    transformers = pytest.importorskip("transformers")
    name = CLASS_DEFAULTS[model_type][0]
    built = getattr(transformers, name)()
    assert (type(built).__name__, getattr(built, field)) == (name, default)


# The official deepseek-ai/DeepSeek-V2-Lite config.json (the catalog's deepseek-v2-lite entry; config_source
# mlc-llm model_preset.py, preset deepseek_v2_lite): hidden_size 2,048, num_hidden_layers 27 with
# first_k_dense_replace 1 (26 MoE layers), n_routed_experts 64, n_shared_experts 2, moe_intermediate_size 1,408;
# 15,706,484,224 parameters (its published safetensors count, tests/test_hostile_w24c.py test_m3).
V2_LITE_PUBLISHED = 15_706_484_224
V2_LITE_MOE_LAYERS, V2_LITE_HIDDEN, V2_LITE_EXPERTS, V2_LITE_SHARED = 26, 2048, 64, 2


@pytest.mark.parametrize("key, default, width, shared, total", [
    # DeepseekV2Config's moe_intermediate_size 1,407 (configuration_deepseek_v2.py@5.25.0 L116): each MoE layer's 64
    # routed and 2 shared-width gated MLPs (gate, up, down: 3 x hidden x width, no bias; modeling_deepseek_v2.py
    # L125-126, DeepseekV2MoE's shared_experts moe_intermediate_size x n_shared_experts wide) lose one column
    # each: (64 + 2) x 3 x 2,048 = 405,504 a layer, 10,543,104 over 26 layers: 15,706,484,224 - 10,543,104
    ("moe_intermediate_size", "1,407", 1407, 2814, 15_695_941_120),
    # DeepseekV2Config's n_shared_experts 2 (L107): V2-Lite's own, so the count is the published one
    ("n_shared_experts", "2", 1408, 2816, V2_LITE_PUBLISHED)])
def test_a_left_out_deepseek_v2_expert_width_is_read_as_built(key, default, width, shared, total):
    from gpuplan.adapters.hf_config import model_spec_from_hf_config
    from gpuplan.catalog import model_entry
    from gpuplan.core.model.spec import count_parameters

    config = {k: v for k, v in model_entry("deepseek-v2-lite")["config"].items() if k != key}
    assert (config["hidden_size"], config["n_routed_experts"]) == (V2_LITE_HIDDEN, V2_LITE_EXPERTS)
    assert config["num_hidden_layers"] - config["first_k_dense_replace"] == V2_LITE_MOE_LAYERS
    spec = model_spec_from_hf_config(config)
    assert (spec.moe.expert_intermediate_size, spec.moe.shared_intermediate_size) == (width, shared)
    assert spec.moe.num_experts == V2_LITE_EXPERTS
    assert count_parameters(spec).total == total  # the totals worked by hand in the parametrize's comments
    assert f"{key} left out: DeepseekV2Config's default {default}, as transformers builds it" in spec.notes
