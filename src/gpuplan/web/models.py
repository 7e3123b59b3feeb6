"""Pydantic models of the API: each request body is its job's own schema (the same model the CLI
builds its options from and plan files are checked against), and the response and error shapes.

Values may be typed as on the command line ("2T", "7d", "40%") or sent as JSON numbers; a bad
value is refused by the schema with the message the CLI prints (HTTP 422 naming the field).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from gpuplan.errors import InputError
from gpuplan.web.calibration_value import CALIBRATION_NAME_CHARS, calibration_value  # one check, two doors

EXAMPLES = {
    "training": {"params": "7B", "tokens": "2T", "gpu": "a100", "days": 7, "mfu": "40%"},
    "budget": {"model": "llama-3.1-8b", "tokens": "2T", "gpu": "h100", "gpus": 256},
    "memory": {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8, "zero": 3, "recipe": "bf16"},
    "plan": {"model": "llama-3.1-8b", "tokens": "1T", "gpu": "h100", "gpus": "64-256"},
    "inference": {"model": "llama-3.1-8b", "gpu": "h100", "context": "8K", "batch": 32},
}
CALIBRATION_HELP = ("A calibration from `gpuplan calibrate`: its JSON document, or the name of a file in the "
                    "folder the server was started with (`gpuplan serve --calibration-dir DIR`). Never a path.")
CONFIG_HELP = ("A Hugging Face config.json pasted as a JSON object, instead of model or params "
               "(VLM configs: the text_config is used).")


CALIBRATION_SCHEMA = {"anyOf": [{"type": "object"}, {"type": "string", "maxLength": CALIBRATION_NAME_CHARS},
                                {"type": "null"}]}


def door_position_limit(inputs: Any) -> int | None:
    """ModelFields.model_position_limit in a request model: the position limit (schema.model_fields.position_limit)
    of a catalog model, or of the pasted ``config`` (checked as web.service checks it before the estimate); None for
    anything else, which opens no path and calls no Hub (the service refuses a name outside the catalog)."""
    from gpuplan.adapters.resolve import resolve_model
    from gpuplan.catalog import find_model_entry
    from gpuplan.schema.model_fields import position_limit

    model, model_type = inputs.model, inputs.model_type
    try:
        if model is not None:
            entry = find_model_entry(model)  # model: a checked name (the after-validators run on checked fields)
            # a catalog id: resolve_model reads the catalog alone
            return None if entry is None else position_limit(resolve_model(entry["id"], None, model_type=model_type))
        config = getattr(inputs, "config", None)
        if not isinstance(config, dict):
            return None
        from gpuplan.web.service import check_config

        return position_limit(check_config(config, model_type))  # the layer / expert bounds before it is built
    except InputError:  # refused by the service with its own message
        return None


def request_model(name: str, schema: type[BaseModel]) -> type[BaseModel]:
    """The request body of job ``name``: the job's own schema (the CLI's options and plan-file
    keys: same types, ranges and messages) plus ``config``, a pasted config.json."""
    example = EXAMPLES.get(name)
    annotations: dict[str, Any] = {"config": dict[str, Any] | None}
    fields: dict[str, Any] = {"config": Field(default=None, description=CONFIG_HELP)}
    if "calibration" in schema.model_fields:
        # Over HTTP a calibration is its JSON document or a name in the operator's folder: the
        # request model never reads a file (the CLI's schema would open a path given as text).
        annotations["calibration"] = Annotated[dict[str, Any] | str | None, BeforeValidator(calibration_value),
                                               WithJsonSchema(CALIBRATION_SCHEMA)]
        fields["calibration"] = Field(default=None, description=CALIBRATION_HELP)
    namespace = {
        "__annotations__": annotations,
        **fields,
        # built at once: FastAPI wraps the body model in a TypeAdapter, which a deferred build upsets
        "model_config": ConfigDict(**{**schema.model_config, "defer_build": False,
                                      "json_schema_extra": {"examples": [example]} if example else None}),
        # the defaults that follow the model read the catalog or the pasted config.json: no path, no Hub
        "model_position_limit": door_position_limit,
        "__doc__": schema.__doc__,
        "__module__": __name__,
    }
    return type(f"{name.title()}Request", (schema,), namespace)


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
    """One violation: where (``loc``), a short message, its kind. The value itself is never
    echoed whole: at most a short prefix inside ``msg``."""

    loc: list[str | int]
    msg: str
    type: str


class ErrorResponse(BaseModel):
    """422: ``field`` names the input (or ``body``); ``detail`` has FastAPI's validation-error
    shape (without the raw input)."""

    detail: list[ErrorItem] | str
    field: str | None = None
    message: str


class Health(BaseModel):
    status: str
    version: str
    estimators: dict[str, bool] = Field(description="Each estimator route POST /api/<name> (the jobs "
                                                      "and campaign) -> whether it is available here.")
