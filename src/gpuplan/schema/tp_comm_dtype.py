"""--tp-comm-dtype: the dtype the tensor-parallel collectives run in, one field for plan / train / budget, plan files,
the web API and the Python API (schema.training_fields.StepFields inherits TpCommFields).

Left out, they run in the compute dtype (the activations' bf16, fp16 under --dtype fp16): Megatron-Core's
tensor_parallel mappings all-reduce the tensor they are given (megatron/core/tensor_parallel/mappings.py@core_v0.16.1
L22-33; no fp32 option under megatron/core), torchtitan's one reduction dtype is FSDP's (mixed_precision_reduce,
torchtitan/config/configs.py@b5bcd76 L102-106: "reductions when applying mixed precision via FSDP"), the Hugging Face
Trainer and llm.c have no tensor parallelism. ``fp32`` is GPT-NeoX's ``fp32_allreduce``
(gpt-neox@e59c873 megatron/mpu/mappings.py L36-46: the bf16 tensor cast to fp32 before the all-reduce and back after;
core.comm.tp_comm_dtype), GPT-NeoX's Megatron modules on DeepSpeed's engine, gpuplan's --framework deepspeed
--implementation megatron (training_runs.yaml llemma-7b framework_source): taken there only, with --dtype bf16 (the
cast runs for a bf16 tensor only, mappings.py L38) and without sequence parallelism (GPT-NeoX at that commit has none:
its mappings all-reduce). Memory: not charged. The fp32 copy (4 B x the micro-batch's tokens x the hidden size, with
the bf16 result beside it while it lives: 6 B) is transient; under full recompute it can raise the recomputed layer's
moment above the backward start the memory model peaks at where the loss's transient is small (Llemma 34B: 0.375 GiB
against a 0.020 GiB margin, at most +0.355 GiB of 24.67 GiB allocated; Llemma 7B's 0.949 GiB margin holds it: docs/step.md).
"""

from __future__ import annotations

from pydantic import model_validator

from gpuplan.core.comm.tp_comm_dtype import ACTIVATION_BYTES, TP_COMM_DTYPE_BYTES
from gpuplan.errors import InputError
from gpuplan.schema import types as T
from gpuplan.schema.base import JobInputs
from gpuplan.schema.vocabulary import option

FP32_TP_COMM = ("deepspeed", "megatron")
"""(--framework, --implementation) where fp32 TP collectives exist: GPT-NeoX's modules on DeepSpeed (fp32_allreduce)."""
WHERE = "GPT-NeoX's fp32_allreduce (its Megatron modules on DeepSpeed's engine)"

TpCommDtype = option(T.choice(*TP_COMM_DTYPE_BYTES) | None, None, "Dtype of the tensor-parallel collectives: fp32 is "
                     "GPT-NeoX's fp32_allreduce (gpt-neox@e59c873 megatron/mpu/mappings.py L36-46: each TP all-reduce "
                     "cast bf16 -> fp32 -> bf16, twice the bytes plus two elementwise casts); --framework deepspeed "
                     "--implementation megatron, --dtype bf16, --no-sequence-parallel. Megatron-Core and torchtitan "
                     "have no such option.", "the compute dtype (bf16; fp16 under --dtype fp16)")


class TpCommFields(JobInputs):
    """The TP collectives' dtype (core.comm.tp_comm_dtype)."""

    tp_comm_dtype: TpCommDtype

    @model_validator(mode="after")
    def _tp_comm_dtype_rules(self) -> "TpCommFields":
        value, dtype = self.tp_comm_dtype, getattr(self, "dtype", "bf16")
        if value is None:
            return self
        if value == "bf16" and dtype == "fp16":
            raise InputError("tp_comm_dtype", value, "under --dtype fp16 the TP collectives run in fp16 (the "
                             "activations'): give fp32 with --dtype bf16, or leave --tp-comm-dtype out")
        if value != "fp32":
            return self
        framework = getattr(self, "framework", None)
        implementation = getattr(self, "implementation_name", None)
        if (framework, implementation) != FP32_TP_COMM:
            raise InputError("tp_comm_dtype", value, f"is {WHERE}: give --framework deepspeed --implementation "
                             f"megatron (not --framework {framework} --implementation {implementation}); Megatron-Core and torchtitan run the "
                             "TP collectives in the compute dtype, the Trainer and llm.c have no TP")
        if dtype != "bf16":
            raise InputError("tp_comm_dtype", value, f"is {WHERE}, which casts bf16 tensors only (mappings.py L38): "
                             f"give --dtype bf16 (not {dtype})")
        if getattr(self, "tp", None) == 1:
            raise InputError("tp_comm_dtype", value, "needs tensor parallelism (--tp > 1): with --tp 1 there are no "
                             "TP collectives")
        if getattr(self, "sequence_parallel", False):
            raise InputError("tp_comm_dtype", value, f"is {WHERE}, which has no sequence parallelism (its TP "
                             "exchanges are all-reduces): give --no-sequence-parallel")
        return self

    def tp_comm_settings(self) -> dict:
        """StepSettings.tp_comm_bytes: 4 under fp32, else the activations' 2."""
        return {"tp_comm_bytes": float(TP_COMM_DTYPE_BYTES.get(self.tp_comm_dtype or "", ACTIVATION_BYTES))}


def tp_comm_dtype_assumption(inputs) -> tuple:
    """The assumption line naming the TP collectives' dtype: where the choice exists (--framework deepspeed
    --implementation megatron) or where it was given."""
    from gpuplan.report.model import Assumption

    given = "tp_comm_dtype" in inputs.given
    where = (inputs.framework, getattr(inputs, "implementation_name", None)) == FP32_TP_COMM
    if not (given or where):
        return ()
    value = inputs.tp_comm_dtype or ("fp16" if getattr(inputs, "dtype", "bf16") == "fp16" else "bf16")
    shown = ("fp32 (GPT-NeoX's fp32_allreduce: twice the bytes, a bf16 -> fp32 / fp32 -> bf16 cast around each call)"
             if value == "fp32" else f"{value} (the compute dtype; fp32 is GPT-NeoX's fp32_allreduce)")
    return (Assumption("tp_comm_dtype", "TP collectives' dtype", shown, "gpt-neox@e59c873 megatron/mpu/mappings.py "
                       "L36-46; core/comm/tp_comm_dtype.py", "--tp-comm-dtype", given),)
