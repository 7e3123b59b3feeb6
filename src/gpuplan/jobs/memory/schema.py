"""The inputs of ``gpuplan memory``: a model, a layout, how the step runs, and the overheads."""

# No `from __future__ import annotations` here: pydantic then reads the fields' annotations as the
# objects they are, not as text it compiles and evaluates per field when the class is made (issue 39).

from typing import Annotated

from pydantic import model_validator

from gpuplan.errors import InputError
from gpuplan.schema import te_kernels as TE
from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V
from gpuplan.schema.model_fields import ModelFields
from gpuplan.schema.precision_rules import check_fp8_recipe, dtype_gap
from gpuplan.schema.list_field import ListRule, list_schema, read_list
from gpuplan.schema.shard_group import check_shard_group
from gpuplan.schema.training_fields import EpA2aOverlap, LayoutFields, SetupFields, check_combined_1f1b

GiB = 2**30
DEFAULT_VERDICT_GPUS = ("a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm", "h200-sxm", "b200", "mi300x")


COMPARE = ListRule("compare", "GPU names separated by commas, e.g. h100,b200", "GPU names",
                   lambda name: T.name(name, None), 64, key=str.lower)
"""--compare's list (schema.list_field's rules): 'a100,' / 'a100,,h100' refused naming the empty entry, and a name
given twice ('a100,A100') naming it (the verdict table kept it once, silently). Another spelling of one GPU
('h100,h100-sxm') is one row of the table (the estimate resolves the names)."""


def _gpu_list(value, info) -> tuple[str, ...]:
    return read_list(value, COMPARE)


def next_interleaved_micro_batches(pp: int, micro_batches: int) -> int:
    """The smallest micro-batch count m' >= ``micro_batches`` that torch.distributed.pipelining's
    ScheduleInterleaved1F1B runs on ``pp`` stages: m' a multiple of its rounds max(1, m' // pp) (torch 2.13
    torch/distributed/pipelining/schedules.py L2935-2942, as planner.framework_rules.torch_pipeline_runs).
    Every multiple of pp qualifies, so the walk ends by the next one."""
    m = micro_batches
    while m % max(1, m // pp):
        m += 1
    return m


def _f(default, help: str, shown: str | None = None):
    return V.field(default, help, shown)


class MemoryInputs(ModelFields, LayoutFields, SetupFields):
    """A model, a layout and how the step runs. ``gpus`` fixes the world size (dp is derived)."""

    gpu: V.Gpu
    compare: Annotated[T.typed(tuple[str, ...], _gpu_list, list_schema({"type": "string"}, 64)),
                       _f(DEFAULT_VERDICT_GPUS, "GPUs for the verdict table, separated by commas.")]
    gpus: V.GpuCount
    dtype: V.Dtype  # train's and plan's fields: the same peak, the same memory settings (jobs.memory.settings)
    fp8_recipe: V.Fp8Recipe
    fsdp_float8_all_gather: V.FsdpFloat8AllGather
    seq_len: V.SeqLen
    dp: Annotated[V.Degree | None, _f(None, "Data-parallel degree (when --gpus is not given).", "gpus / (tp·pp·cp)")]
    sequence_parallel: V.SequenceParallel
    attention_kernel: V.AttentionKernel
    dropout: Annotated[T.typed(float, T.number(0, 0.99)) | None, _f(None, "Dropout probability (masks are saved "
                                                                       "when > 0).", "the model config's")]
    offload_optimizer: Annotated[T.Bool, _f(False, "Optimizer states and master weights on the CPU "
                                                   "(ZeRO-Offload).")]
    moe_capacity_factor: Annotated[T.typed(float, T.number(1, 16)), _f(1.0, "MoE expert capacity factor "
                                                                            "(1.0 = dropless, no padding).")]
    cuda_context_gib: Annotated[V.Gib, _f(0.5, "CUDA context + cuBLAS workspaces, GiB per GPU.")]
    comm_buffer_gib: Annotated[V.Gib | None, _f(None, "NCCL buffers per communicator in use, GiB per GPU.",
                                                "by GPU type and group size")]
    ep_dispatcher: V.EpDispatcher
    ep_a2a_overlap: EpA2aOverlap  # train's field: one layer more (combined 1F1B; jobs.memory.settings reads it)
    flex_backend: TE.FlexBackend  # plan's field: the same default (DeepEP), so both count the same buffers
    calibration: V.Calibration

    def _check_compared_recipe(self) -> None:
        """A --compare part with no path for the recipe's compute dtype (core.precision.check_recipe_runs_on, the rule
        --gpu meets in jobs.memory.estimate) is refused naming compare: `--gpu h100 --compare a100,h100 --recipe fp8`
        printed an A100 row (and a tpu-v5p one) where `--gpu a100 --recipe fp8` is refused (wave 18). The default
        table (compare not given) keeps its rows, as schema.device_rules.check_device does."""
        from gpuplan.core.precision import RECIPE_COMPUTE_DTYPE
        from gpuplan.schema.device_rules import accelerator

        if "compare" not in self.given:
            return
        dtype = RECIPE_COMPUTE_DTYPE.get(self.recipe_name)
        for name in self.compare:
            part = accelerator(name)
            if part is None:
                continue
            if dtype is not None and not part.has_dtype(dtype):
                raise InputError("compare", name, f"{part.name} has no {dtype} path for --recipe {self.recipe_name} "
                                 f"(it has {', '.join(d for d, _ in part.peak_flops)}): leave it out, or choose "
                                 "another --recipe")
            gap = dtype_gap(part, self.dtype, self.fp8_recipe)  # the rule --gpu meets (precision_rules)
            if gap is not None:  # a dtype not typed is said as the default it is (not '--dtype bf16', never typed)
                what = "MX block-scaled tensor cores for --fp8-recipe mxfp8" if gap == "mx" else \
                    f"{self.dtype} path for --dtype {self.dtype}" if "dtype" in self.given else \
                    f"{self.dtype} path, the compute dtype when --dtype is not given"
                raise InputError("compare", name, f"{part.name} has no {what} (it has "
                                 f"{', '.join(d for d, _ in part.peak_flops)}): leave it out, or choose another "
                                 f"--{'dtype' if gap == 'dtype' else 'fp8-recipe'}")

    @property
    def unstated_degrees_are_one(self) -> bool:
        """tp / pp not given are 1 here, not the planner's (schema.layout_rules.check_setup reads it)."""
        return True

    @model_validator(mode="after")
    def _consistent(self) -> "MemoryInputs":
        if self.global_batch_tokens is not None:
            raise InputError("global_batch_tokens", self.global_batch_tokens, "memory takes --global-batch "
                             "(sequences per step)")
        if self.gpus is not None and self.dp is not None and self.dp * self.rest != self.gpus:
            raise InputError("dp", self.dp, f"conflicts with --gpus {self.gpus}: dp x tp x pp x cp = "
                             f"{self.dp * self.rest}; give one of --gpus and --dp")
        if (self.vpp or 1) > 1 and (self.pp or 1) == 1:
            raise InputError("vpp", self.vpp, "needs pipeline parallelism (--pp > 1)")
        check_combined_1f1b(self, self.ep or 1)  # --ep-a2a-overlap's rules, as train's (schema.training_fields)
        if self.ep_dispatcher == "flex" and (self.ep or 1) == 1:
            raise InputError("ep_dispatcher", "flex", "needs expert parallelism (--ep > 1): with --ep 1 there is no "
                             "all-to-all")
        self._check_compared_recipe()
        check_fp8_recipe(self)  # --fp8-recipe mxfp8 needs --dtype fp8, as train / plan (schema.precision_rules)
        stated = self.stated_otherwise("flex_backend", TE.DEFAULT_FLEX_BACKEND)  # deepep, the default: answered
        if stated and self.framework not in TE.MEGATRON_CORE_FRAMEWORKS:  # as train / plan
            raise InputError("flex_backend", self.flex_backend, f"is a Transformer Engine / Megatron-Core path: give "
                             f"--framework megatron (not {self.framework})")
        if stated and self.ep_dispatcher != "flex":
            raise InputError("flex_backend", self.flex_backend, "is the backend of the flex dispatcher: give "
                             "--ep-dispatcher flex (not alltoall), or leave --flex-backend out")
        return self

    @property
    def rest(self) -> int:
        """GPUs per data-parallel replica: tp x pp x cp."""
        return (self.tp or 1) * (self.pp or 1) * (self.cp or 1)

    def layout(self):
        """The ParallelLayout (dp from --gpus when given); when data-parallel, the framework's sharding
        by default (torchtitan FSDP2: ZeRO-3; megatron's distributed optimizer, deepspeed, generic:
        ZeRO-1; hf Trainer's DDP: none)."""
        from gpuplan.core.expert_layout import expert_layout_fields
        from gpuplan.core.parallel import ParallelLayout

        if self.gpus is not None:
            if self.gpus % self.rest:
                raise InputError("gpus", self.gpus, f"must be a multiple of tp x pp x cp = {self.rest}")
            dp = self.gpus // self.rest
        else:
            dp = self.dp or 1
        cp = self.cp or 1
        zero = self.zero if self.zero is not None else (self.profile.default_zero if dp * cp > 1 else 0)
        # ZeRO 0 included: the framework's own stages named (schema.shard_group; the framework's default stage)
        check_shard_group(self.framework, zero, self.shard_group, default=self.zero is None, fixed_layout=True)
        if self.comm_buffer_gib is not None and dp * self.rest == 1:  # the same peak with or without it (wave 21)
            raise InputError("comm_buffer_gib", self.comm_buffer_gib, "sizes NCCL's buffers between GPUs: one GPU "
                             "(dp x tp x pp x cp = 1) has no communicator; give --gpus > 1, or leave it out")
        layout = ParallelLayout(dp=dp, tp=self.tp or 1, pp=self.pp or 1, vpp=self.vpp or 1, cp=cp, ep=self.ep or 1,
                                zero=zero, shard_group=self.shard_group, micro_batch=self.micro_batch or 1,
                                global_batch=self.global_batch, sequence_parallel=self.sequence_parallel,
                                **expert_layout_fields(self.framework, self.etp))  # core.expert_layout
        self._check_schedule(layout)
        return layout

    def _check_schedule(self, layout) -> None:
        """The pipeline schedule runs the step's micro-batches (global batch / (dp x micro-batch)), as `plan`,
        `train` and `budget` ask of every layout (planner.space; hostile w15: `memory --pp 8 --vpp 2 --global-batch
        4` answered a layout those refuse): Megatron-Core's interleaved schedule needs at least pp of them
        (framework_rules.interleaved_runs), torchtitan's torch.distributed.pipelining schedules theirs
        (framework_rules.torch_pipeline_runs). A batch dp x micro-batch does not divide is check_layout's."""
        from gpuplan.planner.framework_rules import interleaved_runs, rules_for, torch_pipeline_runs

        per_step = layout.micro_batch * layout.dp
        if layout.global_batch is None or layout.pp == 1 or layout.global_batch % per_step:
            return
        m = layout.global_batch // per_step
        least = f"at least {layout.pp * per_step:,}{f' (a multiple of {per_step:,})' if per_step > 1 else ''}"
        combined = self.ep_a2a_overlap  # the combined 1F1B: a multiple of pp (planner.space, as train / plan)
        if layout.vpp > 1 and (self.profile.interleaved_needs_pp_micro_batches or combined) and \
                not interleaved_runs(layout.pp, layout.vpp, m, combined):
            why = (f": Megatron-Core's interleaved schedule needs {'a multiple of' if combined else 'at least'} pp "
                   "micro-batches a step (schedules.py@core_v0.15.0 L975-993" + (
                       "; --ep-a2a-overlap runs the default group size pp)" if combined else ")"))
            least = f"a multiple of {layout.pp * per_step:,}" if combined else least
        elif rules_for(self.framework).torch_pipelining and not bool(torch_pipeline_runs(layout.pp, layout.vpp, m)):
            if layout.vpp > 1:  # m >= pp here (below pp one round always runs): "at least pp" is met already
                valid = next_interleaved_micro_batches(layout.pp, m)
                why = (f", not a multiple of its {max(1, m // layout.pp)} rounds (m // pp): torch.distributed."
                       "pipelining's ScheduleInterleaved1F1B refuses it (torch 2.13 schedules.py L2935-2942)")
                least = f"{valid * per_step:,} ({valid:,} micro-batches)"
            else:
                why = (": torch.distributed.pipelining's Schedule1F1B refuses it (torch 2.13 schedules.py L1020-1024: "
                       "it needs at least pp micro-batches)")
        else:
            return
        raise InputError("global_batch", self.global_batch, f"gives {m:,} micro-batch{'es' if m != 1 else ''} a step "
                         f"(global_batch / (dp {layout.dp} x micro_batch {layout.micro_batch})) for pp {layout.pp}"
                         f"{f' x vpp {layout.vpp}' if layout.vpp > 1 else ''}{why}; give a global batch of {least}, "
                         "or fewer pipeline stages")

    def settings(self, spec=None, gpu=None):
        """The memory model's settings, built as plan's search builds them (jobs.memory.settings: --dtype and
        --fp8-recipe included); ``spec`` (the model this job trains, ``self.spec()`` when not passed) sets the MTP
        modules, ``gpu`` (an Accelerator, --gpu's when not passed) TE's weight copies by compute capability."""
        from gpuplan.adapters.resolve import resolve_gpu
        from gpuplan.core.time.attention_core import execution_kernel
        from gpuplan.jobs.memory.settings import training_memory_settings

        spec = spec if spec is not None else self.spec()
        gpu = gpu if gpu is not None else resolve_gpu(self.gpu)
        kernel = execution_kernel(self.attention_kernel, spec.model_type, self.framework, self.implementation_name)
        return training_memory_settings(self, spec, gpu, kernel, dropout=self.dropout,
                                        recompute=self.recompute_given or self.profile.default_recompute,
                                        moe_capacity_factor=self.moe_capacity_factor,
                                        offload_optimizer=self.offload_optimizer)

    def overheads(self):
        from dataclasses import replace

        return replace(super().overheads(), cuda_context=self.cuda_context_gib * GiB,
                       comm_per_group=None if self.comm_buffer_gib is None else self.comm_buffer_gib * GiB)

    def overheads_on(self, gpu, spec):
        """The overheads on ``gpu`` for ``spec``: its NVLink's NCCL buffers, and the --flex-backend's (DeepEP's by
        default, HybridEP's) in place of the all-to-all peers with --ep-dispatcher flex
        (core.memory.device_memory.with_ep_dispatcher, as plan)."""
        from gpuplan.core.memory.device_memory import with_ep_dispatcher

        return with_ep_dispatcher(self.overheads().on_device(gpu), self.ep_dispatcher, self.seq_len,
                                  spec, gpu, self.flex_backend or TE.DEFAULT_FLEX_BACKEND)
