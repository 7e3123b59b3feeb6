"""Model states on one GPU: the parameters a pipeline stage holds after TP / EP division, and
their bytes by precision recipe and optimizer after ZeRO/FSDP sharding. Degrees may be Python
numbers or numpy arrays (the planner). Units: parameters (counts) and bytes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuplan.core.model.spec import (
    ModelSpec,
    attention_params,
    expert_params,
    mlp_params,
    norm_params,
)
from gpuplan.core.model.finetune import QLORA_BASE_BYTES, lora_params, peft_counts_experts
from gpuplan.core.model.mtp import mtp_block_is_moe, mtp_module_params, mtp_stage_layer_shed
from gpuplan.core.bulk import scalar_or_array
from gpuplan.core.parallel import ParallelLayout, expert_data_group
from gpuplan.core.precision import OptimizerSpec, PrecisionRecipe


@dataclass(frozen=True)
class StageParams:
    """Parameters held by one GPU of one pipeline stage (after TP / EP division). Numbers, or
    numpy arrays when the layout's degrees are arrays."""

    layers: object
    moe_layers: object
    dense: object
    """Attention, dense MLP, shared experts, routers, norms, embeddings/head on this stage."""
    experts: object
    """Routed expert parameters on this rank (divided by ep)."""
    matrices: object
    """Of dense + experts: the 2-D hidden weight matrices (for Muon/Adafactor)."""
    largest_layer: object
    """Parameters of the largest layer on this rank (an FSDP unit)."""
    root: object
    """Embedding / LM head / final norm on this stage (the FSDP root unit)."""

    @property
    def total(self):
        return self.dense + self.experts


def stage_layer_counts(num_layers: int, pp: int, shed: int = 0) -> list[int]:
    """Layers per pipeline stage: an even split, the first stages taking the remainder (so the
    last stage, which also holds the LM head, never has more; Megatron's uneven split with
    --decoder-last-pipeline-num-layers, torchtitan's split points). ``shed``: layers the last
    stage gives up to the others (it holds the MTP modules, core.model.mtp). Never negative."""
    return [int(stage_span(num_layers, pp, i, shed)[1]) for i in range(pp)]


def stage_span(num_layers: int, pp, stage, shed=0):
    """(first layer index, layer count) of ``stage`` under stage_layer_counts (array-friendly).
    Without ``shed`` the last stage holds num_layers // pp layers and the others split the rest,
    the first ones taking the remainder. With ``shed`` (MTP modules on the last stage, core.model.mtp)
    the stages split num_layers + shed layer slots: the others take ceil((num_layers + shed) / pp)
    each, the last what is left (at least 0) next to its MTP modules."""
    if not shed:  # the plain split (the planner's hot path: a few array operations)
        base, extra = num_layers // pp, num_layers % pp
        return stage * base + np.minimum(stage, extra), base + (stage < extra)
    pp = np.asarray(pp)
    stage = np.asarray(stage)
    others = np.maximum(pp - 1, 1)
    balanced = np.minimum(num_layers, -(-(num_layers + shed) // pp) * others)  # the others' share
    last = np.where(pp > 1, num_layers - balanced, num_layers)
    rest = num_layers - last
    each, extra = rest // others, rest % others
    is_last = stage == pp - 1
    count = np.where(is_last, last, each + (stage < extra))
    start = np.where(is_last, rest, stage * each + np.minimum(stage, extra))
    return scalar_or_array(start), scalar_or_array(count)


def _prefix(mask: tuple[bool, ...], num_layers: int) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(np.asarray(mask or (False,) * num_layers, dtype=float))))


def slot_stage_span(num_layers: int, pp, stage):
    """(first layer index, layer count) of ``stage`` when the embedding and the loss each take a layer
    slot (Megatron-Core account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split:
    transformer_block.py get_num_layers_to_build adds one layer per flag, splits num_layers + 2 evenly
    over the stages, then builds one fewer on the first stage's first chunk and on the last stage's
    last chunk). A remainder goes to the first stages, as in stage_span; pp 1 keeps every layer."""
    pp, stage = np.asarray(pp), np.asarray(stage)
    slots = num_layers + 2
    base, extra = slots // pp, slots % pp
    count = base + (stage < extra) - (stage == 0) - (stage == pp - 1)
    start = stage * base + np.minimum(stage, extra) - (stage > 0)
    return scalar_or_array(np.where(pp > 1, start, 0)), scalar_or_array(np.where(pp > 1, count, num_layers))


def stage_params(spec: ModelSpec, layout: ParallelLayout, stage, mtp: int = 0,
                 embedding_loss_slots: bool = False) -> StageParams:
    """Parameters on one GPU of pipeline ``stage`` (0 = first; degrees may be arrays); ``mtp``
    MTP modules on the last stage (core.model.mtp), which then sheds decoder layers to the others;
    ``embedding_loss_slots``: the split of slot_stage_span (without MTP modules)."""
    h, tp, pp = spec.hidden_size, layout.tp, layout.pp
    shed = mtp_stage_layer_shed(spec, mtp)
    if embedding_loss_slots and not shed:
        start, count = slot_stage_span(spec.num_layers, pp, stage)
    else:
        start, count = stage_span(spec.num_layers, pp, stage, shed)
    moe_prefix = _prefix(spec.moe_layers, spec.num_layers)
    n_moe = moe_prefix[start + count] - moe_prefix[start]
    n_dense = count - n_moe
    attn = attention_params(spec.attention, h) / tp
    norms = spec.norms_per_layer * norm_params(spec, h)
    dense_mlp = mlp_params(spec.mlp.intermediate_size, h, spec.mlp.gated, spec.mlp.bias) / tp
    moe = spec.moe
    shared = router = experts_per_layer = 0.0
    if moe is not None:
        shared = mlp_params(moe.shared_intermediate_size, h, True) / tp
        router = h * moe.num_experts
        # routed experts over etp x ep ranks (core.parallel.ParallelLayout.etp: Megatron-Core's TEGroupedMLP
        # shards each expert's width over the expert TP group; DeepSpeed-MoE and torchtitan keep them whole)
        experts_per_layer = moe.num_experts * expert_params(moe, h) / expert_split(layout)
    dense = count * (attn + norms) + n_dense * dense_mlp + n_moe * (shared + router)
    first, last = stage == 0, stage == pp - 1
    # vocab-parallel embedding (+ a learned position table, replicated) on the first stage; the
    # final norm and the LM head on the last (a tied head on another stage keeps its own copy)
    head = np.where(np.logical_or(not spec.tie_embeddings, pp > 1), spec.vocab_size * h / tp, 0.0)
    root = first * (spec.vocab_size * h / tp + spec.learned_positions * h) + last * (norm_params(spec, h) + head)
    matrices = count * attn + n_dense * dense_mlp + n_moe * (shared + router + experts_per_layer)
    moe_block = np.where(n_moe > 0, shared + router + experts_per_layer, 0.0)
    largest = attn + norms + np.maximum(np.where(n_dense > 0, dense_mlp, 0.0), moe_block)
    experts = n_moe * experts_per_layer
    if mtp:  # the MTP modules (their block, projection, norms) and, with pp > 1, the embedding
        # copy Megatron builds on the MTP stage (gpt_model.py: pre_process or mtp_process)
        mtp_dense, mtp_experts = mtp_module_params(spec, tp, expert_split(layout))
        dense = dense + last * mtp * mtp_dense
        experts = experts + last * mtp * mtp_experts
        root = root + last * (pp > 1) * spec.vocab_size * h / tp
        matrices = matrices + last * mtp * (mtp_dense + mtp_experts)
        count = count + last * mtp
        n_moe = n_moe + last * mtp * mtp_block_is_moe(spec)
    k = declared_scale(spec)  # a bare --params N: states follow N, in the generic shape's proportions
    return StageParams(count, n_moe, k * (dense + root), k * experts, k * matrices, k * largest, k * root)


def declared_scale(spec: ModelSpec) -> float:
    """declared N / counted N for a bare parameter count (1 for real architectures)."""
    if spec.declared_params is None:
        return 1.0
    from gpuplan.core.model.spec import count_parameters

    return spec.declared_params / count_parameters(spec).total


def state_shards(layout: ParallelLayout):
    """Ranks over which ZeRO/FSDP shards dense model states (HSDP: the shard group)."""
    return layout.shard_group or layout.dp * layout.cp


def expert_split(layout: ParallelLayout):
    """How many ways one layer's routed experts are split: ep x etp (etp = tp where not given:
    core.parallel.ParallelLayout.etp)."""
    return layout.ep * layout.expert_tp


def expert_state_shards(layout: ParallelLayout):
    """Ranks over which expert states are sharded: the expert data-parallel group
    (core.parallel.expert_data_group: state shards x tp / (etp x ep); DeepSpeed-MoE: / ep)."""
    return expert_data_group(state_shards(layout), layout.tp, layout.ep, layout.expert_tp,
                             layout.experts_replicated_over_tp)


@dataclass(frozen=True)
class ModelStates:
    """Bytes of model states on one GPU."""

    weights: object
    grads: object
    master: object
    optimizer: object


def model_state_bytes(params: StageParams, layout: ParallelLayout, recipe: PrecisionRecipe,
                      optimizer: OptimizerSpec, hidden: int) -> ModelStates:
    """States after ZeRO/FSDP sharding (stage 1: optimizer + master, 2: + grads, 3: + weights)."""
    dense, experts = params.dense, params.experts
    shards, expert_shards = state_shards(layout), expert_state_shards(layout)

    def sharded(stage: int):
        return np.where(layout.zero >= stage, dense / shards + experts / expert_shards, dense + experts)

    total = params.total
    matrix_share = np.where(total > 0, params.matrices / np.where(total > 0, total, 1), 0.0)
    matrix_states = optimizer.matrix_states if optimizer.name != "adafactor" else 2 / hidden
    states = matrix_share * matrix_states + (1 - matrix_share) * optimizer.other_states
    state_bytes = optimizer.fixed_state_bytes or recipe.state_bytes
    per_param = states * state_bytes + optimizer.overhead_bytes_per_param
    return ModelStates(weights=recipe.weight_bytes * sharded(3), grads=recipe.grad_bytes * sharded(2),
                       master=recipe.master_bytes * sharded(1), optimizer=per_param * sharded(1))


# ZeRO-Offload (Ren et al. 2021, "ZeRO-Offload: Democratizing Billion-Scale Model Training",
# Sec. 4.1): the CPU holds the fp16 gradients (2 B), the fp32 master parameters and Adam's two
# fp32 moments (12 B) of each parameter the rank owns, and runs the step there.
OFFLOAD_HOST_BYTES_PER_PARAM = 2 + 12


def offload_host_bytes(params_on_rank, layout) -> float:
    """Pinned host memory one GPU's optimizer offload needs (bytes): 14 B per parameter of its
    ZeRO partition (the partition over data-parallel ranks when ZeRO >= 1)."""
    shards = state_shards(layout) if layout.zero >= 1 else 1
    return OFFLOAD_HOST_BYTES_PER_PARAM * params_on_rank / shards


def finetune_states(params: StageParams, spec: ModelSpec, layout: ParallelLayout, settings,
                     recipe: PrecisionRecipe, optimizer: OptimizerSpec,
                     adapter_recipe: PrecisionRecipe) -> ModelStates:
    """LoRA/QLoRA: the frozen base holds only weights; adapters carry ``adapter_recipe``'s full
    states (PEFT: fp32 adapters, 16 B/param with AdamW). ``settings``: core.memory.training.MemorySettings."""
    matrices = params.matrices
    base_bytes = QLORA_BASE_BYTES if settings.finetune == "qlora" else recipe.compute_bytes
    frozen = matrices * base_bytes + (params.total - matrices) * recipe.compute_bytes
    # ZeRO-3 / FSDP shard the frozen base like any parameter (DeepSpeed stage 3 partitions every
    # parameter, requires_grad or not; FSDP2 fully_shard likewise): 1/d of it per rank
    frozen = frozen / np.where(layout.zero >= 3, state_shards(layout), 1)
    adapters = lora_params(spec, settings.lora_rank, params.layers, layout.tp,  # --framework hf: peft's MoE count
                           peft_experts=peft_counts_experts(settings), moe_layers=params.moe_layers)
    adapter_params = StageParams(params.layers, 0, adapters, 0.0, adapters, 0.0, 0.0)
    trained = model_state_bytes(adapter_params, layout, adapter_recipe, optimizer, spec.hidden_size)
    return ModelStates(frozen + trained.weights, trained.grads, trained.master, trained.optimizer)
