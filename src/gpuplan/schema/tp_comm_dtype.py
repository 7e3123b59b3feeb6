"""--tp-comm-dtype: the dtype the tensor-parallel collectives run in, one field for plan / train / budget, plan files,
the web API and the Python API (schema.training_fields.StepFields inherits TpCommFields).

Left out, they run in the activations' dtype: bf16 under --dtype bf16 and the fp8 / fp4 recipes (whose activations
between the linears are bf16), fp16 under --dtype fp16, fp32 under --dtype fp32 / tf32 (4 B an element: core.comm.
tp_comm_dtype.activation_bytes). Megatron-Core's tensor_parallel mappings all-reduce the tensor they are given
(megatron/core/tensor_parallel/mappings.py@core_v0.16.1 L22-33; no fp32 option under megatron/core), as does
Megatron-DeepSpeed's (deepspeedai/Megatron-DeepSpeed@4efb479d megatron/core/tensor_parallel/mappings.py L14-24; BLOOM's
stack: no option either); torchtitan's one reduction dtype is FSDP's (mixed_precision_reduce,
torchtitan/config/configs.py@b5bcd76 L102-106: "reductions when applying mixed precision via FSDP"), the Hugging Face
Trainer and llm.c have no tensor parallelism. ``fp32`` is GPT-NeoX's ``fp32_allreduce`` AS AT gpt-neox@e59c873 (the
Llemma runs' commit; megatron/mpu/mappings.py L36-46: the bf16 tensor cast to fp32 before the all-reduce and back
after; core.comm.tp_comm_dtype), GPT-NeoX's Megatron modules on DeepSpeed's engine, gpuplan's --framework deepspeed
--implementation megatron (training_runs.yaml llemma-7b framework_source). That pair is also BLOOM's Megatron-DeepSpeed,
which has no such option: gpuplan cannot tell the two apart, so fp32 there means GPT-NeoX's code is what runs (the help
text says so). Taken with --dtype bf16 only (at e59c873 the cast runs for a bf16 tensor only, mappings.py L38), with
tp > 1 given (--tp: the layout search may pick tp 1, where there is no TP collective), and without sequence parallelism
(e59c873 has none: its mappings all-reduce). Later GPT-NeoX differs: from 8b43196f (2024-08-23, "Megatron-LM style
Sequence Parallel #1257") ``_reduce`` casts any dtype (fp16 too, back with ``.to(dt)``: mappings.py@8b43196f L31-50)
and the SP reduce-scatter / all-gather are cast as well (L186-230); neither is modelled (an SP cast moves n up and n /
tp back, not the 12 B an element charged here), so those stay refused with words that name the commit.
Memory: not charged. The fp32 copy (4 B x the micro-batch's tokens x the hidden size, with the bf16 result beside it
while it lives: 6 B) is transient; under full recompute it can raise the recomputed layer's moment above the backward
start the memory model peaks at where the loss's transient is small (Llemma 34B: 0.375 GiB against a 0.020 GiB margin,
at most +0.355 GiB of 24.67 GiB allocated; Llemma 7B's 0.949 GiB margin holds it: docs/step.md). The answer's
assumption line says so, with the copy's size (fp32_copy_bytes).
"""

from __future__ import annotations

from pydantic import model_validator

from gpuplan.core.comm.tp_comm_dtype import ACTIVATION_BYTES, FP32_ACTIVATION_DTYPES, TP_COMM_DTYPE_BYTES
from gpuplan.errors import InputError
from gpuplan.schema import types as T
from gpuplan.schema.base import JobInputs
from gpuplan.schema.vocabulary import option

FP32_TP_COMM = ("deepspeed", "megatron")
"""(--framework, --implementation) where fp32 TP collectives exist: GPT-NeoX's modules on DeepSpeed (fp32_allreduce)."""
WHERE = "GPT-NeoX's fp32_allreduce as at gpt-neox@e59c873 (Llemma's commit)"
LATER = "from gpt-neox 8b43196f (2024-08) it also casts fp16 and SP's reduce-scatter / all-gather, not modelled"
FP32_COPY_BYTES_PER_ELEMENT = 4 + 2
"""The fp32 copy and the bf16 result beside it while a call runs (``input_.float()`` then ``.bfloat16()``), B an element."""

TpCommDtype = option(T.choice(*TP_COMM_DTYPE_BYTES) | None, None, "Dtype of the tensor-parallel collectives: fp32 is "
                     "GPT-NeoX's fp32_allreduce as at gpt-neox@e59c873, Llemma's commit (megatron/mpu/mappings.py "
                     "L36-46: each TP all-reduce cast bf16 -> fp32 -> bf16, twice the bytes plus two elementwise "
                     "casts; its memory not charged); --framework deepspeed --implementation megatron, which is also "
                     "BLOOM's Megatron-DeepSpeed (no such option there: give fp32 only where GPT-NeoX runs), --dtype "
                     "bf16, --tp > 1, --no-sequence-parallel. Later GPT-NeoX (8b43196f, 2024-08) also casts fp16 and "
                     "SP's reduce-scatter / all-gather: not modelled. Megatron-Core and torchtitan have no such "
                     "option; bf16 is the activations' dtype under --dtype bf16, fp8 or fp4.",
                     "the activations' dtype (bf16; fp16 under --dtype fp16; fp32 under --dtype fp32 / tf32)")


class TpCommFields(JobInputs):
    """The TP collectives' dtype (core.comm.tp_comm_dtype)."""

    tp_comm_dtype: TpCommDtype

    @model_validator(mode="after")
    def _tp_comm_dtype_rules(self) -> "TpCommFields":
        value, dtype = self.tp_comm_dtype, self.dtype
        if value is None or value == _wire(dtype):  # the activations' dtype restated: the unstated answer (wave
            return self  # 18: fp32 under --dtype fp32 was refused 'already run in fp32'; the lead's rule, w16 R5 S3)
        if value == "bf16":
            raise InputError("tp_comm_dtype", value, f"under --dtype {dtype} the TP collectives run in {_wire(dtype)} "
                             "(the activations'; no modelled framework narrows them to bf16): give --dtype bf16, or "
                             "leave --tp-comm-dtype out")
        if value != "fp32":
            return self
        framework = getattr(self, "framework", None)
        implementation = getattr(self, "implementation_name", None)
        if (framework, implementation) != FP32_TP_COMM:
            raise InputError("tp_comm_dtype", value, f"is {WHERE}: give --framework deepspeed --implementation "
                             f"megatron (not --framework {framework} --implementation {implementation}); Megatron-Core and torchtitan run the "
                             "TP collectives in the compute dtype, the Trainer and llm.c have no TP")
        if dtype != "bf16":
            raise InputError("tp_comm_dtype", value, f"is {WHERE}, which casts bf16 tensors only (mappings.py L38; "
                             f"{LATER}): give --dtype bf16 (not {dtype})")
        tp = getattr(self, "tp", None)
        if tp is None or tp == 1:
            raise InputError("tp_comm_dtype", value, "needs tensor parallelism: give --tp 2 or more" + (
                " (with --tp 1 there are no TP collectives)" if tp == 1 else " (without --tp the layout search may "
                "choose tp 1, where there is no TP collective to widen)"))
        if getattr(self, "sequence_parallel", False):
            raise InputError("tp_comm_dtype", value, f"is {WHERE}, which has no sequence parallelism (its TP "
                             f"exchanges are all-reduces; {LATER}): give --no-sequence-parallel")
        return self

    def tp_comm_settings(self) -> dict:
        """StepSettings.tp_comm_bytes: 4 under fp32, else the activations' 2."""
        return {"tp_comm_bytes": float(TP_COMM_DTYPE_BYTES.get(self.tp_comm_dtype or "", ACTIVATION_BYTES))}


def _wire(dtype: str) -> str:
    """The dtype the TP collectives run in when --tp-comm-dtype is left out (module docstring): bf16 under bf16 and
    the fp8 / fp4 recipes, which quantise inside the linears only (core.time.low_precision: the activations between
    them stay bf16); a --tp-comm-dtype equal to it is answered as unstated."""
    return "fp32" if dtype in FP32_ACTIVATION_DTYPES else ("fp16" if dtype == "fp16" else "bf16")


def fp32_copy_bytes(micro_batch: int, seq_len: int, hidden_size: int) -> float:
    """Bytes of the fp32 copy and its bf16 result one fp32_allreduce call holds while it runs (not charged in
    memory): 6 B x the micro-batch's tokens x the hidden size (402,653,184 B = 0.375 GiB at 2 x 4,096 x 8,192)."""
    return float(FP32_COPY_BYTES_PER_ELEMENT * micro_batch * seq_len * hidden_size)


def tp_comm_dtype_assumption(inputs) -> tuple:
    """The assumption line naming the TP collectives' dtype: where the choice exists (--framework deepspeed
    --implementation megatron) or where it was given."""
    from gpuplan.report.model import Assumption

    dtype = inputs.dtype  # stated at the activations' dtype, it is answered as unstated, no line
    given = "tp_comm_dtype" in inputs.given and inputs.tp_comm_dtype != _wire(dtype)  # (review of wave 18, N1)
    where = (inputs.framework, getattr(inputs, "implementation_name", None)) == FP32_TP_COMM
    if not (given or where):
        return ()
    value = inputs.tp_comm_dtype or _wire(dtype)
    if value != _wire(dtype):  # wider than the activations: the cast (fp32 under --dtype fp32 is theirs)
        mb = getattr(inputs, "micro_batch", None)
        size = (f": {fp32_copy_bytes(mb, inputs.seq_len, inputs.spec().hidden_size) / 2**30:.3f} GiB at micro-batch "
                f"{mb}" if mb else "")
        shown = ("fp32 (GPT-NeoX's fp32_allreduce as at gpt-neox@e59c873: twice the bytes, a bf16 -> fp32 / fp32 -> "
                 "bf16 cast around each call; its transient fp32 copy, 6 B x micro-batch tokens x hidden" + size +
                 ", is not charged in memory)")
    else:
        shown = (f"{value} (the activations', {2 * (1 + (value == 'fp32'))} B an element; fp32 under --dtype bf16 is "
                 "GPT-NeoX's fp32_allreduce)")
    return (Assumption("tp_comm_dtype", "TP collectives' dtype", shown, "gpt-neox@e59c873 megatron/mpu/mappings.py "
                       "L36-46; core/comm/tp_comm_dtype.py", "--tp-comm-dtype", given),)
