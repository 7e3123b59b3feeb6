"""Multi-token prediction (MTP) in training: what the MTP modules add to the last pipeline stage.

DeepSeek-V3 (arXiv:2412.19437, Sec. 2.2) trains D sequential MTP modules after the main model;
module k holds two RMSNorms (of the previous hidden state and of the shifted token's embedding),
a projection of their concatenation (2h -> h), one Transformer block, and shares the embedding
and the output head with the main model. Megatron-Core builds it so
(megatron/core/transformer/multi_token_prediction.py, MultiTokenPredictionLayer: enorm, hnorm,
eh_proj, transformer_layer, final_layernorm; logits through the shared output_layer and a loss of
its own) on the last pipeline stage, which then also builds a word-embedding copy
(megatron/core/models/gpt/gpt_model.py: ``if self.pre_process or self.mtp_process:
self.embedding = LanguageModelEmbedding(...)``).

Which frameworks train it (``FrameworkProfile.trains_mtp``): Megatron-Bridge reads the config's
``num_nextn_predict_layers`` into ``mtp_num_layers`` (models/deepseek/deepseek_v3_bridge.py
@v0.4.2:L91) and its DeepSeek-V3 recipes set 1 (recipes/deepseek/deepseek_v3.py@v0.4.2:L84, 234);
torchtitan 0.3.0's DeepSeek-V3 flavours build none (models/deepseek_v3/__init__.py:
num_mtp_layers=0; only the debug ``deepseek_v3_debugmodel_mtp`` config sets 1); transformers'
DeepseekV3ForCausalLM drops the MTP weights (modeling_deepseek_v3.py,
``_keys_to_ignore_on_load_unexpected = [r"model\\.layers\\.61.*"]``).

The pipeline balances it: the MTP stage gives up decoder layers to the others, as
Megatron-Bridge's DeepSeek-V3 layouts do by hand (recipes/deepseek/deepseek_v3.py@v0.4.2
set_deepseek_v3_pipeline_model_parallel_layout: the last virtual stage holds [decoder, mtp, loss]
where the others hold 4 decoders; scripts/performance/configs/deepseek/
deepseek_workload_base_configs.py@v0.4.2 pp_layout "Et*4|(t*4|)*14tmL" for GB300 pp 2 vpp 8).
gpuplan counts each MTP module as round(its matmul work / the mean layer's) layer slots, 3 for
DeepSeek-V3, and splits layers + slots evenly (core.memory.model_states.stage_span): 16/16/16/13 at pp 4,
32/29 at pp 2, 8 x 7 + 5 at pp 8, 4 x 15 + 1 at pp 16 — those layouts' splits.
Units: parameters (counts), matmul weights per token (counts), layers.
"""

from __future__ import annotations

from gpuplan.core.model.spec import (
    ModelSpec,
    attention_params,
    expert_params,
    mlp_params,
    norm_params,
)

MTP_SOURCE = ("on the last pipeline stage: one block, the 2h -> h projection and the LM head again, with its own "
              "logits and loss; the embedding copy when pp > 1 (DeepSeek-V3 report Sec. 2.2; Megatron-Core "
              "multi_token_prediction.py; core/model/mtp.py)")
MTP_EXTRA_NORMS = 3
"""enorm, hnorm and the module's final_layernorm (multi_token_prediction.py)."""


def trained_mtp_layers(spec: ModelSpec, trains_mtp: bool, given: int | None = None) -> int:
    """MTP modules a training run computes: ``given`` (--mtp-layers) when set, else the config's
    when the framework trains them (``trains_mtp``), else 0."""
    if given is not None:
        return given
    return spec.mtp_layers if trains_mtp else 0


def mtp_block_is_moe(spec: ModelSpec) -> bool:
    """The MTP Transformer block repeats the last layer's kind (DeepSeek-V3: an MoE layer)."""
    return bool(spec.moe is not None and spec.moe_layers and spec.moe_layers[-1])


def mtp_module_params(spec: ModelSpec, tp=1, expert_split=1) -> tuple[object, object]:
    """(dense, routed-expert) parameters of one MTP module on one GPU after TP / EP division (``expert_split``:
    ep x etp, core.memory.model_states.expert_split), the shared embedding and head excluded."""
    h = spec.hidden_size
    dense = attention_params(spec.attention, h) / tp + 2 * h * h / tp \
        + (spec.norms_per_layer + MTP_EXTRA_NORMS) * norm_params(spec, h)
    experts = 0.0
    if mtp_block_is_moe(spec):
        moe = spec.moe
        dense = dense + mlp_params(moe.shared_intermediate_size, h, True) / tp + h * moe.num_experts
        experts = moe.num_experts * expert_params(moe, h) / expert_split
    else:
        dense = dense + mlp_params(spec.mlp.intermediate_size, h, spec.mlp.gated, spec.mlp.bias) / tp
    return dense, experts


def mtp_module_matmul_weights(spec: ModelSpec) -> float:
    """Matmul weights one token passes through in one MTP module: the projection, the block
    (MoE: router, top-k and shared experts) and the shared output head run again."""
    from gpuplan.core.model.flops import (
        attention_matmul_weights,
        mlp_matmul_weights_per_token,
    )

    h = spec.hidden_size
    block = attention_matmul_weights(spec.attention, h) + mlp_matmul_weights_per_token(spec, mtp_block_is_moe(spec))
    return 2 * h * h + block + spec.vocab_size * h


def mtp_stage_layer_shed(spec: ModelSpec, mtp: int) -> int:
    """Layer slots the MTP modules take on the last pipeline stage (core.memory.model_states.stage_span)."""
    if mtp <= 0:
        return 0
    from gpuplan.core.model.flops import layer_matmul_weights_per_token

    mean_layer = layer_matmul_weights_per_token(spec) / spec.num_layers
    return round(mtp * mtp_module_matmul_weights(spec) / mean_layer)
