"""Per-GPU training memory: model states by precision recipe and optimizer, ZeRO/FSDP sharding,
TP/PP/EP partitioning, activations, overheads, and the peak over the phases of a step.

Units: bytes. All functions are pure; the planner calls the same ones with other layouts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuplan.core import activations as A
from gpuplan.core.model import (
    ModelSpec,
    attention_params,
    expert_params,
    mlp_params,
    norm_params,
)
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
    """Parameters held by one GPU of one pipeline stage (after TP / EP division)."""

    layers: int
    moe_layers: int
    dense: float
    """Attention, dense MLP, shared experts, routers, norms, embeddings/head on this stage."""
    experts: float
    """Routed expert parameters on this rank (divided by ep)."""
    matrices: float
    """Of dense + experts: the 2-D hidden weight matrices (for Muon/Adafactor)."""
    largest_layer: float
    """Parameters of the largest layer on this rank (an FSDP unit)."""
    root: float
    """Embedding / LM head / final norm on this stage (the FSDP root unit)."""

    @property
    def total(self) -> float:
        return self.dense + self.experts


def stage_layer_counts(num_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage: an even split, the first stages taking the remainder."""
    base, extra = divmod(num_layers, pp)
    return [base + (1 if i < extra else 0) for i in range(pp)]


def stage_params(spec: ModelSpec, layout: ParallelLayout, stage: int) -> StageParams:
    """Parameters on one GPU of pipeline ``stage`` (0 = first)."""
    h, tp = spec.hidden_size, layout.tp
    counts = stage_layer_counts(spec.num_layers, layout.pp)
    start = sum(counts[:stage])
    indices = range(start, start + counts[stage])
    moe_mask = spec.moe_layers or (False,) * spec.num_layers
    n_moe = sum(moe_mask[i] for i in indices)
    n_dense = counts[stage] - n_moe
    attn = attention_params(spec.attention, h) / tp
    norms = spec.norms_per_layer * norm_params(spec, h)
    dense_mlp = mlp_params(spec.mlp.intermediate_size, h, spec.mlp.gated, spec.mlp.bias) / tp
    moe = spec.moe
    shared = router = experts_per_layer = 0.0
    if moe is not None:
        shared = mlp_params(moe.shared_intermediate_size, h, True) / tp
        router = h * moe.num_experts
        experts_per_layer = moe.num_experts * expert_params(moe, h) / layout.ep
    dense = counts[stage] * (attn + norms) + n_dense * dense_mlp + n_moe * (shared + router)
    root = 0.0
    if stage == 0:  # vocab-parallel embedding, plus a learned position table (GPT-2) replicated
        root += spec.vocab_size * h / tp + spec.learned_positions * h
    if stage == layout.pp - 1:
        root += norm_params(spec, h)
        if not spec.tie_embeddings or layout.pp > 1:  # a tied head on another stage keeps a copy
            root += spec.vocab_size * h / tp
    matrices = counts[stage] * attn + n_dense * dense_mlp + n_moe * (shared + router + experts_per_layer)
    largest = attn + norms + max(dense_mlp if n_dense else 0.0, shared + router + experts_per_layer if n_moe else 0.0)
    k = declared_scale(spec)  # a bare --params N: states follow N, in the generic shape's proportions
    return StageParams(counts[stage], n_moe, k * (dense + root), k * n_moe * experts_per_layer, k * matrices,
                       k * largest, k * root)


def declared_scale(spec: ModelSpec) -> float:
    """declared N / counted N for a bare parameter count (1 for real architectures)."""
    if spec.declared_params is None:
        return 1.0
    from gpuplan.core.model import count_parameters

    return spec.declared_params / count_parameters(spec).total


@dataclass(frozen=True)
class ModelStates:
    """Bytes of model states on one GPU."""

    weights: float
    grads: float
    master: float
    optimizer: float


def model_state_bytes(params: StageParams, layout: ParallelLayout, recipe: PrecisionRecipe,
                      optimizer: OptimizerSpec, hidden: int) -> ModelStates:
    """States after ZeRO/FSDP sharding (stage 1: optimizer + master, 2: + grads, 3: + weights)."""
    dense, experts = params.dense, params.experts

    def sharded(stage: int) -> float:
        if layout.zero < stage:
            return dense + experts
        return dense / layout.state_shards + experts / layout.expert_state_shards

    matrix_share = params.matrices / params.total if params.total else 0.0
    matrix_states = optimizer.matrix_states if optimizer.name != "adafactor" else 2 / hidden
    states = matrix_share * matrix_states + (1 - matrix_share) * optimizer.other_states
    state_bytes = optimizer.fixed_state_bytes or recipe.state_bytes
    per_param = states * state_bytes + optimizer.overhead_bytes_per_param
    return ModelStates(weights=recipe.weight_bytes * sharded(3), grads=recipe.grad_bytes * sharded(2),
                       master=recipe.master_bytes * sharded(1), optimizer=per_param * sharded(1))


def optimizer_step_temp_bytes(params: StageParams, layout: ParallelLayout, recipe: PrecisionRecipe,
                              largest_tensor: float) -> float:
    """Transient memory inside optimizer.step(). PyTorch's foreach AdamW materialises one
    intermediate as large as the parameters it updates (measured: 2N bytes on pure-bf16 Llama-2-7B,
    4N with fp32 params); the for-loop version one tensor at a time; fused kernels none."""
    updated = params.total / (layout.state_shards if layout.zero >= 1 else 1)
    element = max(recipe.state_bytes, recipe.master_bytes or recipe.weight_bytes)
    if recipe.optimizer_impl == "foreach":
        return updated * element
    if recipe.optimizer_impl == "for-loop":
        return largest_tensor * element
    return 0.0


def fsdp_working_set_bytes(params: StageParams, layout: ParallelLayout, recipe: PrecisionRecipe) -> float:
    """ZeRO-3/FSDP unsharded working set at the start of backward: the root unit (embeddings,
    final norm, head) gathered in compute dtype, plus the all-gather buffer of the layer being
    prefetched for backward. Measured with FSDP2 (fully_shard per block + root, world 8) on
    Llama-2-7B: 0.488 GiB unsharded root + 0.377 GiB all-gather = exactly these two terms."""
    if layout.zero < 3 or layout.state_shards == 1:
        return 0.0
    c = recipe.compute_bytes
    return c * params.root + c * params.largest_layer


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

    def fixed_bytes(self, layout: ParallelLayout) -> float:
        groups = sum(1 for d in (layout.dp * layout.cp, layout.tp, layout.pp) if d > 1)
        return self.cuda_context + groups * self.comm_per_group + (self.all_to_all if layout.ep > 1 else 0.0)


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


# QLoRA (Dettmers et al. 2023, Sec. 3): NF4 with double quantisation costs 4.127 bits per weight.
QLORA_BASE_BYTES = 4.127 / 8


def lora_params_per_layer(spec: ModelSpec, rank: int, tp: int = 1) -> float:
    """Adapters on every linear of a layer (q, k, v, o and the MLP): r·(in + out) each."""
    h, a = spec.hidden_size, spec.attention
    q, kv = a.num_heads * a.qk_head_dim, a.num_kv_heads * a.qk_head_dim
    attn = (h + q) + 2 * (h + kv) + (a.num_heads * a.value_head_dim + h)
    mlp = (3 if spec.mlp.gated else 2) * (h + spec.mlp.intermediate_size)
    return rank * (attn + mlp) / tp


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


def stage_memory(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings, stage: int) -> MemoryBreakdown:
    """Allocated bytes on one GPU of pipeline ``stage`` at the two candidate peaks of a step:
    the start of backward (all activations held, loss gradient allocated) and inside
    optimizer.step() (gradients complete, step temporaries)."""
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
    in_flight = A.pipeline_micro_batches_in_flight(layout.pp, layout.vpp, layout.micro_batches_per_step)
    in_flight = max(1.0, in_flight - stage) if layout.vpp == 1 else in_flight  # 1F1B: stage i holds p - i
    activations = per_token * tokens * in_flight * settings.activation_scale
    outside = saved_outside = loss_temp = 0.0
    if stage == layout.pp - 1:
        out = A.outside_layer_bytes(spec, impl=settings.implementation, compute_bytes=recipe.compute_bytes,
                                    tp=layout.tp, autocast=autocast)
        saved_outside = out.saved * tokens * settings.activation_scale
        loss_temp = out.backward_temp * tokens * settings.activation_scale
        outside = saved_outside
    head = spec.vocab_size * spec.hidden_size / layout.tp * declared_scale(spec) if stage == layout.pp - 1 else 0.0
    # autocast keeps a bf16 copy of every matmul weight (LM head included) for backward
    weight_copies = params.matrices * recipe.fp8_weight_bytes + (params.matrices + head) * 2.0 * autocast
    working = fsdp_working_set_bytes(params, layout, recipe)
    grads_in_forward = states.grads if (recipe.persistent_grads or layout.micro_batches_per_step > 1) else 0.0
    resident = states.weights + states.master + states.optimizer
    backward_start = resident + grads_in_forward + working + activations + outside + loss_temp + weight_copies
    if settings.recompute == "full":  # later in backward: the loss gradient is gone, one layer recomputed
        layer = A.recomputed_layer_bytes_per_token(spec, settings.seq_len, params.moe_layers, **kw) * tokens \
            * settings.activation_scale
        backward_start = max(backward_start, backward_start - loss_temp + layer)
    largest_tensor = spec.vocab_size * spec.hidden_size / layout.tp
    step_temp = 0.0
    if settings.finetune == "full" and not settings.offload_optimizer:
        step_temp = optimizer_step_temp_bytes(params, layout, recipe, largest_tensor)
    step = resident + states.grads + step_temp
    at_backward = backward_start >= step
    return MemoryBreakdown(
        stage=stage, weights=states.weights, grads=grads_in_forward if at_backward else states.grads,
        master=states.master, optimizer=states.optimizer,
        activations=activations if at_backward else 0.0, outside_layers=outside if at_backward else 0.0,
        temporaries=(loss_temp + weight_copies) if at_backward else step_temp,
        fsdp_working_set=working if at_backward else 0.0,
        peak_phase="backward start" if at_backward else "optimizer step",
        backward_start_total=backward_start, optimizer_step_total=step)


def peak_memory(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings) -> MemoryBreakdown:
    """The worst pipeline stage's breakdown (first stage: most activations; last: LM head + loss)."""
    stages = {0, layout.pp - 1}
    return max((stage_memory(spec, layout, settings, s) for s in stages), key=lambda m: m.allocated)


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


def usable_bytes(capacity: float, overheads: Overheads, layout: ParallelLayout) -> float:
    """What the allocator may use: capacity x (1 - margin) - CUDA context - NCCL buffers."""
    return capacity * (1 - overheads.margin) - overheads.fixed_bytes(layout)
