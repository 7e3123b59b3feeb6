"""The step model's settings: efficiency knobs (catalog defaults, calibratable) and the run's step shape
(core.time.step.step_time reads them; re-exported from core.time.step, their old home)."""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core.comm.dp_costs import ParamGather
from gpuplan.core.comm.moe_overlap import EP_COMM_SM_SHARE
from gpuplan.core.time.low_precision import BLOCK_SCALED_GEMM_TIME_FACTOR


@dataclass(frozen=True)
class StepSettings:
    """Efficiency knobs (catalog defaults, calibratable) and the run's step shape."""

    seq_len: int = 4096
    recompute: str = "none"
    recompute_layers: int | None = None
    """With recompute 'full': Megatron's block method, the first N layers of each virtual pipeline
    chunk (--recompute-num-layers; core.memory.recompute); None = every layer."""
    recompute_modules: tuple[str, ...] = ()
    """With recompute 'selective' under Megatron: --recompute-modules (core.memory.recompute); () = core_attn."""
    dtype: str = "bf16"
    gemm_d_half: float = 512.0
    """GEMM dimension at which efficiency is half of MAMF (saturating shape model; fitted with
    the attention efficiency, see ATTENTION_EFFICIENCY)."""
    attention_efficiency: float | None = None
    """Executed attention FLOPs / peak; None = the accelerator's default (ATTENTION_EFFICIENCY)."""
    hbm_efficiency: float = 0.75
    elementwise_factor: float = 6.0
    """HBM bytes moved by elementwise ops per byte of saved activations (fitted, see above)."""
    dp_overlap: float = 0.9
    """Fraction of DP/FSDP communication that bucketing and prefetch can hide behind compute (a cap
    on top of dp_schedule's; 1.0 = the schedule's alone)."""
    dp_schedule: str = "megatron"
    """Order in which the framework issues its data-parallel collectives (core.comm.dp_overlap):
    'megatron', 'fsdp2', 'ddp' or 'deepspeed'."""
    zero3_regathers: bool = False
    """The framework gathers ZeRO-3 parameters again for the recomputed forward (DeepSpeed; FSDP
    does not): core/comm/zero3_gathers.py."""
    zero3_overlap: float | None = None
    """Fraction of ZeRO-3 communication hidden behind compute when the framework's own figure
    differs from dp_overlap (DeepSpeed's hook-driven fetches, core/frameworks.py); None = dp_overlap."""
    tp_overlap: float = 0.0
    """Megatron TP collectives sit on the critical path unless TP comm overlap is enabled."""
    tp_synchronous: bool = False
    """--tp-overlap 0 stated: nothing hides a TP collective, the output layer's backward ones included (the GPT-NeoX
    v1.0 rows: its mappings' synchronous ``_reduce``, mappings.py L110-124), where Megatron-Core's own output layer
    would hide them beside its GEMMs (core.comm.embedding_tp)."""
    tp_comm_overlap: bool = False
    """TP collectives split into tp chunks and pipelined with the GEMMs they feed: Transformer
    Engine userbuffers (Megatron --tp-comm-overlap; ring-exchange all-gather / reduce-scatter,
    transformer_engine/pytorch/module/base.py initialize_ub) and PyTorch async TP
    (torch.ops.symm_mem.fused_all_gather_matmul / fused_matmul_reduce_scatter, torchtitan
    enable_async_tensor_parallel). The local chunk's GEMM runs while the remote chunks arrive, so
    one chunk in tp stays exposed: TP time x 1/tp (x (1 - tp_overlap) on top); torchtitan: core.comm.async_tp."""
    ep_overlap: float = 0.0
    """Share of the EP all-to-all hidden behind compute (a plain fraction; see ep_a2a_overlap)."""
    ep_a2a_overlap: bool = False
    """Megatron-Core's combined 1F1B schedule (--overlap-moe-expert-parallel-comm): each
    all-to-all runs beside the other micro-batch's compute, phase by phase (core.comm.moe_overlap);
    replaces ep_overlap."""
    shared_experts_before_dispatch: bool = True
    """Under ep_a2a_overlap: the combined schedule's attention node runs the shared experts (Megatron-Core 0.16 on,
    the version core.frameworks profiles); False: its MLP node does (core 0.14 / 0.15): core.comm.moe_overlap."""
    moe_launch: str = "none"
    """How a MoE layer is issued (core.time.moe_host): 'eager' charges the host time its dispatcher's sync exposes."""
    moe_router_graphs: bool = True
    """Under moe_launch 'eager': the router and the dispatcher's preprocessing replay as Transformer Engine CUDA
    graphs (Megatron-Core cuda_graph_scope 'moe_router' + 'moe_preprocess', the layout MOE_LAYER_HOST_SECONDS was
    fitted on); False: issued op by op from Python (core.time.moe_host.ungraphed_router_seconds)."""
    flex_backend: str = "hybridep"
    """Under ep_dispatcher 'flex': 'hybridep' (pads each expert's rows in its dispatch kernel) or 'deepep' (does
    not, so Megatron-Core's Fp8Padding copies the routed rows under FP8: core.time.moe_layer.pads_for_quantization)."""
    fp8_attention: bool = False  # FP8 attention core: core.time.low_precision.fp8_attention_seconds
    moe_expert_kernels: str = "per-expert"
    """Where moe_launch is not 'none': 'per-expert' (TE GroupedLinear's quantisation and cuBLAS GEMM per local expert,
    each with its fixed GPU time: core.time.moe_layer) or 'fused' (one kernel for all experts)."""
    ep_comm_sm_share: float = EP_COMM_SM_SHARE
    """Share of the SMs the dispatcher kernels hold while they run beside compute."""
    nccl_sm_share: float | None = None
    """Share of the SMs an NCCL collective holds while it runs beside compute (data-parallel
    gathers and reductions: core.comm.dp_overlap); None = the part's (core.comm.collectives.nccl_sm_share)."""
    eager_fallbacks: tuple[str, ...] = ()
    """Megatron-Core paths the run takes as eager ops where the model has them: 'expert-bias',
    'yarn-rope', 'clamped-glu', 'unfused-bda' (core.time.eager_fallbacks); () for fused kernels or another framework."""
    expert_tp: int | str | None = None
    """Expert tensor parallelism: None = tp (Megatron-Core's default for --expert-tensor-parallel-size); the
    framework's or --etp (core.expert_layout.expert_tp_for, which sets the memory layout's etp too; torchtitan's
    rule 'tp-without-ep' resolved per layout by resolved_expert_tp)."""
    ep_dispatcher: str = "alltoall"
    """'alltoall' (NCCL all-to-all: one copy per remote expert) or 'flex' (DeepEP / HybridEP: one
    copy per remote node, then NVLink), core/comm.expert_all_to_all_time."""
    dp_bucket_params: float | None = None
    """Parameters a Megatron-Core gradient bucket holds where the framework sets the size (NeMo 2 / Megatron-Bridge:
    core.comm.dp_overlap.NEMO_BUCKET_PARAMS); None = Megatron-Core's default max(40M, 1M x dp)."""
    grad_comm_bytes: float = 2.0
    """Bytes per gradient element on the wire (bf16 = 2; fp32 reduction = 4)."""
    param_gather: ParamGather = ParamGather()  # bytes an element, overlapped or not (core.comm.dp_costs.ParamGather)
    finetune: str = "full"
    """'full', or 'lora'/'qlora': a frozen base (no weight-gradient matmuls, gradients and
    optimizer step for the adapters only; core/model/finetune.py)."""
    lora_rank: int = 16
    implementation: str = "megatron"
    """Whose kernels the elementwise work follows (core.memory.activations): 'megatron' (fused: TE,
    torch.compile) or an eager implementation ('torchtitan', 'hf') that moves more bytes."""
    selective: str = "core-attn"
    """What --recompute selective re-runs (the framework's, core.frameworks): 'core-attn'
    (Megatron: the attention core) or 'op-sac' (torchtitan: every other matmul and all
    elementwise work of the forward; attention outputs are saved)."""
    op_sac_fused_qkv: bool | None = None  # op-sac: q/k/v one mm or three (core.frameworks); None: the spec's
    attention_kernel: str = "flash"
    """'flash' (fused) or 'eager' (unfused: Megatron-LM 2021, transformers): core.time.attention_core."""
    attention_dropout: float = 0.0
    """Attention dropout probability (eager kernels move a mask and a dropped copy)."""
    fp8_recipe: str = "tensorwise"
    """FP8 scaling of the linears when dtype is 'fp8': 'tensorwise' (per-tensor current scaling: TE
    Float8CurrentScaling, torchao tensorwise), 'delayed' (TE DelayedScaling: timed as 'tensorwise' but for
    core.time.moe_layer's per-expert quantisers, none: QUANTIZE_KERNELS_PER_CALL; the NeMo 25.02 B200 Mixtral
    rows, published_throughput.FP8_RECIPE) or 'mxfp8' (MX 32-element block scaling, Blackwell-class parts):
    FP8_CAST_BYTES_PER_ELEMENT vs MXFP8_CAST_BYTES_PER_ELEMENT and block_scaled_gemm_time_factor."""
    block_scaled_gemm_time_factor: float = BLOCK_SCALED_GEMM_TIME_FACTOR
    """GEMM time of a block-scaled GEMM (MXFP8, NVFP4) / a per-tensor FP8 one at the same shape and
    peak (fitted, BLOCK_SCALED_GEMM_TIME_FACTOR)."""
    eager_ops: object | None = None
    """An eager stack's op profile (core.time.op_profile.EagerOps: what Hugging Face transformers
    dispatches, read from its code): the step is then timed op class by op class with host time
    (core.time.eager_step); None: the fused model of this module."""
    optimizer_impl: str = "foreach"
    """torch.optim.AdamW's implementation under eager_ops (core.time.optimizer)."""
    param_bytes: float = 2.0
    """Bytes per trained parameter and optimizer-state element under eager_ops (bf16 2, amp 4)."""
    eager_factors: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
    """Calibrated ratios of the eager step's (matmul, attention, memory-bound, host) seconds."""
    titan_ops: object | None = None
    """torchtitan's op list, eager or compiled (core.time.titan_ops.TitanOps); None: elementwise_factor's model."""
    te_cp_ring: bool = True
    """Context parallelism runs Transformer Engine's p2p ring (AttnFuncWithCPAndKVP2P: Megatron-Core's default
    cp_comm_type, so the NeMo / Megatron-Bridge rows and --framework megatron): its own kernels
    (core.time.context_parallel.ring_kernels) beside the fitted element-wise factor. False for the frameworks that
    do not run it (--framework deepspeed: Ulysses all-to-all; generic: framework-neutral), which pay the ring's
    transfers only (core.comm.step_comm). torchtitan runs torch's ring (its op list's branch: this is not read),
    whose merge is not charged (docs/step.md)."""
    megatron_ops: object | None = None
    """Megatron-Core + TE's op list (core.time.megatron_ops.MegatronOps); None: elementwise_factor's model."""
    offload_layers: int = 0
    """Megatron-Core's CPU activation offloading of the first N layers (--cpu-offloading-num-layers; TE's
    async offload handler): the copies' exposed part, core.time.activation_offload; 0: none."""
    megatron_loss: str | None = None
    """Under elementwise_factor's model: Megatron's vocab-parallel loss on the last stage, 'te' or 'native'
    (core.time.megatron_ops.loss_seconds; loss_impl names the provider's); None: no loss term."""
    sequence_parallel: bool = True  # False: norms and residual adds whole on every TP rank, all-reduce (core.time.sequence_parallel)
    grad_all_reduce: bool = False  # ZeRO-1 gradients all-reduced in full, then the shards gathered (core.comm.dp_costs)
    tp_comm_bytes: float = 2.0  # bytes an element the TP collectives move: 4 = GPT-NeoX's fp32_allreduce (core.comm.tp_comm_dtype)
    partition_activations: bool = False  # DeepSpeed's: checkpoints split over tp, gathered before recompute (core.comm.partition_activations)
    embedding_grad_add: bool = False
    """Megatron-Core's DDP adds the untied embedding's dense gradient into main_grad every micro-batch (NeMo 2 /
    Megatron-Bridge, --framework megatron): core.time.megatron_grad_passes."""
    per_token_loss: bool = False
    """calculate_per_token_loss: the gradient buffer scaled by 1 / tokens once a step (core.time.megatron_grad_passes)."""
    deepspeed_bf16: bool = False
    """DeepSpeed's engine in bf16 (core.frameworks.deepspeed_bf16_engine): its BF16_Optimizer adds each micro-batch's
    gradients into its own copy in a pass of its own at ZeRO <= 1 (core.time.optimizer.BF16_OPTIMIZER_MAX_ZERO)."""
