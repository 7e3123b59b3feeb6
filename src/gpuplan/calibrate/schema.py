"""The inputs of ``gpuplan calibrate``: measurement files and training logs, what a log does not
say about its run (shared options: same names as everywhere), and where to write the result."""

from __future__ import annotations

from copy import copy
from typing import Annotated, Any

from gpuplan.errors import InputError
from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V
from gpuplan.schema.base import JobInputs
from gpuplan.schema.training_fields import LayoutFields, SetupFields, StepFields

MAX_FILES = 256
LOG_FORMATS = ("torchtitan", "megatron", "hf-trainer", "table")


def _files(value: Any, info) -> tuple[str, ...]:
    items = value if isinstance(value, list | tuple) else [value]
    names = tuple(T.name(str(x), info) for x in items)
    if not names or len(names) > MAX_FILES:
        raise InputError("files", len(names), f"1 to {MAX_FILES} measurement JSONs (gpuplan profile --out) or "
                         "training logs")
    return names


def _f(default, help: str, shown: str | None = None):
    return V.field(default, help, shown)


def _train(name: str) -> Any:
    """train's own declaration of field ``name`` (its type, checks, default and help: schema.training_fields), so a
    step option means and refuses at calibrate what it does at train (one vocabulary, not a copy)."""
    info = next(group.model_fields[name] for group in (LayoutFields, SetupFields, StepFields)
                if name in group.model_fields)
    return Annotated[info.annotation, copy(info)]


class CalibrateInputs(JobInputs):
    """Files to fit, the logged run's facts a log does not state, and the output."""

    files: Annotated[T.typed(tuple[str, ...], _files, {"type": "array", "items": {"type": "string"}}), _f(
        (), "Measurement JSONs (gpuplan profile) and/or training logs (torchtitan, Megatron-LM, HF Trainer, "
            "CSV/JSON table).", "none")]
    out: V.Out
    model: V.Model
    gpu: V.Gpu
    gpus: V.GpuCount
    tp: V.Tp
    pp: V.Pp
    ep: V.Ep
    zero: V.ZeroStage
    micro_batch: V.MicroBatch
    global_batch: V.GlobalBatch
    seq_len: V.SeqLen
    recipe: V.Recipe
    recompute: V.Recompute
    dtype: V.Dtype
    framework: V.Framework
    fp8_recipe: V.Fp8Recipe
    # train's step and memory options (calibrate.step_options.LOG_STEP_OPTIONS): given, the log is timed and its memory
    # predicted as train builds them for the same flags; not given, as train's defaults
    vpp: _train("vpp")
    cp: _train("cp")
    etp: _train("etp")
    recompute_modules: _train("recompute_modules")
    recompute_layers: _train("recompute_layers")
    partition_activations: _train("partition_activations")
    compile: _train("compile")
    implementation: _train("implementation")
    optimizer: _train("optimizer")
    optimizer_impl: _train("optimizer_impl")
    loss: _train("loss")
    finetune: _train("finetune")
    lora_rank: _train("lora_rank")
    grad_dtype: _train("grad_dtype")
    moment_dtype: _train("moment_dtype")
    low_precision_weights: _train("low_precision_weights")
    embedding_loss_slots: _train("embedding_loss_slots")
    offload_layers: _train("offload_layers")
    mtp_layers: _train("mtp_layers")
    gpus_per_node: _train("gpus_per_node")
    nic_gbit_per_gpu: _train("nic_gbit_per_gpu")
    dp_overlap: _train("dp_overlap")
    tp_overlap: _train("tp_overlap")
    tp_comm_overlap: _train("tp_comm_overlap")
    tp_comm_dtype: _train("tp_comm_dtype")
    sequence_parallel: _train("sequence_parallel")
    grad_all_reduce: _train("grad_all_reduce")
    ep_overlap: _train("ep_overlap")
    ep_dispatcher: _train("ep_dispatcher")
    ep_a2a_overlap: _train("ep_a2a_overlap")
    flex_backend: _train("flex_backend")
    moe_expert_kernels: _train("moe_expert_kernels")
    attention_kernel: _train("attention_kernel")
    attention_efficiency: _train("attention_efficiency")
    fp8_attention: _train("fp8_attention")
    fsdp_float8_all_gather: _train("fsdp_float8_all_gather")
    cuda_graph_scope: _train("cuda_graph_scope")
    full_iteration_graph: _train("full_iteration_graph")
    log_format: Annotated[T.choice(*LOG_FORMATS) | None, _f(None, "torchtitan, megatron, hf-trainer or table.",
                                                            "detected")]
    max_log_mib: Annotated[T.typed(int, T.count(1 << 16, whole=True)), _f(
        256, "Largest training log to read, MiB (text logs, CSV and JSON Lines are read line by line; a JSON "
             "document is at most 16 MiB).")]
    target_gpus: Annotated[V.Gpus | None, _f(None, "Also extrapolate the first GPU measurement to this many GPUs "
                                                   "(weak scaling), default vs calibrated.", "none")]

    @property
    def recipe_name(self) -> str | None:
        """The recipe given (None: the log format's, calibrate.measurement.LOG_DEFAULTS, none of which is fp8)."""
        return self.recipe

    def follow_model(self) -> "CalibrateInputs":
        """--dtype left out follows --recipe as at train / plan / memory / budget (schema.precision_rules.follow_recipe:
        `--recipe fp8` fits at fp8, so a calibration made with train's flags is fitted at the dtype train computes in)."""
        from gpuplan.schema.precision_rules import follow_recipe

        follow_recipe(self)
        return self

    def log_context(self):
        """What the logs do not say, from the options given (the rest: the log format's defaults)."""
        from gpuplan.calibrate.measurement import LogContext

        given = self.given
        kw = {name: getattr(self, name) for name in ("model", "gpu", "gpus", "tp", "pp", "ep", "zero", "micro_batch",
                                                     "global_batch", "seq_len", "recipe", "recompute", "dtype",
                                                     "framework")
              if (name in given or name == "dtype") and getattr(self, name) is not None}  # dtype: follow_model's
        from gpuplan.calibrate.step_options import LOG_STEP_OPTIONS

        options = tuple((name, getattr(self, name)) for name in LOG_STEP_OPTIONS if name in given)
        if "recompute" not in given and (self.recompute_modules or self.recompute_layers) is not None:
            kw["recompute"] = "selective" if self.recompute_modules is not None else "full"  # as train's recompute_given
        return LogContext(**kw, options=options)
