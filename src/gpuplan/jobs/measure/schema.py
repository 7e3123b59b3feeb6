"""The inputs of ``gpuplan measure``: a model and the step to measure on the CPU."""

from __future__ import annotations

from typing import Annotated, Any

from gpuplan.errors import InputError
from gpuplan.profile.schema import RealModelInputs, SupportedModelType, narrowed
from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V
from gpuplan.schema.list_field import ListRule, list_schema, read_list

MAX_DEPTH = 1 << 12


DEPTH_FORMS = "two increasing depths separated by a comma, e.g. 2,4"


def _depth(text: Any) -> int:
    """One of --depths' two entries: a whole number of layers up to MAX_DEPTH (refused in the field's words)."""
    try:
        return int(T.count(MAX_DEPTH, whole=True)(text, None))
    except InputError:
        raise InputError("depths", text, DEPTH_FORMS) from None


DEPTH_LIST = ListRule("depths", DEPTH_FORMS, "depths", _depth, 2, exact=True)
"""--depths' two entries (schema.list_field's rules): '2,' names its empty entry, '2,2' the depth given twice."""


def _depths(value: Any, info) -> tuple[int, int]:
    depths = read_list(value, DEPTH_LIST)
    if not depths[0] < depths[1]:
        raise InputError("depths", value, DEPTH_FORMS)
    return depths  # type: ignore[return-value]


class MeasureInputs(RealModelInputs):
    """What to measure: the model, the step's shape and, optionally, two reduced depths to
    extrapolate from. Only the choices the measurement runs are offered (precision: no pure fp32;
    recompute: none or full, HF gradient checkpointing; optimizer kernel: no fused)."""

    model_type: SupportedModelType
    seq_len: V.SeqLen
    micro_batch: V.MicroBatch
    precision: narrowed(V.Precision, "bf16", "fp32-autocast", optional=False)
    recompute: narrowed(V.Recompute, "none", "full")
    attention_kernel: narrowed(V.AttentionKernel, "flash", "sdpa", "eager", optional=False)  # no FA1 on CPU
    gpus: V.GpuCount
    optimizer_impl: narrowed(V.OptimizerImpl, "foreach", "forloop")
    depths: Annotated[T.typed(tuple[int, int], _depths, list_schema({"type": "integer"}, 2, 64)) | None, V.field(
        None, "Measure at two reduced depths and extrapolate to the full depth, e.g. 2,4 (4,8 with FSDP).",
        "full depth")]

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
