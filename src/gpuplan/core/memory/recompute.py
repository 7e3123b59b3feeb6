"""The forward work activation recomputation re-runs during backward, per framework setting.

* ``full``: every layer's forward again (Korthikanti et al. 2022, Sec. 5). Megatron-Core's block
  method with ``--recompute-num-layers N`` (``recompute_layers``) checkpoints only the first N
  layers of each virtual pipeline chunk (``transformer_block.py`` ``_checkpointed_forward``,
  ``recompute_method == 'block'``: ``layer_idx < recompute_num_layers``), so a share min(N, chunk) /
  chunk of the stage's layers runs twice; the uniform method checkpoints every layer.
* ``selective`` as Megatron-Core's ``--recompute-modules`` (``transformer_config.py``, core 0.14-0.19:
  "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"; with none
  given, ["core_attn"]): each module's forward again.

  - ``core_attn``: the attention core (``CheckpointWithoutOutput`` is not used: normal checkpoint).
  - ``moe_act``: the routed experts' activation (``TEGroupedMLP.bias_act_func``): reads the first
    linear's output (2 x expert width) and writes the activation (1 x width), 2 B each, per routed
    row, plus the eager clamp where the model has one (core.time.eager_fallbacks, forward 8 B per element).
  - ``layernorm``: the norms that are modules of their own. Transformer Engine fuses the pre-attention
    norm into the QKV linear (``TELayerNormColumnParallelLinear``) and the dense layers' pre-MLP norm
    into fc1; MoE layers keep ``pre_mlp_layernorm = TENorm`` and multi-latent attention keeps
    ``input_layernorm = TENorm`` (``gpt_layer_specs.py``). One norm forward reads and writes the
    hidden state: 4 B per hidden element.
  - ``mla_up_proj``: the query and key/value up-projections of multi-latent attention and the RoPE
    applied after them (``multi_latent_attention.py``): their matmuls again.
  - ``mlp``: the dense layers' MLP (matmuls and activation); ``shared_experts``: the shared expert's
    matmuls; ``moe``: the whole MoE block's matmuls and activation (its all-to-alls run again too,
    which this module does not charge).

torchtitan's op-level SAC (``selective`` under ``--framework torchtitan``) re-runs every other matmul
and the forward's elementwise work (op_sac_recomputed_share; which matmuls depends on whether q, k, v
are one linear: StepSettings.op_sac_fused_qkv, core.frameworks.op_sac_fused_qkv).

Memory: ``moe_act``, ``layernorm`` and ``mla_up_proj`` use output-discarding checkpoints
(``CheckpointWithoutOutput``: the module runs without autograd and its output is freed once the
next op has saved it), the others normal checkpoints (the module's input is kept, nothing inside).
What each frees per token, on top of the ``megatron`` implementation's count (core.memory.activations):

- ``moe_act``: per routed row the activation output (c·i) and, with the eager clamp, the clamped
  copy the fused activation saves (2·c·i): the checkpoint keeps only its input, the fc1 output;
- ``layernorm``: each standalone norm's output (c·h);
- ``mla_up_proj``: q, k and v after the up-projections and RoPE (c per element);
- ``mlp``: a dense layer's MLP (its gate/up output, product and normalised input: the TE norm is
  inside fc1); ``shared_experts``: the shared expert's MLP; ``moe``: the whole MoE block;
- ``core_attn``: only an unfused attention's s x s tensors (a flash kernel saves nothing more).

Units: seconds per token of the stage's mean layer on one GPU (time); bytes per token of one
layer (memory).
"""

from __future__ import annotations

from dataclasses import dataclass


from gpuplan.core.model import flops as F
from gpuplan.core.time.eager_fallbacks import EAGER_GLU_CLAMP_FORWARD_BYTES_PER_ELEMENT
from gpuplan.core.model.spec import ModelSpec, expert_matrix_params, mlp_params

MEGATRON_RECOMPUTE_MODULES = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")
NORM_FORWARD_BYTES_PER_ELEMENT = 4.0
"""A norm's forward reads and writes the 16-bit hidden state."""
ACTIVATION_FORWARD_BYTES_PER_ELEMENT = 6.0
"""A gated activation's forward per element of its output: reads two 16-bit inputs, writes one."""


@dataclass(frozen=True)
class ForwardRates:
    """What one layer's forward parts cost on one GPU (core.time.step.microbatch_compute_time)."""

    seconds_per_gemm_flop: float
    """The dense linears' seconds per FLOP (1 / (peak x GEMM efficiency))."""
    routed_experts: float
    """Seconds per token of the mean layer's routed-expert matmuls."""
    attention_core: float
    """Seconds per token of the mean layer's attention core."""
    bytes_per_second: float
    """Achievable HBM bandwidth for the elementwise work."""
    tp: int = 1
    clamped_glu: bool = False
    """The eager activation clamp is taken (core.time.eager_fallbacks 'clamped-glu')."""


def mla_up_projection_weights(spec: ModelSpec) -> int:
    """Weights of multi-latent attention's query and key/value up-projections (0 without MLA)."""
    a = spec.attention
    if not a.is_mla:
        return 0
    q_up = a.q_lora_rank * a.num_heads * a.qk_head_dim if a.q_lora_rank else 0
    return q_up + a.kv_lora_rank * a.num_heads * (a.qk_nope_head_dim + a.v_head_dim)


def _moe_share(spec: ModelSpec) -> float:
    """Share of the layers that are MoE layers (0 for a dense model)."""
    return spec.num_moe_layers / spec.num_layers if spec.moe is not None else 0.0


def module_applies(spec: ModelSpec, module: str) -> bool:
    """Whether the model has the part a Megatron recompute module names (``core_attn`` and
    ``layernorm`` always; ``moe_act`` / ``moe`` routed experts; ``shared_experts`` a shared expert;
    ``mla_up_proj`` multi-latent attention; ``mlp`` dense MLP layers)."""
    moe = spec.moe
    return {"core_attn": True, "layernorm": True, "moe_act": moe is not None, "moe": moe is not None,
            "shared_experts": moe is not None and bool(moe.shared_intermediate_size),
            "mla_up_proj": spec.attention.is_mla, "mlp": spec.num_dense_layers > 0}[module]


def effective_modules(modules) -> tuple[str, ...]:
    """The modules that run again: ``moe`` re-runs the whole MoE block, so ``moe_act`` and
    ``shared_experts`` beside it add nothing (none given: Megatron's default ["core_attn"])."""
    modules = tuple(modules or ("core_attn",))
    if "moe" in modules:
        return tuple(m for m in modules if m not in ("moe_act", "shared_experts"))
    return modules


def module_matmul_weights(spec: ModelSpec, module: str) -> float:
    """Matmul weights per token of the mean layer that recomputing ``module`` runs again, the
    routed experts excluded (``moe``: the router and the shared expert; core_attn, moe_act and
    layernorm have no matmuls with weights)."""
    h, moe = spec.hidden_size, spec.moe
    moe_share = _moe_share(spec)
    if module == "mla_up_proj":
        return float(mla_up_projection_weights(spec))
    if module == "mlp":
        return (1.0 - moe_share) * mlp_params(spec.mlp.intermediate_size, h, spec.mlp.gated)
    if module == "shared_experts" and moe is not None:
        return moe_share * mlp_params(moe.shared_intermediate_size, h, gated=True)
    if module == "moe" and moe is not None:
        return moe_share * (h * moe.num_experts + mlp_params(moe.shared_intermediate_size, h, gated=True))
    return 0.0


def _standalone_norms_per_layer(spec: ModelSpec) -> float:
    """Norms of the mean layer that are modules of their own under Transformer Engine."""
    return _moe_share(spec) + (1.0 if spec.attention.is_mla else 0.0)


def module_forward_seconds_per_token(spec: ModelSpec, module: str, rates: ForwardRates) -> float:
    """Forward seconds per token of the mean layer that recomputing ``module`` repeats."""
    if module not in MEGATRON_RECOMPUTE_MODULES:
        raise ValueError(f"recompute module {module!r}: one of {', '.join(MEGATRON_RECOMPUTE_MODULES)}")
    h, tp, moe = spec.hidden_size, rates.tp, spec.moe
    moe_share = _moe_share(spec)
    seconds = module_matmul_weights(spec, module) * 2.0 * rates.seconds_per_gemm_flop / tp
    activation = 0.0
    if moe is not None:  # per element of a routed row's activation output (its fc1 output is twice as wide)
        clamp = rates.clamped_glu and moe.activation_clamp is not None
        per_element = ACTIVATION_FORWARD_BYTES_PER_ELEMENT + clamp * 2 * EAGER_GLU_CLAMP_FORWARD_BYTES_PER_ELEMENT
        activation = moe_share * moe.experts_per_token * moe.expert_intermediate_size * per_element / tp \
            / rates.bytes_per_second
    if module == "core_attn":
        seconds += rates.attention_core
    elif module == "moe_act":
        seconds += activation
    elif module == "layernorm":
        seconds += _standalone_norms_per_layer(spec) * NORM_FORWARD_BYTES_PER_ELEMENT * h / tp / rates.bytes_per_second
    elif module == "mlp":
        width = spec.mlp.intermediate_size * ACTIVATION_FORWARD_BYTES_PER_ELEMENT / tp / rates.bytes_per_second
        seconds += (1.0 - moe_share) * width
    elif module == "moe" and moe is not None:
        seconds += rates.routed_experts + activation
    return seconds


def block_recompute_share(recompute_layers: int, stage_layers, vpp):
    """Share of a stage's layers that Megatron's block method recomputes in full: the first
    ``recompute_layers`` of each of its ``vpp`` chunks (arrays broadcast)."""
    import numpy as np  # lazily: the CLI's option vocabulary imports this module

    chunk = np.maximum(np.asarray(stage_layers, dtype=float) / vpp, 1e-9)
    return np.minimum(float(recompute_layers), chunk) / chunk


def full_recompute_share(settings, stage_layers, vpp=1):
    """Share of a stage's layers whose forward ``settings`` re-run in full in backward: 1 under full recompute of every
    layer, block_recompute_share with Megatron's recompute_layers, 0 without full recompute (arrays broadcast)."""
    if settings.recompute != "full":
        return 0.0
    if settings.recompute_layers is None:
        return 1.0
    return block_recompute_share(settings.recompute_layers, stage_layers, vpp)


def op_sac_recomputed_share(spec: ModelSpec, fused_qkv: bool = True) -> float:
    """Share of a layer's forward matmul FLOPs that torchtitan's op-level SAC re-runs in backward:
    the matmuls in even forward positions (``meta[mm_count_key] % 2 == 0``: the odd ones' outputs
    are saved; parallelisms/parallelize_llama.py@9dec370 L253-258, distributed/activation_checkpoint.py
    @b5bcd76 L258-272), in the order wq, wk, wv (or one wqkv), wo, w1, w3, w2. ``fused_qkv``
    (core.frameworks.op_sac_fused_qkv): with one wqkv, wo and w3 (Llama-3-8B 34.6%, Llama-2-13B
    30.6%); with three, wk, wo and w3 (36.5%, 38.8%)."""
    h, a = spec.hidden_size, spec.attention
    i = spec.mlp.intermediate_size
    q, k, v = (h * a.num_heads * a.qk_head_dim, h * a.num_kv_heads * a.qk_head_dim,
               h * a.num_kv_heads * a.value_head_dim)
    wo = a.num_heads * a.value_head_dim * h
    mlp = [h * i] * (2 if spec.mlp.gated else 1) + [i * h]
    flops = ([q + k + v] if fused_qkv else [q, k, v]) + [wo, *mlp]
    return sum(flops[1::2]) / sum(flops)


def recompute_seconds_per_token(spec: ModelSpec, settings, rates: ForwardRates, *, forward, matmuls, elementwise,
                                stage_layers, vpp=1):
    """Seconds per token of the stage's mean layer that ``settings`` (core.time.step.StepSettings:
    recompute, recompute_layers, recompute_modules, selective) add to backward. ``forward``,
    ``matmuls``, ``elementwise``: the mean layer's forward, its matmuls' and its elementwise work's
    seconds per token."""
    from gpuplan.core.time import llmc_ops  # on use: it imports numpy; the option vocabulary imports this module

    if settings.recompute == "full":
        return forward * full_recompute_share(settings, stage_layers, vpp)
    if settings.recompute != "selective" or llmc_ops.runs(settings):
        return 0.0  # llm.c's -r 1 re-runs GELU alone: core.time.llmc_ops counts that kernel
    if settings.selective == "op-sac":
        fused = spec.fused_qkv if settings.op_sac_fused_qkv is None else settings.op_sac_fused_qkv
        return op_sac_recomputed_share(spec, fused) * matmuls + elementwise / 3
    return sum(module_forward_seconds_per_token(spec, m, rates) for m in effective_modules(settings.recompute_modules))


def discarded_bytes_per_token(spec: ModelSpec, modules, c: int = 2, capacity_factor: float = 1.0,
                              linear_input_bytes: float | None = None,
                              keeps_expert_output: bool = False) -> tuple[float, float]:
    """(dense layer, MoE layer) bytes per token that Megatron's ``--recompute-modules`` free from
    what the ``megatron`` implementation saves (before tensor parallelism; ``linear_input_bytes``,
    ``keeps_expert_output``: core.memory.activations.layer_activations')."""
    from gpuplan.core.memory import activations as A  # on use: it imports numpy; the option vocabulary imports this module

    h, a, moe = spec.hidden_size, spec.attention, spec.moe
    dense = routed = 0.0
    if "layernorm" in modules:  # MLA keeps input_layernorm standalone; MoE layers pre_mlp_layernorm
        dense += c * h * a.is_mla
        routed += c * h * (1 + a.is_mla)
    if "mla_up_proj" in modules and a.is_mla:
        qkv = c * a.num_heads * (2 * a.qk_head_dim + a.value_head_dim)
        dense, routed = dense + qkv, routed + qkv
    if "mlp" in modules:
        dense += A.mlp_bytes(spec, spec.mlp.intermediate_size, "megatron", c, linear_input_bytes) \
            + (c if linear_input_bytes is None else linear_input_bytes) * h
    if moe is not None:
        if "moe" in modules:
            routed += A.moe_bytes(spec, "megatron", c, capacity_factor, linear_input_bytes, keeps_expert_output)
        else:
            if "moe_act" in modules:
                clamp = A.clamped_glu_extra_bytes(spec, "megatron", c)
                product = c if linear_input_bytes is None else linear_input_bytes  # fc2's (quantised) input
                per_row = product * moe.expert_intermediate_size + clamp  # the product; the clamped copy
                routed += capacity_factor * moe.experts_per_token * per_row
            if "shared_experts" in modules and moe.shared_intermediate_size:
                routed += A.mlp_bytes(spec, moe.shared_intermediate_size, "megatron", c, linear_input_bytes)
    return dense, routed


def recomputed_forward_flops_per_token(spec: ModelSpec, seq_len, mode: str, modules=()) -> float:
    """Forward FLOPs per token (all layers, 'full' attention convention) a recompute mode re-runs:
    'full' every layer (scale by block_recompute_share for --recompute-layers), 'selective' the
    attention core or, given Megatron modules, their matmuls (moe_act and layernorm are elementwise)."""
    attention = F.attention_core_flops_per_token(spec, seq_len, "full")
    if mode == "full":
        return 2.0 * F.layer_matmul_weights_per_token(spec) + attention
    if mode != "selective":
        return 0.0
    modules = effective_modules(modules)
    flops = attention if "core_attn" in modules else 0.0
    flops += 2.0 * spec.num_layers * sum(module_matmul_weights(spec, m) for m in modules)
    if "moe" in modules and spec.moe is not None:  # the routed experts (module_matmul_weights leaves them out)
        flops += 2.0 * spec.num_moe_layers * spec.moe.experts_per_token * expert_matrix_params(spec.moe, spec.hidden_size)
    return flops


def recompute_label(mode: str, modules=(), layers: int | None = None) -> str:
    """How a report names the recompute setting: 'selective (moe_act, layernorm)', 'full (first 2
    layers of each virtual chunk)', or the mode alone."""
    if mode == "selective" and modules:
        return f"selective ({', '.join(modules)})"
    if mode == "full" and layers is not None:
        return f"full (first {layers} layer{'s' if layers > 1 else ''} of each virtual chunk)"
    return mode
