"""The inputs of ``gpuplan measure``: a model and the step to measure on the CPU."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import model_validator

from gpuplan.errors import InputError
from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V
from gpuplan.schema.model_fields import ModelFields


def _depths(value: Any, info) -> tuple[int, int]:
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    try:
        depths = tuple(int(T.count(1 << 12, whole=True)(str(x).strip(), info)) for x in items)
    except InputError:
        depths = ()
    if len(depths) != 2 or not depths[0] < depths[1]:
        raise InputError("depths", value, "two increasing depths separated by a comma, e.g. 2,4")
    return depths  # type: ignore[return-value]


class MeasureInputs(ModelFields):
    """What to measure: the model, the step's shape and, optionally, two reduced depths to
    extrapolate from."""

    seq_len: V.SeqLen
    micro_batch: V.MicroBatch
    precision: V.Precision
    recompute: V.Recompute
    attention_kernel: V.AttentionKernel
    gpus: V.GpuCount
    optimizer_impl: V.OptimizerImpl
    depths: Annotated[T.typed(tuple[int, int], _depths, {"type": "string"}) | None, V.field(
        None, "Measure at two reduced depths and extrapolate to the full depth, e.g. 2,4 (4,8 with FSDP).",
        "full depth")]

    @model_validator(mode="after")
    def _supported(self) -> MeasureInputs:
        if self.model is None:
            raise InputError("model", None, "give a model: a catalog name, a Hugging Face id or a config.json")
        if self.precision == "fp32":
            raise InputError("precision", self.precision, "measure supports bf16 or fp32-autocast")
        if self.optimizer_impl == "fused":
            raise InputError("optimizer_impl", self.optimizer_impl, "measure supports foreach or forloop")
        if self.recompute == "selective":
            raise InputError("recompute", self.recompute, "measure supports none or full (HF gradient "
                             "checkpointing)")
        return self

    @property
    def attention(self) -> str:
        """The transformers attn_implementation."""
        return "eager" if self.attention_kernel == "eager" else "sdpa"

    @property
    def world_size(self) -> int:
        return self.gpus or 1

    def case(self) -> dict[str, Any]:
        """The measurement case as gpuplan.jobs.validation.memory reads it."""
        return dict(seq_len=self.seq_len, micro_batch=self.micro_batch or 1, precision=self.precision,
                    recompute=self.recompute or "none", attention=self.attention, world_size=self.world_size,
                    foreach=self.optimizer_impl != "forloop")
