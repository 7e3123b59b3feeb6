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

from gpuplan.core.memory import activations as A
from gpuplan.core.memory import bf16_optimizer as BO
from gpuplan.core.memory import llmc_memory as LM
from gpuplan.core import frameworks as F
from gpuplan.core.memory import recompute as R
from gpuplan.core.memory import recipe_facts as RF
from gpuplan.core.model.finetune import lora_params_per_layer  # noqa: F401 - re-exported (tests/test_memory.py)
from gpuplan.core.model.finetune import peft_counts_experts
from gpuplan.core.frameworks import framework
from gpuplan.core.memory.device_memory import Overheads, framework_gap_bytes, usable_bytes  # noqa: F401 - re-exported
from gpuplan.core.bulk import scalar_or_array
from gpuplan.core.memory.expert_gather import gathered_routed_bytes_per_token
from gpuplan.core.memory.lora_moe import peft_fold_memory
from gpuplan.core.memory.fsdp_streams import eager_loss_hole_of, stage_pool_bytes
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.memory.model_states import (  # noqa: F401 - re-exported: memory's vocabulary
    ModelStates,
    StageParams,
    declared_scale,
    expert_state_shards,
    finetune_states,
    model_state_bytes,
    stage_layer_counts,
    stage_params,
    stage_span,
    state_shards,
)
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.precision import (  # noqa: F401 - the recipe tables are part of this module's vocabulary
    OPTIMIZERS,
    RECIPES,
    OptimizerSpec,
    PrecisionRecipe,
    lookup,
)
from gpuplan.core.memory.float8_gather import unsharded_float8_saving
from gpuplan.core.memory.step_transients import (  # noqa: F401 - re-exported
    OPTIMIZER_IMPLS,
    eager_attention_backward,
    fsdp_working_set_bytes,
    largest_tensor_elements,
    optimizer_step_temp_bytes,
)

GiB = 2**30


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
    recompute_layers: int | None = None
    """With recompute 'full': Megatron's block method over the first N layers of each virtual
    pipeline chunk (core.memory.recompute); None = every layer."""
    recompute_modules: tuple[str, ...] = ()
    """With recompute 'selective': Megatron's --recompute-modules (core.memory.recompute); () = core_attn."""
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
    optimizer_impl: str | None = None
    """Optimizer kernel: foreach, fused or forloop; None = the framework's (generic: the recipe's)."""
    framework: str = "generic"
    """Framework profile (core.frameworks): what it keeps, shards and recomputes."""
    loss: str | None = None
    """'hf-ce' (logits kept in the output + fp32 log-softmax), 'fp32-ce' (fp32 log-softmax only)
    or 'chunked' (torchtitan); None = the framework's."""
    op_sac_fused_qkv: bool | None = None  # op-sac's q/k/v: one mm or three; None: core.frameworks.op_sac_fused_qkv's
    mtp_layers: int = 0
    """MTP modules trained on the last stage (core.model.mtp; the job resolves the model's and the
    framework's default): their parameters, one block's activations and their own logits / loss."""
    linear_input_bytes: float | None = None
    """Bytes per element of the inputs Transformer Engine's linears keep quantised under an FP8 /
    MXFP8 / NVFP4 recipe (core.memory.activations.saved_linear_input_bytes; ``megatron`` implementation
    only); None = kept in the compute dtype (BF16 runs, torchao Float8Linear, transformers)."""
    device: str = "cuda"
    """Where the step runs: 'cuda' (fused dropout keeps 1-byte masks) or 'cpu' (the CPU oracle
    of `gpuplan measure`: dropout keeps a noise tensor of the input dtype)."""
    grad_bytes: float | None = None
    """Bytes per element of the gradient buffer; None = the recipe's. Megatron-Core's DDP allocates it
    in fp32 with grad_reduce_in_fp32, else in the parameters' dtype (distributed_data_parallel.py:
    ``grad_dtype = torch.float if ddp_config.grad_reduce_in_fp32 else param.dtype``); Megatron-Bridge's
    perf recipes set ddp.grad_reduce_in_fp32 = False (docs/memory.md)."""
    moment_bytes: float | None = None
    """Bytes per optimizer-state element (Adam's two moments); None = the recipe's. Megatron-Core's
    precision-aware optimizer with exp_avg_dtype / exp_avg_sq_dtype bf16: 2 (optimizer_config.py)."""
    low_precision_weights: str | None = None
    """How TE linears hold their weights under an FP8 / MXFP8 / NVFP4 recipe (``linear_input_bytes``
    given): 'primary' (Megatron --fp8-param-gather / fp4_param_gather: the weight is kept only in the
    low-precision format, row-wise and column-wise copies) or 'cached' (bf16 weights plus TE's
    low-precision copy of both, cached across micro-batches); None = the recipe's bf16 weights and no copy."""
    fp8_any_layout_gemm: bool = False  # FP8 GEMMs take any layout (sm_100): core.memory.recipe_facts.weight_copies
    fsdp_float8_all_gather: bool = False  # torchtitan's FSDP2 float8 all-gather: unsharded matrices at 1 B (core.memory.float8_gather)
    moe_keeps_expert_output: bool = False  # core <= 0.12 (activations.unsaved_expert_output_bytes)
    ep_a2a_overlap: bool = False  # Megatron's combined 1F1B: one layer's activations more (fused steady steps)
    embedding_loss_slots: bool = False
    """Megatron's account_for_embedding_in_pipeline_split + account_for_loss_in_pipeline_split: the first
    and last pipeline stages hold one decoder layer fewer (core.memory.model_states.slot_stage_span)."""
    deepspeed_bf16: bool = False  # core.frameworks.deepspeed_bf16_engine: its BF16_Optimizer under a pipeline (core.memory.bf16_optimizer)
    partition_activations: bool = False  # DeepSpeed's: checkpoints 1 / tp (core.comm.partition_activations)
    offload_layers: int = 0
    """Megatron-Core --cpu-offloading-num-layers: the saved activations of the first N layers go to host
    memory during forward and come back one layer ahead in backward (Transformer Engine's
    get_cpu_offload_context; at least one layer stays: TE requires N < the layers of the model chunk)."""


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

    @property
    def model_states(self):
        """Weights + master weights + optimizer states, bytes (not the gradients)."""
        return self.weights + self.master + self.optimizer


def _saved_per_token(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings, params: StageParams, kw):
    """Activation bytes per token a stage saves, with Megatron's block recompute of N layers per
    virtual chunk (the rest keep everything) and its selective modules (core.memory.recompute)."""
    modules, mode, cf = settings.recompute_modules, settings.recompute, settings.moe_capacity_factor
    if mode == "selective" and modules and "core_attn" not in modules:
        mode = "none"  # the attention core's own tensors stay (core.memory.recompute.discarded_bytes_per_token)

    def saved(recompute: str):  # + an expert-TP group's gathered routed tokens (core.memory.expert_gather)
        kept = recompute != "full" and "moe" not in (modules or ())  # Megatron's 'moe' module keeps only its input
        gathered = kept * params.moe_layers * gathered_routed_bytes_per_token(spec, layout, kw, cf)
        return gathered + A.saved_bytes_per_token(spec, settings.seq_len, params.layers, params.moe_layers,
                                                  recompute=recompute, sequence_parallel=layout.sequence_parallel,
                                                  capacity_factor=cf, **kw)
    per_token = saved(mode)
    if settings.recompute == "full" and settings.recompute_layers is not None:
        share = R.block_recompute_share(settings.recompute_layers, params.layers, layout.vpp)
        per_token = share * per_token + (1 - share) * saved("none")
    if settings.recompute == "selective" and modules:
        dense, routed = R.discarded_bytes_per_token(spec, modules, kw["compute_bytes"], settings.moe_capacity_factor,
                                                    kw["linear_input_bytes"], kw["keeps_expert_output"])
        per_token = per_token - ((params.layers - params.moe_layers) * dense + params.moe_layers * routed) / layout.tp
    return per_token / (layout.tp if settings.partition_activations and mode == "full" else 1)  # split over tp


def _stage_states(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings, recipe: PrecisionRecipe,
                  params: StageParams):
    """(model states, TE's cached low-precision weight bytes) of a stage: full training or LoRA / QLoRA,
    ZeRO-Offload's CPU optimizer, low-precision weights (core.memory.recipe_facts.weights_as_held)."""
    optimizer = lookup(OPTIMIZERS, settings.optimizer, "optimizer")
    layout = replace(layout, zero=scalar_or_array(F.states_zero(framework(settings.framework), layout.zero)))

    def held(at: ParallelLayout) -> ModelStates:  # the states under ``at``'s sharding
        if settings.finetune == "full":
            return model_state_bytes(params, at, recipe, optimizer, spec.hidden_size)
        adapters = RECIPES["fp32"] if framework(settings.framework).fp32_adapters else recipe
        return finetune_states(params, spec, at, settings, recipe, optimizer, adapters)
    states = replace(held(layout), master=0.0, optimizer=0.0) if settings.offload_optimizer else \
        BO.bf16_optimizer_states(held, layout, settings, recipe)  # DeepSpeed's bf16 ZeRO-0 pipeline
    return RF.weights_as_held(states, params, layout, recipe, settings)


def _activation_options(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings,
                        recipe: PrecisionRecipe) -> dict:
    """The keyword options core.memory.activations takes for this run (implementation, kernel, dtypes,
    dropout masks, autocast copies, LoRA adapters' inputs, TE's quantised linear inputs)."""
    autocast = recipe.autocast_weight_copies
    impl = settings.implementation
    if impl == "torchtitan" and settings.device == "cpu":
        impl = "torchtitan-cpu"  # torch.rms_norm decomposes off CUDA (core/memory/activations.py)
    lora = None
    if settings.finetune != "full":  # a frozen bf16 base: no fp32 residual stream, no weight copies;
        # each adapter keeps its input in the adapters' dtype (autocast: bf16, per module)
        fp32_adapters = framework(settings.framework).fp32_adapters
        adapter_input = 2 if autocast else (A.FP32 if fp32_adapters else recipe.compute_bytes)
        lora, autocast = (settings.lora_rank, adapter_input), False
    return dict(impl=impl, kernel=settings.attention_kernel, compute_bytes=recipe.compute_bytes, tp=layout.tp,
                dropout=spec.dropout if settings.dropout is None else settings.dropout, autocast=autocast,
                mask_bytes=1 if settings.device == "cuda" else recipe.compute_bytes, lora=lora,
                linear_input_bytes=settings.linear_input_bytes if settings.finetune == "full" else None,
                keeps_expert_output=settings.moe_keeps_expert_output)


def _working_set(spec: ModelSpec, layout: ParallelLayout, recipe: PrecisionRecipe, params: StageParams, profile,
                 stage, float8_gather: bool = False):
    """(unsharded working set bytes, pipeline-stage gradient bytes, params) in backward: FSDP / ZeRO-3's gathered
    units with the framework's prefetch, or a stage unsharded under PP (core.frameworks); params without an
    embedding that is its own FSDP unit (the step's buffers count the params so, as before)."""
    if profile.embedding_own_fsdp_unit:  # resharded after forward: not in backward's working set
        embedding = (np.asarray(stage) == 0) * spec.vocab_size * spec.hidden_size / layout.tp * declared_scale(spec)
        params = replace(params, root=params.root - embedding)
    working = fsdp_working_set_bytes(params, layout, recipe)
    working = working + (working > 0) * profile.zero3_prefetch_elements * recipe.compute_bytes
    stage_unsharded, stage_grads = F.pp_unsharded_stage_bytes(profile, layout, params.total, recipe.compute_bytes)
    layer, stage_saved = unsharded_float8_saving(spec, params, layout, recipe.compute_bytes, float8_gather)
    working, stage_unsharded = working - (working > 0) * layer, stage_unsharded - (stage_unsharded > 0) * stage_saved
    return np.maximum(working, stage_unsharded), stage_grads, params


def _loss_head_bytes(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings, recipe: PrecisionRecipe, out):
    """(saved per token, loss backward temporary per token, fixed loss bytes) of the LM head and loss by the
    run's loss (core.frameworks.loss_of); ``out``: activations.outside_layer_bytes (HF's hf-ce)."""
    saved, loss_per_token, loss_fixed = out.saved, out.backward_temp, 0.0
    loss = F.loss_of(settings)
    logits = recipe.compute_bytes * spec.vocab_size / layout.tp  # the bf16 logits HF's output object keeps
    if loss in ("fp32-ce", "vocab-parallel-ce"):  # logits not kept: the fp32 log-softmax only
        saved = out.saved - logits
        if loss == "vocab-parallel-ce":  # Megatron's backward works in place on its saved softmax:
            loss_per_token = logits  # only the bf16 gradient of the logits is new (cross_entropy.py)
        elif framework(settings.framework).loss_parallel:  # DTensor loss_parallel's backward (torch/distributed/
            # tensor/parallel/loss.py) holds one more fp32 vocab shard with tp > 1 (measured, torchtitan tp 2)
            loss_per_token = loss_per_token + (np.asarray(layout.tp) > 1) * A.FP32 * spec.vocab_size / layout.tp
    elif loss == "te-ce":  # TE's parallel_cross_entropy (transformer_engine/pytorch/cross_entropy.py): saves the
        # bf16 logits (+ per-token stats) and writes their gradient into them in backward: no fp32 softmax
        saved, loss_per_token = out.saved - A.FP32 * spec.vocab_size / layout.tp, 0.0
    elif loss == "compiled-ce":  # torch.compile'd cross_entropy(pred.float()) (torchtitan components/loss.py
        # @e7c0cae:27-29): the min-cut partitioner saves the bf16 logits + two fp32 per-token stats (measured, torch 2.13
        # aot_eager_decomp_partition; docs/memory.md) and backward writes one bf16 logits gradient
        saved, loss_per_token = out.saved - A.FP32 * spec.vocab_size / layout.tp + 2 * A.FP32, logits
    elif loss == "chunked":
        kept, loss_per_token, loss_fixed = F.chunked_loss_bytes(spec, layout.tp)
        saved = out.saved - logits - A.FP32 * spec.vocab_size / layout.tp + kept
    return saved, loss_per_token, loss_fixed


def stage_memory_parts(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings, stage) -> StageMemory:
    """Allocated bytes on one GPU of pipeline ``stage`` at the start of backward (all activations
    held, the loss gradient allocated) and inside optimizer.step() (gradients complete, step
    temporaries). ``layout``'s degrees and ``stage`` may be numpy arrays (many layouts)."""
    if settings.framework == "llmc":  # llm.c allocates each buffer once, as its code counts them (core.memory.llmc_memory)
        return StageMemory(**LM.stage_memory(spec, layout, settings.seq_len, settings.recompute,
                                             cudnn=settings.attention_kernel != "eager"))
    recipe = RF.recipe_as_run(lookup(RECIPES, settings.recipe, "recipe"), settings.grad_bytes,
                              settings.moment_bytes)
    params = stage_params(spec, layout, stage, settings.mtp_layers, settings.embedding_loss_slots)
    states, weight_cache = _stage_states(spec, layout, settings, recipe, params)
    tokens = layout.micro_batch * settings.seq_len / layout.cp
    profile = framework(settings.framework)
    kw = _activation_options(spec, layout, settings, recipe)
    impl, autocast = kw["impl"], kw["autocast"]
    if settings.recompute == "selective" and profile.selective == "op-sac":
        fused = F.op_sac_fused_qkv(spec, settings.framework, settings.op_sac_fused_qkv)  # the release's q/k/v
        per_token = params.layers * F.op_sac_bytes_per_token(spec, recipe.compute_bytes, layout.tp, fused_qkv=fused)
    else:
        per_token = _saved_per_token(spec, layout, settings, params, kw)
    per_token = per_token * (1 - RF.offloaded_share(settings.offload_layers, params.layers))
    micro_batches, combined = layout.micro_batches_per_step, settings.ep_a2a_overlap  # combined 1F1B: + one layer
    in_flight = A.pipeline_micro_batches_in_flight(layout.pp, layout.vpp, micro_batches, stage, combined, params.layers)
    activations = per_token * tokens * in_flight * settings.activation_scale
    fold, fold_temp = 0.0, 0.0
    if settings.finetune != "full" and peft_counts_experts(settings):  # peft's rebuilt expert weights (core.memory.lora_moe)
        fold, fold_temp = peft_fold_memory(spec, recipe.compute_bytes, params.moe_layers, in_flight, settings.recompute)
    activations = activations + fold
    last = stage == layout.pp - 1
    out = A.outside_layer_bytes(spec, impl=impl, compute_bytes=recipe.compute_bytes,
                                tp=layout.tp, autocast=autocast)
    saved, loss_per_token, loss_fixed = _loss_head_bytes(spec, layout, settings, recipe, out)
    heads = last * (1 + settings.mtp_layers)  # each MTP module computes logits and a loss of its own
    outside = heads * saved * tokens * settings.activation_scale
    loss_temp = heads * (loss_per_token * tokens * settings.activation_scale + loss_fixed)
    head = last * spec.vocab_size * spec.hidden_size / layout.tp * declared_scale(spec)
    # autocast keeps a bf16 copy of every matmul weight (LM head included) for backward
    weight_copies = params.matrices * recipe.fp8_weight_bytes + (params.matrices + head) * 2.0 * autocast + weight_cache
    working, stage_grads, params = _working_set(spec, layout, recipe, params, profile, stage,
                                                settings.fsdp_float8_all_gather)
    grads_in_forward = states.grads * np.logical_or(recipe.persistent_grads, micro_batches > 1) + stage_grads
    buckets = F.bucket_bytes(profile, layout, recipe.compute_bytes)
    resident = states.weights + states.master + states.optimizer + buckets
    backward_start = resident + grads_in_forward + working + activations + outside + loss_temp + weight_copies
    temporaries = loss_temp + weight_copies + buckets
    if settings.recompute == "full":  # later in backward: the loss gradient is gone, one layer recomputed
        layer = (A.recomputed_layer_bytes_per_token(spec, settings.seq_len, params.moe_layers, **kw)  # + its input
                 + (params.moe_layers > 0) * gathered_routed_bytes_per_token(spec, layout, kw, settings.moe_capacity_factor)
                 + settings.partition_activations * per_token * (layout.tp - 1) / np.maximum(params.layers, 1)) * tokens \
            * settings.activation_scale  # whole again under partition_activations (gathered, less its own 1 / tp)
        recomputing = backward_start - loss_temp + layer + fold_temp  # the recomputed layer is a temporary: the
        # printed parts sum to the peak at either moment (an 8B on 8 H100s left 545 MiB out, A8 w14)
        temporaries = np.where(recomputing > backward_start, temporaries - loss_temp + layer + fold_temp, temporaries)
        backward_start = np.maximum(backward_start, recomputing)
    else:  # the MoE layer being backpropagated: its peft dW' (and W' rebuilt under selective) once the loss is done
        extra = np.maximum(fold_temp - loss_temp, 0.0)
        backward_start, temporaries = backward_start + extra, temporaries + extra
    if settings.attention_kernel == "eager" and settings.recompute != "selective":
        held, attn_temp = eager_attention_backward(spec, recipe, layout, per_token, params.layers, tokens,
                                                   activations, outside, seq_len=settings.seq_len,
                                                   recompute=settings.recompute, scale=settings.activation_scale,
                                                   **kw)
        eager = resident + grads_in_forward + working + held + weight_copies + attn_temp
        later = eager > backward_start
        activations = np.where(later, held, activations)
        outside = np.where(later, 0.0, outside)
        temporaries = np.where(later, attn_temp + weight_copies + buckets, temporaries)
        backward_start = np.maximum(backward_start, eager)
    step_temp = 0.0
    if settings.finetune == "full" and not settings.offload_optimizer:  # the step's buffers (kernel) + fp32 grad copy
        step_temp = BO.optimizer_step_buffers(spec, params, layout, recipe, settings)
    return StageMemory(states.weights, grads_in_forward, states.grads, states.master, states.optimizer, activations,
                       outside, temporaries, step_temp + buckets, working, backward_start,
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


def peak_and_framework_gap(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings, overheads: Overheads,
                           share: float, fsdp2_pools: bool = False):
    """(allocated peak of the worst stage, bytes the fit rule keeps free above its reserved peak).
    The framework gap (device_memory.framework_gap_bytes: ``share`` of the reserved peak beyond the
    model states) is taken per stage, first and last, and the fit rule asks the worst of reserved +
    gap: the GPU a real run runs out of memory on. The second value is that worst minus the reserved
    peak of the largest allocated peak, so reserved(peak) + it is the worst stage's demand. The one
    definition `plan`'s search, `plan`'s chosen layout and `memory` use; degrees may be arrays.
    ``fsdp2_pools``: a ZeRO-3 stage's reserved peak is FSDP2's three stream pools (core.memory.fsdp_streams)."""
    first, last = (stage_memory_parts(spec, layout, settings, stage) for stage in (0, layout.pp - 1))
    peak = np.maximum(first.allocated, last.allocated)
    if not share and not fsdp2_pools:
        return plain(peak), plain(np.zeros(np.shape(peak)))
    compute_bytes = lookup(RECIPES, settings.recipe, "recipe").compute_bytes  # a published share (torchtitan's 0.116)
    hole = 0.0 if share else eager_loss_hole_of(spec, layout, settings, compute_bytes)  # was taken with the hole in it
    held = [np.where(np.asarray(layout.zero) == 3, stage_pool_bytes(spec, layout, s, stage, compute_bytes, False,
                     settings.mtp_layers, settings.embedding_loss_slots, hole), s.allocated)
            if fsdp2_pools else s.allocated for s, stage in ((first, 0), (last, layout.pp - 1))]
    demand = np.maximum(*(overheads.reserved_bytes(h) + framework_gap_bytes(overheads, share, h, s.model_states)
                          for h, s in zip(held, (first, last))))
    return plain(peak), plain(np.maximum(demand - overheads.reserved_bytes(peak), 0.0))


def plain(value):
    """A 0-d result as a Python float (scalar callers), arrays as they are (the planner)."""
    return float(value) if np.ndim(value) == 0 else value
