"""Per-GPU training memory: model states by precision recipe and optimizer, ZeRO/FSDP sharding,
TP/PP/EP partitioning, activations, overheads, and the peak over the phases of a step.

One function computes it for every face: the degrees of a layout may be Python numbers (``gpuplan
memory``, the training report) or numpy arrays of many layouts (the planner), and both go through
the same arithmetic, so the planner's figure for a layout is the memory command's figure for it.

Units: bytes. All functions are pure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gpuplan.core import activations as A
from gpuplan.core.finetune import QLORA_BASE_BYTES, lora_params_per_layer
from gpuplan.core.model import ModelSpec, attention_params, expert_params, mlp_params, norm_params
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.precision import (  # noqa: F401 - the recipe tables are part of this module's vocabulary
    OPTIMIZERS,
    RECIPES,
    OptimizerSpec,
    PrecisionRecipe,
    lookup,
)

GiB = 2**30


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


def stage_layer_counts(num_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage: an even split, the first stages taking the remainder (so the
    last stage, which also holds the LM head, never has more; Megatron's uneven split with
    --decoder-last-pipeline-num-layers, torchtitan's split points). Never negative."""
    base, extra = divmod(num_layers, pp)
    return [base + (1 if i < extra else 0) for i in range(pp)]


def _stage_span(num_layers: int, pp, stage):
    """(first layer index, layer count) of ``stage`` under stage_layer_counts (array-friendly)."""
    base, extra = num_layers // pp, num_layers % pp
    count = base + (stage < extra)
    start = stage * base + np.minimum(stage, extra)
    return start, count


def _prefix(mask: tuple[bool, ...], num_layers: int) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(np.asarray(mask or (False,) * num_layers, dtype=float))))


def stage_params(spec: ModelSpec, layout: ParallelLayout, stage) -> StageParams:
    """Parameters on one GPU of pipeline ``stage`` (0 = first; degrees may be arrays)."""
    h, tp, pp = spec.hidden_size, layout.tp, layout.pp
    start, count = _stage_span(spec.num_layers, pp, stage)
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
        experts_per_layer = moe.num_experts * expert_params(moe, h) / layout.ep
    dense = count * (attn + norms) + n_dense * dense_mlp + n_moe * (shared + router)
    first, last = stage == 0, stage == pp - 1
    # vocab-parallel embedding (+ a learned position table, replicated) on the first stage; the
    # final norm and the LM head on the last (a tied head on another stage keeps its own copy)
    head = np.where(np.logical_or(not spec.tie_embeddings, pp > 1), spec.vocab_size * h / tp, 0.0)
    root = first * (spec.vocab_size * h / tp + spec.learned_positions * h) + last * (norm_params(spec, h) + head)
    matrices = count * attn + n_dense * dense_mlp + n_moe * (shared + router + experts_per_layer)
    moe_block = np.where(n_moe > 0, shared + router + experts_per_layer, 0.0)
    largest = attn + norms + np.maximum(np.where(n_dense > 0, dense_mlp, 0.0), moe_block)
    k = declared_scale(spec)  # a bare --params N: states follow N, in the generic shape's proportions
    return StageParams(count, n_moe, k * (dense + root), k * n_moe * experts_per_layer, k * matrices,
                       k * largest, k * root)


def declared_scale(spec: ModelSpec) -> float:
    """declared N / counted N for a bare parameter count (1 for real architectures)."""
    if spec.declared_params is None:
        return 1.0
    from gpuplan.core.model import count_parameters

    return spec.declared_params / count_parameters(spec).total


def state_shards(layout: ParallelLayout):
    """Ranks over which ZeRO/FSDP shards dense model states (HSDP: the shard group)."""
    return layout.shard_group or layout.dp * layout.cp


def expert_state_shards(layout: ParallelLayout):
    """Ranks over which expert states are sharded: the data-parallel ranks left beside ep."""
    return np.maximum(1, state_shards(layout) // layout.ep)


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


def optimizer_step_temp_bytes(params: StageParams, layout: ParallelLayout, recipe: PrecisionRecipe,
                              largest_tensor: float):
    """Transient memory inside optimizer.step(). PyTorch's foreach AdamW materialises one
    intermediate as large as the parameters it updates (measured: 2N bytes on pure-bf16 Llama-2-7B,
    4N with fp32 params); the for-loop version one tensor at a time; fused kernels none."""
    updated = params.total / np.where(layout.zero >= 1, state_shards(layout), 1)
    element = max(recipe.state_bytes, recipe.master_bytes or recipe.weight_bytes)
    if recipe.optimizer_impl == "foreach":
        return updated * element
    if recipe.optimizer_impl == "for-loop":
        return largest_tensor * element
    return 0.0


def fsdp_working_set_bytes(params: StageParams, layout: ParallelLayout, recipe: PrecisionRecipe):
    """ZeRO-3/FSDP unsharded working set at the start of backward: the root unit (embeddings,
    final norm, head) gathered in compute dtype, plus the all-gather buffer of the layer being
    prefetched for backward. Measured with FSDP2 (fully_shard per block + root, world 8) on
    Llama-2-7B: 0.488 GiB unsharded root + 0.377 GiB all-gather = exactly these two terms."""
    on = np.logical_and(layout.zero >= 3, state_shards(layout) > 1)
    return np.where(on, recipe.compute_bytes * (params.root + params.largest_layer), 0.0)


@dataclass(frozen=True)
class Overheads:
    """Memory outside PyTorch's allocated tensors, bytes per GPU."""

    cuda_context: float = 0.5 * GiB
    """CUDA context + cuBLAS workspace: ~300 MB with lazy module loading (CUDA >= 11.7; PyTorch
    maintainers, pytorch/pytorch#107667), more with cuBLAS/cuDNN handles."""
    comm_per_group: float = 0.75 * GiB
    """NCCL buffers per communicator in use: ~1.6 GB seen for one all-reduce communicator on
    8 GPUs, linear in channels (NVIDIA/nccl#864, #986)."""
    all_to_all: float = 3.0 * GiB
    """Extra for MoE all-to-all (32 channels per peer pair: +3.3 GB on 8x H100, NVIDIA/nccl#1685)."""
    margin: float = 0.15
    """The article: keep 15-20% of GPU memory free for fragmentation and framework overhead."""

    def fixed_bytes(self, layout: ParallelLayout):
        """CUDA context + NCCL buffers of the groups in use (degrees may be arrays)."""
        groups = ((layout.dp * layout.cp > 1) * 1.0 + (np.asarray(layout.tp) > 1) + (np.asarray(layout.pp) > 1))
        return plain(self.cuda_context + groups * self.comm_per_group + (np.asarray(layout.ep) > 1) * self.all_to_all)


@dataclass(frozen=True)
class MemoryBreakdown:
    """Allocated bytes on the worst GPU at its peak, by category, and where the peak falls."""

    stage: int
    weights: float
    grads: float
    master: float
    optimizer: float
    activations: float
    outside_layers: float
    temporaries: float
    fsdp_working_set: float
    peak_phase: str
    backward_start_total: float
    optimizer_step_total: float

    @property
    def allocated(self) -> float:
        return max(self.backward_start_total, self.optimizer_step_total)


@dataclass(frozen=True)
class MemorySettings:
    """How the step runs, beyond the layout: sequence, precision, kernels, fine-tuning."""

    seq_len: int = 4096
    recipe: str = "bf16"
    optimizer: str = "adamw"
    implementation: str = "hf"
    attention_kernel: str = "flash"
    recompute: str = "none"
    dropout: float | None = None
    """Dropout probability; None = what the model's config trains with (ModelSpec.dropout)."""
    finetune: str = "full"
    """'full', 'lora' (frozen bf16 base + adapters) or 'qlora' (frozen 4-bit NF4 base + adapters)."""
    lora_rank: int = 16
    moe_capacity_factor: float = 1.0
    """MoE expert capacity factor (1.0 = no padding; Megatron's dropless default)."""
    offload_optimizer: bool = False
    """ZeRO-Offload: optimizer states and master weights live in CPU memory; the step runs there."""
    activation_scale: float = 1.0
    """Calibrated factor on activations, logits/loss tensors and the loss gradient (gpuplan
    calibrate: measured / predicted); 1.0 = the model as derived."""


def _finetune_states(params: StageParams, spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings,
                     recipe: PrecisionRecipe, optimizer: OptimizerSpec) -> ModelStates:
    """LoRA/QLoRA: the frozen base holds only weights; adapters carry the recipe's full states."""
    matrices = params.matrices
    base_bytes = QLORA_BASE_BYTES if settings.finetune == "qlora" else recipe.compute_bytes
    frozen = matrices * base_bytes + (params.total - matrices) * recipe.compute_bytes
    adapters = params.layers * lora_params_per_layer(spec, settings.lora_rank, layout.tp)
    adapter_params = StageParams(params.layers, 0, adapters, 0.0, adapters, 0.0, 0.0)
    trained = model_state_bytes(adapter_params, layout, recipe, optimizer, spec.hidden_size)
    return ModelStates(frozen + trained.weights, trained.grads, trained.master, trained.optimizer)


@dataclass(frozen=True)
class StageMemory:
    """One stage's bytes by category at the two candidate peaks (numbers or arrays)."""

    weights: object
    grads_backward: object
    grads_step: object
    master: object
    optimizer: object
    activations: object
    outside_layers: object
    temporaries_backward: object
    temporaries_step: object
    fsdp_working_set: object
    backward_start: object
    optimizer_step: object

    @property
    def allocated(self):
        return np.maximum(self.backward_start, self.optimizer_step)


def stage_memory_parts(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings, stage) -> StageMemory:
    """Allocated bytes on one GPU of pipeline ``stage`` at the start of backward (all activations
    held, the loss gradient allocated) and inside optimizer.step() (gradients complete, step
    temporaries). ``layout``'s degrees and ``stage`` may be numpy arrays (many layouts)."""
    recipe = lookup(RECIPES, settings.recipe, "recipe")
    optimizer = lookup(OPTIMIZERS, settings.optimizer, "optimizer")
    params = stage_params(spec, layout, stage)
    if settings.finetune == "full":
        states = model_state_bytes(params, layout, recipe, optimizer, spec.hidden_size)
    else:
        states = _finetune_states(params, spec, layout, settings, recipe, optimizer)
    if settings.offload_optimizer:
        states = replace(states, master=0.0, optimizer=0.0)
    tokens = layout.micro_batch * settings.seq_len / layout.cp
    dropout = spec.dropout if settings.dropout is None else settings.dropout
    autocast = recipe.autocast_weight_copies
    kw = dict(impl=settings.implementation, kernel=settings.attention_kernel, compute_bytes=recipe.compute_bytes,
              tp=layout.tp, dropout=dropout, autocast=autocast)
    per_token = A.saved_bytes_per_token(spec, settings.seq_len, params.layers, params.moe_layers,
                                        recompute=settings.recompute, sequence_parallel=layout.sequence_parallel,
                                        capacity_factor=settings.moe_capacity_factor, **kw)
    micro_batches = layout.micro_batches_per_step
    in_flight = A.pipeline_micro_batches_in_flight(layout.pp, layout.vpp, micro_batches)
    in_flight = np.where(layout.vpp == 1, np.maximum(1.0, in_flight - stage), in_flight)  # 1F1B: stage i holds p - i
    activations = per_token * tokens * in_flight * settings.activation_scale
    last = stage == layout.pp - 1
    out = A.outside_layer_bytes(spec, impl=settings.implementation, compute_bytes=recipe.compute_bytes,
                                tp=layout.tp, autocast=autocast)
    outside = last * out.saved * tokens * settings.activation_scale
    loss_temp = last * out.backward_temp * tokens * settings.activation_scale
    head = last * spec.vocab_size * spec.hidden_size / layout.tp * declared_scale(spec)
    # autocast keeps a bf16 copy of every matmul weight (LM head included) for backward
    weight_copies = params.matrices * recipe.fp8_weight_bytes + (params.matrices + head) * 2.0 * autocast
    working = fsdp_working_set_bytes(params, layout, recipe)
    grads_in_forward = states.grads * np.logical_or(recipe.persistent_grads, micro_batches > 1)
    resident = states.weights + states.master + states.optimizer
    backward_start = resident + grads_in_forward + working + activations + outside + loss_temp + weight_copies
    if settings.recompute == "full":  # later in backward: the loss gradient is gone, one layer recomputed
        layer = A.recomputed_layer_bytes_per_token(spec, settings.seq_len, params.moe_layers, **kw) * tokens \
            * settings.activation_scale
        backward_start = np.maximum(backward_start, backward_start - loss_temp + layer)
    step_temp = 0.0
    if settings.finetune == "full" and not settings.offload_optimizer:
        step_temp = optimizer_step_temp_bytes(params, layout, recipe, spec.vocab_size * spec.hidden_size / layout.tp)
    return StageMemory(states.weights, grads_in_forward, states.grads, states.master, states.optimizer, activations,
                       outside, loss_temp + weight_copies, step_temp, working, backward_start,
                       resident + states.grads + step_temp)


def stage_memory(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings, stage: int) -> MemoryBreakdown:
    """One stage's peak as a breakdown (scalar degrees): the categories at whichever phase peaks."""
    m = stage_memory_parts(spec, layout, settings, stage)
    at_backward = bool(m.backward_start >= m.optimizer_step)

    def pick(backward, step=0.0) -> float:
        return float(backward if at_backward else step)

    return MemoryBreakdown(
        stage=stage, weights=float(m.weights), grads=pick(m.grads_backward, m.grads_step), master=float(m.master),
        optimizer=float(m.optimizer), activations=pick(m.activations), outside_layers=pick(m.outside_layers),
        temporaries=pick(m.temporaries_backward, m.temporaries_step), fsdp_working_set=pick(m.fsdp_working_set),
        peak_phase="backward start" if at_backward else "optimizer step",
        backward_start_total=float(m.backward_start), optimizer_step_total=float(m.optimizer_step))


def peak_memory(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings) -> MemoryBreakdown:
    """The worst pipeline stage's breakdown (first stage: most activations; last: LM head + loss)."""
    stages = {0, layout.pp - 1}
    return max((stage_memory(spec, layout, settings, s) for s in stages), key=lambda m: m.allocated)


def peak_allocated(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings):
    """Allocated peak bytes of the worst stage; ``layout``'s degrees may be arrays (the planner)."""
    first = stage_memory_parts(spec, layout, settings, 0).allocated
    last = stage_memory_parts(spec, layout, settings, layout.pp - 1).allocated
    return plain(np.maximum(first, last))


def activation_bytes_per_sample(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings) -> float:
    """How much the start-of-backward total grows per extra sequence in the micro-batch."""
    one = peak_memory(spec, layout, settings)
    two = peak_memory(spec, _with_micro_batch(layout, layout.micro_batch + 1), settings)
    return max(0.0, two.backward_start_total - one.backward_start_total)


def _with_micro_batch(layout: ParallelLayout, micro_batch: int) -> ParallelLayout:
    batch = layout.global_batch
    if batch is not None and batch % (micro_batch * layout.dp):
        batch = None  # keep the largest-micro-batch search independent of the batch constraint
    return replace(layout, micro_batch=micro_batch, global_batch=batch)


def largest_micro_batch(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings, budget: float) -> int:
    """Largest micro-batch whose peak stays within ``budget`` bytes (0 if even 1 does not fit)."""
    base = peak_memory(spec, _with_micro_batch(layout, 1), settings)
    if base.allocated > budget:
        return 0
    growth = activation_bytes_per_sample(spec, _with_micro_batch(layout, 1), settings)
    if growth <= 0:
        return 1024
    guess = 1 + int((budget - base.backward_start_total) // growth)
    while guess > 1 and peak_memory(spec, _with_micro_batch(layout, guess), settings).allocated > budget:
        guess -= 1
    return min(guess, 1024)


def usable_bytes(capacity: float, overheads: Overheads, layout: ParallelLayout):
    """What the allocator may use: capacity x (1 - margin) - CUDA context - NCCL buffers."""
    return plain(capacity * (1 - overheads.margin) - overheads.fixed_bytes(layout))


def plain(value):
    """A 0-d result as a Python float (scalar callers), arrays as they are (the planner)."""
    return float(value) if np.ndim(value) == 0 else value
