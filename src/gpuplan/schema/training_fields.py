"""Field groups the training jobs share (train, budget, plan, memory): the parallel layout a user
may fix, how the step runs, and the cluster and overlap knobs of the step model. Each field is a
vocabulary entry, so it means the same in every command that takes it."""

# No `from __future__ import annotations` here: pydantic then reads the fields' annotations as the
# objects they are, not as text it compiles and evaluates per field when the class is made (issue 39).

from typing import Annotated, Any

from pydantic import model_validator

from gpuplan.core.frameworks import MEGATRON_CORE_FRAMEWORKS, check_framework_runs
from gpuplan.errors import InputError
from gpuplan.schema import layout_rules as LR, te_kernels as TE, tp_comm_dtype as TC, types as T, vocabulary as V
from gpuplan.schema import precision_rules as PR
from gpuplan.schema import recompute_options as RO, shard_group as SG
from gpuplan.schema.base import JobInputs

DEFAULT_BATCH_TOKENS = 4 * 2**20
"""Llama 2 (arXiv:2307.09288 Sec. 2.2): "a global batch-size of 4M tokens"."""
DEFAULT_BATCH_TOKENS_PER_GPU = 1024
"""Where no batch is given, each GPU count's batch is at least this many tokens per GPU: runs past
4,096 GPUs scale the batch with the cluster — Llama 3 405B, 16M tokens on 8,192 and 16,384 H100
(arXiv:2407.21783 Table 4: 2,048 and 1,024 per GPU), MegaScale's GPT-3 175B, 6,144 x 2,048 tokens
on 12,288 GPUs (arXiv:2402.15627 Table 2: 1,024 per GPU). Below 4,096 GPUs the 4M default holds."""
LAYOUT_DEGREES = ("tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch")
FLEX_DISPATCH_FRAMEWORKS = ("generic", "megatron", "torchtitan")
"""Where a DeepEP / HybridEP dispatcher exists: Megatron-Core's moe_token_dispatcher_type "flex"
(megatron/core/transformer/moe/token_dispatcher.py), torchtitan's
parallelism.expert_parallel_comm_backend (torchtitan/distributed/deepep/). DeepSpeed-MoE and the
Hugging Face Trainer send tokens with plain all-to-all."""
FRAMEWORK_ONLY_OPTIONS = (
    # (field, the value that needs the framework (None: any value given), frameworks, what the option is)
    ("recompute_modules", None, ("megatron",), "is Megatron-Core's option"),
    ("recompute_layers", None, ("megatron",), "is Megatron-Core's option"),
    ("embedding_loss_slots", None, MEGATRON_CORE_FRAMEWORKS, "is Megatron-Core's pipeline split option"),
    ("grad_dtype", None, MEGATRON_CORE_FRAMEWORKS, "is Megatron-Core's gradient-buffer dtype (DDP "
     "grad_reduce_in_fp32); torchtitan's FSDP2 keeps gradients in the sharded parameters' dtype, DeepSpeed and the "
     "Trainer theirs"),
    ("moment_dtype", None, MEGATRON_CORE_FRAMEWORKS + ("torchtitan",), "is Megatron-Core's precision-aware optimizer "
     "(exp_avg_dtype / exp_avg_sq_dtype) or torchtitan's fused_opt_states_bf16"),  # cited: layout_rules.NOT_ADAM
    ("loss", "te-ce", MEGATRON_CORE_FRAMEWORKS, "is Transformer Engine's fused cross-entropy under Megatron-Core "
     "(cross_entropy_fusion_impl te)"),
    # Megatron-Core's --overlap-moe-expert-parallel-comm
    ("ep_a2a_overlap", None, MEGATRON_CORE_FRAMEWORKS, "is Megatron-Core's combined 1F1B schedule"),
    ("offload_layers", None, MEGATRON_CORE_FRAMEWORKS, "is Megatron-Core's --cpu-offloading-num-layers"),
)
"""Options one framework has: refused elsewhere with one line naming the field (schema's _framework_rules)."""

COMPILE_ELSEWHERE = {"megatron": "Transformer Engine's kernels are fused already",
                     "generic": "its elementwise model is fused already", "hf": "the Trainer's torch_compile is not modelled",
                     "deepspeed": "its compile is not modelled"}
"""Why --compile is refused outside torchtitan (the one line's reason)."""


class LayoutFields(SG.ShardGroupFields):  # + --shard-group, --partition-activations (schema.shard_group)
    """The degrees of a parallel layout and the batch. Given ones are fixed; the planner chooses
    the rest (``gpuplan memory``: 1 / none / ZeRO-1 when data-parallel)."""

    tp: V.Tp
    pp: V.Pp
    vpp: V.Vpp
    cp: V.Cp
    ep: V.Ep
    etp: V.Etp
    zero: V.ZeroStage
    micro_batch: V.MicroBatch
    recompute: V.Recompute
    recompute_modules: V.RecomputeModules
    recompute_layers: V.RecomputeLayers
    global_batch: V.GlobalBatch
    global_batch_tokens: V.GlobalBatchTokens

    @model_validator(mode="after")
    def _layout_rules(self) -> "LayoutFields":
        if self.vpp is not None and self.vpp > 1 and self.pp is not None and self.pp == 1:
            raise InputError("vpp", self.vpp, "needs pipeline parallelism (--pp > 1)")
        if self.recompute_modules is not None and self.recompute not in (None, "selective"):
            raise InputError("recompute_modules", ",".join(self.recompute_modules), "go with --recompute selective "
                             f"(not {self.recompute})")
        if self.recompute_layers is not None and self.recompute not in (None, "full"):
            raise InputError("recompute_layers", self.recompute_layers, f"go with --recompute full (not {self.recompute})")
        if self.recompute_modules is not None and self.recompute_layers is not None:
            raise InputError("recompute_layers", self.recompute_layers, "give --recompute-modules (selective) or "
                             "--recompute-layers (full), not both")
        seq_len = getattr(self, "seq_len", None)
        if self.global_batch_tokens is not None and seq_len and self.global_batch_tokens < seq_len:
            raise InputError("global_batch_tokens", self.global_batch_tokens, f"must hold at least one sequence of "
                             f"--seq-len {seq_len:,} tokens")
        if self.global_batch is not None and self.global_batch_tokens is not None:
            raise InputError("global_batch", self.global_batch, "give --global-batch (sequences) or "
                             "--global-batch-tokens, not both")
        given = self.global_batch if self.global_batch is not None else (
            self.global_batch_tokens / seq_len if self.global_batch_tokens is not None and seq_len else None)
        V.check_micro_batch(self.micro_batch, given, exact=self.global_batch is not None)
        V.check_step_tokens(getattr(self, "tokens", None), self.target_batch(seq_len) * seq_len if seq_len else None)
        return self

    def fixed_degrees(self) -> dict[str, int]:
        """The degrees the user gave (the planner searches the others)."""
        return {name: getattr(self, name) for name in LAYOUT_DEGREES if getattr(self, name) is not None}

    @property
    def layout_given(self) -> bool:
        return bool(self.fixed_degrees()) or self.recompute_given is not None

    @property
    def recompute_given(self) -> str | None:
        """The recompute mode asked for: --recompute, or the one --recompute-modules (selective) or
        --recompute-layers (full) imply; None = the planner's choice."""
        if self.recompute is not None:
            return self.recompute
        if self.recompute_modules is not None:
            return "selective"
        return "full" if self.recompute_layers is not None else None

    def recompute_settings(self) -> dict:
        """Recompute options as StepSettings / MemorySettings take them (schema.recompute_options)."""
        return RO.recompute_settings(self)

    def global_batch_tokens_value(self) -> float | None:
        """Tokens per step: --global-batch-tokens, or --global-batch x --seq-len; None = default."""
        if self.global_batch is not None:
            return float(self.global_batch * self.seq_len)  # type: ignore[attr-defined]
        return self.global_batch_tokens

    def target_batch(self, seq_len: int) -> float:
        """Sequences per step asked for (the planner rounds it to a multiple of dp); without a
        batch, the 4M-token default (at least one sequence), which ``batch_per_gpu`` raises on large clusters."""
        if self.global_batch is not None:
            return float(self.global_batch)
        return max(1.0, (self.global_batch_tokens or DEFAULT_BATCH_TOKENS) / seq_len)  # seq > 4M: 1, not 0.5

    def batch_per_gpu(self, seq_len: int) -> float:
        """Sequences per GPU the default batch holds at least at each GPU count (0 when a batch
        was given: it holds at every count)."""
        if self.global_batch is not None or self.global_batch_tokens is not None:
            return 0.0
        return DEFAULT_BATCH_TOKENS_PER_GPU / seq_len


class SetupFields(JobInputs):
    """How the step runs: precision recipe, activation implementation, optimizer, fine-tuning,
    and the memory kept free."""

    framework: V.Framework
    compile: V.Compile
    recipe: V.Recipe
    implementation: V.Implementation
    optimizer: V.Optimizer
    optimizer_impl: V.OptimizerImpl
    loss: V.Loss
    finetune: V.Finetune
    lora_rank: V.LoraRank
    margin: V.Margin
    allocator: V.Allocator
    grad_dtype: V.GradDtype
    moment_dtype: V.MomentDtype
    low_precision_weights: V.LowPrecisionWeights
    embedding_loss_slots: V.EmbeddingLossSlots
    offload_layers: V.OffloadLayers
    mtp_layers: V.MtpLayers

    def _framework_only_options(self) -> None:
        """FRAMEWORK_ONLY_OPTIONS: an option given under a framework that has no such setting."""
        for name, needs, frameworks, what in FRAMEWORK_ONLY_OPTIONS:
            value = getattr(self, name, None)
            given = value not in (None, False) if needs is None else value == needs
            if given and self.framework not in frameworks:
                shown = ",".join(value) if isinstance(value, tuple) else value
                raise InputError(name, shown, f"{what}: give --framework megatron (not {self.framework})")

    @model_validator(mode="after")
    def _framework_rules(self) -> "SetupFields":
        self._framework_only_options()
        if self.offload_layers:
            self._offload_rules()
        PR.check_precision(self)  # --low-precision-weights, --recipe fp8 against --dtype (schema.precision_rules)
        if self.compile and self.framework != "torchtitan":
            raise InputError("compile", True, f"is torchtitan's torch.compile per block: give --framework torchtitan "
                             f"(not {self.framework}: {COMPILE_ELSEWHERE.get(self.framework, 'not modelled')})")
        LR.check_setup(self)  # step facts and layouts the framework refuses or that change nothing (schema.layout_rules)
        check_framework_runs(self.profile, getattr(self, "recompute", None), self.dtype)
        from gpuplan.planner.framework_rules import check_data_parallel_only, check_fixed_options, check_zero_runs

        check_fixed_options(self.framework, self)  # llm.c: the setup options it runs one way only
        check_zero_runs(self.framework, getattr(self, "zero", None))  # llm.c: -z 0 or 1
        check_data_parallel_only(self.framework, self)  # llm.c, hf: no tp, pp, cp, ep
        zero, pp = getattr(self, "zero", None), getattr(self, "pp", None)
        limit = self.profile.max_zero_with_pp
        if zero is not None and pp is not None and pp > 1 and zero > limit:
            raise InputError("zero", zero, f"--framework {self.framework} runs pipeline parallelism with ZeRO "
                             f"0-{limit} only (give --zero {limit} or lower, or --pp 1)")
        if self.stated_otherwise("lora_rank") and self.finetune == "full":  # 16, the default: answered
            raise InputError("lora_rank", self.lora_rank, "applies to adapters: give --finetune lora or qlora "
                             "(full fine-tuning and pre-training train every weight)")
        if getattr(self, "ep_dispatcher", "alltoall") == "flex" and self.framework not in FLEX_DISPATCH_FRAMEWORKS:
            raise InputError("ep_dispatcher", "flex", f"--framework {self.framework} has no DeepEP / HybridEP "
                             f"dispatcher; frameworks that do: {', '.join(FLEX_DISPATCH_FRAMEWORKS)}")
        vpp = getattr(self, "vpp", None)
        if vpp is not None and vpp > 1 and not self.profile.interleaved_pipeline:
            raise InputError("vpp", vpp, f"--framework {self.framework} has no interleaved pipeline schedule "
                             "(plain 1F1B): give --vpp 1")
        return self

    def _offload_rules(self) -> None:
        """Megatron-Core's CPU activation offloading refuses pipelines and recompute (transformer_config.py
        __post_init__: "no support for Pipeline parallelism with CPU offloading", "CPU offloading does not work
        when activation recomputation is enabled": planner.framework_rules.CPU_OFFLOAD_PP / _RECOMPUTE)."""
        from gpuplan.planner.framework_rules import CPU_OFFLOAD_PP, CPU_OFFLOAD_RECOMPUTE

        if (getattr(self, "pp", None) or 1) > CPU_OFFLOAD_PP:  # (the framework: FRAMEWORK_ONLY_OPTIONS)
            raise InputError("offload_layers", self.offload_layers, "Megatron-Core offloads activations without "
                             "pipeline parallelism only: give --pp 1 or leave --offload-layers out")
        if getattr(self, "recompute_given", None) not in (None, CPU_OFFLOAD_RECOMPUTE):
            raise InputError("offload_layers", self.offload_layers, "Megatron-Core offloads activations only without "
                             "recompute: give --recompute none or leave --offload-layers out")

    @property
    def profile(self):
        """The framework profile (core.frameworks)."""
        from gpuplan.core.frameworks import framework

        return framework(self.framework)

    def adjust_spec(self, spec):
        """The model as this run trains it: the MTP modules the framework computes (core.model.mtp).
        Refuses options that cannot apply to this model (MoE all-to-all knobs on a dense model, a
        LoRA rank wider than the hidden size); an explicit --mtp-layers is taken as asked."""
        spec = super().adjust_spec(spec)  # the other field groups' checks (BudgetFields: --token-bytes)
        from dataclasses import replace

        from gpuplan.core.model.mtp import trained_mtp_layers
        from gpuplan.core.memory.recompute import module_applies
        from gpuplan.adapters.resolve import resolve_gpu
        from gpuplan.core.time.attention_core import fa1_refusal, runs_eager_only

        given = self.given
        LR.check_model(self, spec)
        if spec.moe is None:
            for name in ("ep_dispatcher", "ep_a2a_overlap", "ep_overlap", "moe_capacity_factor"):
                if self.stated_otherwise(name):  # a default (alltoall, False, 0, 1.0) is answered: unread here
                    raise InputError(name, getattr(self, name), f"applies to mixture-of-experts models; "
                                     f"{spec.name} is dense (no expert all-to-all)")
        if self.compile and not spec.is_dense_gated:  # the blocks core.time.titan_ops times
            raise InputError("compile", True, f"is timed with torchtitan's dense gated block (Llama-like); "
                             f"{spec.name} is {'mixture-of-experts' if spec.moe is not None else 'an ungated MLP'}: "
                             "leave --compile out")
        layers = getattr(self, "recompute_layers", None)
        chunks = (getattr(self, "pp", None) or 1) * (getattr(self, "vpp", None) or 1)
        most = -(-spec.num_layers // chunks)  # the largest chunk (uneven stages: the first take the remainder)
        if layers is not None and layers > most:
            where = f"the {most} layers of the largest pipeline chunk" if chunks > 1 else \
                f"the model's {spec.num_layers} layers"
            raise InputError("recompute_layers", layers, f"must be at most {where} (the first N of each virtual "
                             "chunk are recomputed)")
        for module in getattr(self, "recompute_modules", None) or ():
            if not module_applies(spec, module):
                raise InputError("recompute_modules", module, f"{spec.name} has no such part (moe_act / moe: routed "
                                 "experts; shared_experts: a shared expert; mla_up_proj: multi-latent attention; "
                                 "mlp: dense MLP layers)")
        kernel = getattr(self, "attention_kernel", None)
        if "attention_kernel" in given and kernel != "eager" and runs_eager_only(spec.model_type, self.framework,
                                                                                  self.implementation_name):
            flag = "framework" if self.framework == "hf" else "implementation"
            raise InputError("attention_kernel", kernel, f"transformers runs {spec.model_type} with eager attention "
                             f"only (_supports_sdpa = False) and --{flag} hf runs its modules: give eager (or leave "
                             f"it out), or --{flag} megatron / torchtitan")
        gpu = resolve_gpu(self.gpu) if kernel == "flash1" and getattr(self, "gpu", None) else None  # FA1's part
        fp8_attention, implementation = bool(getattr(self, "fp8_attention", False)), self.implementation_name
        if kernel == "flash1" and (why := fa1_refusal(spec, self.framework, gpu, fp8_attention, implementation)):
            raise InputError("attention_kernel", kernel, why)
        if self.finetune != "full" and self.lora_rank > spec.hidden_size:
            raise InputError("lora_rank", self.lora_rank, f"must be at most the hidden size {spec.hidden_size:,} "
                             "(an adapter's rank is below the widths it adapts)")

        if self.offload_layers >= spec.num_layers:
            raise InputError("offload_layers", self.offload_layers, f"must be below the model's {spec.num_layers} "
                             "layers (Megatron-Core keeps at least one on the GPU)")
        mtp = trained_mtp_layers(spec, self.profile.trains_mtp, self.mtp_layers)
        return spec if mtp == spec.mtp_layers else replace(spec, mtp_layers=mtp)

    def loss_for(self, spec) -> str | None:
        """The loss the run computes, for the step and the memory alike: --loss, else under megatron the
        model provider's cross_entropy_fusion_impl (core.time.megatron_ops.loss_impl, named by
        LOSS_OF_CROSS_ENTROPY: 'te' -> te-ce, 'native' -> vocab-parallel-ce), else None (the framework's:
        core.frameworks)."""
        if self.loss is not None or self.framework != "megatron":
            return self.loss
        from gpuplan.core.time.megatron_ops import LOSS_OF_CROSS_ENTROPY, loss_impl

        return LOSS_OF_CROSS_ENTROPY[loss_impl(spec)]

    @property
    def recipe_name(self) -> str:
        return self.recipe or self.profile.recipe

    @property
    def implementation_name(self) -> str:
        return self.implementation or self.profile.implementation

    @property
    def expandable_segments(self) -> bool:
        return (self.allocator or ("expandable" if self.profile.expandable_segments else "caching")) == "expandable"

    def recipe_memory_settings(self) -> dict:
        """MemorySettings fields a Megatron recipe sets: gradient-buffer and optimizer-moment bytes (None: the
        recipe's; fp16 under Megatron-Core: 2, core.memory.recipe_facts.default_grad_bytes), low-precision weights,
        activation offload and the embedding / loss pipeline slots."""
        from gpuplan.core.memory.recipe_facts import default_grad_bytes

        width = V.STATE_DTYPE_BYTES
        grads = default_grad_bytes(self.framework, self.dtype, self.recipe_name,
                                   width.get(self.grad_dtype))  # memory's --dtype too (jobs.memory.schema)
        return {"grad_bytes": grads, "moment_bytes": width.get(self.moment_dtype),
                "offload_layers": self.offload_layers, "low_precision_weights": self.low_precision_weights,
                "embedding_loss_slots": self.embedding_loss_slots, "fsdp_float8_all_gather": getattr(
                    self, "fsdp_float8_all_gather", False)}  # StepFields' field: absent from memory

    def overheads(self):
        from gpuplan.core.memory.device_memory import Overheads, fragmentation

        return Overheads(margin=self.margin,  # no caching allocator (llm.c): no fragmentation reserve
                         fragmentation=fragmentation(self.expandable_segments) * self.profile.caching_allocator)


Overlap = T.typed(float, T.number(0, 1, percent=True))  # '40%' read as other shares are


def _f(default: Any, help: str, shown: str | None = None) -> Any:
    return V.field(default, help, shown)


EpA2aOverlap = Annotated[T.Bool, _f(False, "MoE all-to-all under Megatron-Core's combined 1F1B schedule "
                                          "(--overlap-moe-expert-parallel-comm): each dispatch / combine runs beside "
                                          "the other micro-batch's compute, phase by phase; replaces --ep-overlap. "
                                          "Memory: one layer's activations more.")]
"""StepFields' and memory's (jobs.memory.schema) field: the one MemorySettings.ep_a2a_overlap both doors read."""


def check_combined_1f1b(inputs: Any, ep: int | None) -> None:
    """--ep-a2a-overlap's rules for any door that takes it (``ep``: the expert-parallel degree, None where the planner
    chooses it): expert parallelism, a pipeline only interleaved, no full recompute -- the layouts Megatron-Core
    refuses under its combined 1F1B (planner.framework_rules.combined_1f1b_runs; the search leaves them out)."""
    from gpuplan.planner.framework_rules import COMBINED_1F1B_REFUSED_RECOMPUTE

    if not inputs.ep_a2a_overlap:
        return
    if ep == 1:
        raise InputError("ep_a2a_overlap", True, "needs expert parallelism (--ep > 1): with --ep 1 there is no "
                         "all-to-all")
    pp, vpp = getattr(inputs, "pp", None), getattr(inputs, "vpp", None)  # memory: a vpp not given is 1
    if (pp or 1) > 1 and (vpp or 1) == 1 and (vpp is not None or getattr(inputs, "unstated_degrees_are_one", False)):
        raise InputError(*(("vpp", vpp) if vpp else ("ep_a2a_overlap", True)), f"--ep-a2a-overlap (Megatron-Core's "
                         f"combined 1F1B) runs a pipeline only interleaved: give --vpp 2 or more with --pp {pp}, or --pp 1")
    if getattr(inputs, "recompute_given", None) in COMBINED_1F1B_REFUSED_RECOMPUTE:
        name = "recompute" if getattr(inputs, "recompute", None) is not None else "recompute_layers"
        raise InputError(name, getattr(inputs, name), "Megatron-Core refuses full recompute under --ep-a2a-overlap "
                         "(combined 1F1B): give --recompute none or selective, or leave --ep-a2a-overlap out")


class StepFields(TC.TpCommFields):  # + --tp-comm-dtype (schema.tp_comm_dtype)
    """The cluster and the overlap knobs of the step model (core/time/step.py, core/comm/topology.py)."""

    gpus_per_node: Annotated[V.GpusPerNode | None, _f(None, "GPUs per node (the scale-up domain), 1 to 8,960.",
                                                         "catalog")]
    nic_gbit_per_gpu: Annotated[T.typed(float, T.number(1, 1e5)) | None, _f(
        None, "Scale-out Gb/s per GPU (1 to 100,000).", "catalog, else 400")]
    dp_overlap: Annotated[Overlap, _f(0.9, "Cap on the share of DP/FSDP communication hidden, applied only when "
                                      "given; DeepSpeed hides none below ZeRO-3 (overlap_comm: no input).", "no cap")]
    tp_overlap: Annotated[Overlap | None, _f(
        None, "Share of TP communication hidden behind compute (with --tp-comm-overlap: of the chunk left exposed).",
        "the framework's: megatron 0.25 (TE's async backward reduce-scatters; 2/12 under full recompute), else 0")]
    ep_overlap: Annotated[Overlap, _f(0.0, "Share of the expert-parallel all-to-all hidden behind compute (Megatron "
                                           "--overlap-moe-expert-parallel-comm, DualPipe-style schedules).")]
    ep_dispatcher: V.EpDispatcher
    ep_a2a_overlap: EpA2aOverlap
    fp8_recipe: V.Fp8Recipe
    fp8_attention: TE.Fp8Attention
    fsdp_float8_all_gather: V.FsdpFloat8AllGather  # torchtitan's (memory's too: jobs.memory.schema)
    moe_expert_kernels: TE.MoeExpertKernels
    full_iteration_graph: TE.FullIterationGraph
    cuda_graph_scope: TE.CudaGraphScope
    flex_backend: TE.FlexBackend
    tp_comm_overlap: Annotated[T.Bool, _f(False, "TP collectives chunked and pipelined with their GEMMs (Megatron "
                                                 "--tp-comm-overlap / TE userbuffers, torchtitan async TP): "
                                                 "(1 - --tp-overlap) / tp of the TP time stays exposed.")]
    attention_efficiency: Annotated[T.Efficiency | None, _f(None, "Attention kernel efficiency of the dense peak.",
                                                          "per GPU type")]
    attention_kernel: V.AttentionKernel
    sequence_parallel: V.SequenceParallel
    grad_all_reduce: V.GradAllReduce

    def node_accelerator(self, gpu: Any) -> Any:
        """``gpu`` with --gpus-per-node as its node size when given: the I/O, checkpoint and spot
        lines count nodes with it, as the step model does (they said 8 per node before)."""
        from dataclasses import replace

        return gpu if self.gpus_per_node is None else replace(gpu, devices_per_node=self.gpus_per_node)

    @model_validator(mode="after")
    def _ep_options(self) -> "StepFields":
        if self.ep_a2a_overlap and "ep_overlap" in self.given:
            raise InputError("ep_overlap", self.ep_overlap, "--ep-a2a-overlap replaces it (the combined 1F1B "
                             "schedule times the overlap itself): give one of the two")
        check_combined_1f1b(self, getattr(self, "ep", None))  # memory's too (jobs.memory.schema)
        if getattr(self, "ep", None) == 1 and self.ep_dispatcher != "alltoall" and "ep_dispatcher" in self.given:
            raise InputError("ep_dispatcher", self.ep_dispatcher, "needs expert parallelism (--ep > 1): with --ep 1 "
                             "there is no all-to-all")
        return self

    @model_validator(mode="after")
    def _fp8_recipe_needs_fp8(self) -> "StepFields":
        PR.check_fp8_recipe(self)  # --fp8-recipe mxfp8 needs --dtype fp8 (schema.precision_rules, memory's too)
        TE.check_kernel_fields(self)
        return self

    def kernel_step_settings(self) -> dict:
        """StepSettings fields of the Transformer Engine kernel choices (schema.te_kernels)."""
        return TE.step_settings_of(self) | self.tp_comm_settings()  # + CUDA-graph scope, flex backend, TP comm dtype
