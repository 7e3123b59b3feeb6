"""Pydantic models of the API: one request model per estimator, built from the field names its
CLI command takes (so the API and the CLI never drift), and the response and error shapes.

Values are raw scalars, as on the command line: "2T", 2e12, "7d", "40%", true. Units are parsed
by the command's own parser, which names the field when a value is wrong (HTTP 422).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, create_model

MAX_TEXT = 200
# JSON integers beyond this cannot be a count or a size here; bigger ones are refused (422)
# before any parser converts them to a float (10**400 would overflow).
MAX_INT = 10**18

Text = Annotated[str, StringConstraints(max_length=MAX_TEXT)]
Integer = Annotated[int, Field(ge=-MAX_INT, le=MAX_INT)]
Number = Annotated[float, Field(allow_inf_nan=False)]
Scalar = Text | Integer | Number | bool | None

HELP = {
    "model": "Catalog model id (GET /api/catalog/models), e.g. llama-3.1-8b. Not a path.",
    "params": "Bare parameter count instead of a model, e.g. 7B.",
    "tokens": "Training tokens, e.g. 2T.",
    "gpu": "Accelerator id or alias (GET /api/catalog/gpus), e.g. h100.",
    "gpus": "GPU count; for plan also 256,512 or a range 512-4096.",
    "days": "Wall-clock deadline: 7, 7d, 36h.",
    "mfu": "Model FLOPs utilisation, 0.4 or 40%.",
    "dtype": "Compute dtype for the peak: bf16, fp16, fp8, tf32, fp32.",
    "seq_len": "Sequence length in tokens.",
    "recipe": "Precision recipe: article, mixed, megatron, fsdp2, amp, bf16, fp32, fp8.",
    "recompute": "Activation recompute: none, selective or full.",
    "zero": "ZeRO stage 0-3.",
    "tp": "Tensor-parallel degree.",
    "pp": "Pipeline-parallel degree.",
    "micro_batch": "Sequences per micro-batch.",
    "rank_by": "Rank layouts by time, cost or gpus.",
    "context": "Tokens per sequence (prompt + output), e.g. 8K.",
    "batch": "Concurrent sequences.",
    "quantization": "Weight format: auto, fp32, bf16, fp16, fp8, int8, int4.",
}
EXAMPLES = {
    "training": {"params": "7B", "tokens": "2T", "gpu": "a100", "days": 7, "mfu": "40%"},
    "budget": {"model": "llama-3.1-8b", "tokens": "2T", "gpu": "h100", "gpus": 256},
    "memory": {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8, "zero": 3, "recipe": "bf16"},
    "plan": {"model": "llama-3.1-8b", "tokens": "1T", "gpu": "h100", "gpus": "64-256"},
    "inference": {"model": "llama-3.1-8b", "gpu": "h100", "context": "8K", "batch": 32},
}
CONFIG_HELP = ("A Hugging Face config.json pasted as a JSON object, instead of model or params "
               "(VLM configs: the text_config is used).")


def request_model(name: str, fields: tuple[str, ...]) -> type[BaseModel]:
    """The request body of estimator ``name``: every CLI field optional, unknown fields refused."""
    spec: dict[str, Any] = {
        field: (Scalar, Field(default=None, description=HELP.get(field, f"As the CLI flag --{field.replace('_', '-')}.")))
        for field in fields}
    spec["config"] = (dict[str, Any] | None, Field(default=None, description=CONFIG_HELP))
    example = EXAMPLES.get(name, {})
    config = ConfigDict(extra="forbid", json_schema_extra={"examples": [example]} if example else None)
    return create_model(f"{name.title()}Request", __config__=config, **spec)


class ReportLine(BaseModel):
    key: str
    label: str
    value: Any = None
    unit: str = ""
    text: str = ""
    formula: str = ""
    low: float | None = None
    high: float | None = None


class ReportSection(BaseModel):
    title: str
    lines: list[ReportLine]


class ReportAssumption(BaseModel):
    key: str
    label: str
    value: Any = None
    source: str
    flag: str = ""
    user_set: bool = False


class ReportResponse(BaseModel):
    """``Report.to_dict()`` (what ``--json`` prints), plus the chart series and the language."""

    kind: str
    title: str
    inputs: dict[str, Any]
    assumptions: list[ReportAssumption]
    results: dict[str, Any] = Field(description="Each result key -> its value in base units.")
    sections: list[ReportSection]
    tables: dict[str, list[dict[str, Any]]]
    notes: list[str]
    charts: dict[str, dict[str, Any]] = Field(description="Chart series read from the report (see docs/web.md).")
    lang: str


class ErrorItem(BaseModel):
    loc: list[str | int]
    msg: str
    type: str
    input: Any = None


class ErrorResponse(BaseModel):
    """422: ``field`` names the input; ``detail`` has FastAPI's validation-error shape."""

    detail: list[ErrorItem] | str
    field: str | None = None
    message: str


class Health(BaseModel):
    status: str
    version: str
    estimators: dict[str, bool] = Field(description="Estimator name -> whether it is available here.")
