"""The API's error answers, all in one shape: ``{"detail": ..., "field": ..., "message": ...}``
with ``message`` one line naming the field and what would be valid.

Bad input (InputError from a parser, or a schema violation) -> 422; too many estimates or one
over its time budget -> 503; a result over the size limit -> 413; other HTTP errors keep their
status. An error never echoes a value whole: at most PREVIEW_CHARS characters of it, lone
surrogates escaped, so an error body stays a few KB whatever the request held.
"""

from __future__ import annotations

import reprlib
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from gpuplan.errors import InputError
from gpuplan.web.body import EXPECTED, PREVIEW_CHARS, preview
from gpuplan.web.limits import RETRY_AFTER_SECONDS, Busy
from gpuplan.web.service import ResponseTooLarge

MAX_MESSAGE_CHARS = 1_500
"""Characters of one message (the longest real one, an unknown field with the valid fields
listed, is about 1,100)."""
DETAIL_MSG_CHARS = 160
MAX_DETAIL_ITEMS = 8
"""Schema violations listed in ``detail`` (the message is about the first)."""
BODY_TYPE_ERRORS = ("missing", "model_attributes_type", "model_type", "dict_type")
"""Pydantic's errors for a body that is no object at all (read_body refuses these first)."""
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 3, PREVIEW_CHARS, PREVIEW_CHARS, PREVIEW_CHARS


def shown(value: Any) -> str:
    """A value as quoted in a message: its repr, cut to about PREVIEW_CHARS characters."""
    if isinstance(value, str):
        return repr(value if len(value) <= PREVIEW_CHARS else value[:PREVIEW_CHARS] + "…")
    return preview(_REPR.repr(value))


def one_line(error: InputError) -> str:
    """``field: got <value>; <what would be valid>`` with the value and the field cut short."""
    given = "got no value" if error.value is None else f"got {shown(error.value)}"  # as InputError words it
    return preview(f"{preview(str(error.field))}: {given}; {error.expected}", MAX_MESSAGE_CHARS)


def error_body(field: str | None, message: str, loc: list, kind: str) -> dict[str, Any]:
    """The 422 body: FastAPI's validation-error shape (without the raw input) plus ``field`` and
    a one-line ``message``."""
    return {"detail": [{"loc": loc, "msg": preview(message, DETAIL_MSG_CHARS), "type": kind}],
            "field": field, "message": message}


async def input_error(request: Request, exc: InputError) -> JSONResponse:
    field = preview(str(exc.field))
    where = "query" if field == "lang" or field in request.query_params else "body"
    return JSONResponse(error_body(field, one_line(exc), [where] + ([field] if field != "body" else []),
                                   "input_error"), 422)


async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    """A schema violation: the same one-line message the CLI prints for that value."""
    from gpuplan.jobs import JOBS
    from gpuplan.schema.base import error_from_detail

    errors = exc.errors()[:MAX_DETAIL_ITEMS] or [{"loc": ("body",), "msg": "invalid request", "type": "invalid"}]
    job = JOBS.get(request.url.path.rstrip("/").rsplit("/", 1)[-1])
    valid = tuple(job.schema.model_fields) + ("config",) if job is not None else ()

    def as_input_error(err: dict[str, Any]) -> InputError:
        kind, loc = err.get("type"), tuple(err.get("loc", ()))
        if kind == "json_invalid" or (loc == ("body",) and kind in BODY_TYPE_ERRORS):  # the body as a whole
            return InputError("body", err.get("input") if kind != "json_invalid" else "", EXPECTED)
        return error_from_detail(err, valid)

    first = as_input_error(errors[0])
    field, message = preview(str(first.field)), one_line(first)
    detail = [{"loc": [p if isinstance(p, int) else preview(str(p)) for p in e.get("loc", ())],
               "msg": preview(one_line(as_input_error(e)), DETAIL_MSG_CHARS), "type": str(e.get("type", ""))}
              for e in errors]
    if field not in detail[0]["loc"] and field != "body":
        detail[0]["loc"].append(field)  # raised by the schema as a whole: name the field it found
    return JSONResponse({"detail": detail, "field": field, "message": message}, 422)


def _plain(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    message = preview(message, MAX_MESSAGE_CHARS)
    return JSONResponse({"detail": message, "field": None, "message": message}, status, headers=headers)


async def busy(request: Request, exc: Busy) -> JSONResponse:
    return _plain(503, str(exc), {"Retry-After": str(RETRY_AFTER_SECONDS)})


async def too_large(request: Request, exc: ResponseTooLarge) -> JSONResponse:
    return _plain(413, str(exc))


async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    """Other HTTP errors (404, 405, ...) in the same shape."""
    return _plain(exc.status_code, str(exc.detail), getattr(exc, "headers", None))


HANDLERS = ((InputError, input_error), (Busy, busy), (ResponseTooLarge, too_large),
            (RequestValidationError, validation_error), (StarletteHTTPException, http_error))
