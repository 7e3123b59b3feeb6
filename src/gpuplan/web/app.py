"""The FastAPI application: the JSON API under /api, the static page at /, the OpenAPI schema
at /openapi.json. Built by :func:`create_app`; ``gpuplan serve`` runs it with uvicorn.

Errors: bad input (InputError from a parser, or a schema violation) -> 422 naming the field;
a body over the limit -> 413. Swagger UI and ReDoc are off: they load from a CDN, and the page
must work with no internet; the schema itself is served.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from gpuplan import __version__
from gpuplan.errors import InputError
from gpuplan.web.limits import MAX_BODY_BYTES, Busy, Guard
from gpuplan.web.service import ResponseTooLarge

STATIC = Path(__file__).resolve().parent / "static"
DESCRIPTION = """Plan GPUs for training and serving LLMs. Every estimator takes the same fields as
its CLI command (raw values such as "2T", "7d", "40%") and returns the command's report
(`Report.to_dict()`, what `--json` prints) plus chart series. Bad input: HTTP 422 with `field`
naming the input. Add `?lang=zh` for Chinese labels (numbers and units unchanged)."""


def create_app(allowed_hosts: list[str] | None = None, max_body_bytes: int = MAX_BODY_BYTES,
               calibration_dir: str | None = None) -> Any:
    """The ASGI app. ``allowed_hosts``: Host header names to accept (``gpuplan serve`` passes the
    loopback names, which stops DNS-rebinding pages from reaching a local server); None = any."""
    from gpuplan.web.routes import api_router

    app = FastAPI(title="gpuplan", version=__version__, description=DESCRIPTION, docs_url=None, redoc_url=None)
    app.state.calibration_dir = calibration_dir
    app.add_exception_handler(InputError, _input_error)
    app.add_exception_handler(Busy, _busy)
    app.add_exception_handler(ResponseTooLarge, _too_large)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.include_router(api_router())
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    if allowed_hosts:
        from starlette.middleware.trustedhost import TrustedHostMiddleware

        app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)
    app.add_middleware(Guard, max_bytes=max_body_bytes)
    return app


def error_body(field: str | None, message: str, loc: list, kind: str, value: Any = None) -> dict[str, Any]:
    """The 422 body: FastAPI's validation-error shape plus ``field`` and a one-line ``message``."""
    return {"detail": [{"loc": loc, "msg": message, "type": kind, "input": _safe(value)}],
            "field": field, "message": message}


async def _input_error(request: Request, exc: InputError) -> JSONResponse:
    where = "query" if exc.field == "lang" else "body"
    value = exc.value if isinstance(exc.value, int | float | str | bool | type(None)) else repr(exc.value)
    return JSONResponse(error_body(str(exc.field), str(exc), [where, str(exc.field)], "input_error", value), 422)


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    """A schema violation: the same one-line message the CLI prints for that value."""
    from gpuplan.jobs import JOBS
    from gpuplan.schema.base import error_from_detail

    errors = exc.errors()
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    names = [str(part) for part in first.get("loc", ()) if part not in ("body", "query", "path")]
    field = names[0] if names else None
    job = JOBS.get(request.url.path.rstrip("/").rsplit("/", 1)[-1])
    valid = tuple(job.schema.model_fields) + ("config",) if job is not None else ()
    message = str(first.get("msg"))
    if first.get("type"):
        error = error_from_detail(first, valid)
        message, field = str(error), str(error.field) if error.field != "inputs" else field
    detail = [{"loc": [p if isinstance(p, int) else str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")),
               "type": str(e.get("type", "")), "input": _safe(e.get("input"))} for e in errors]
    if detail and field and field not in detail[0]["loc"]:
        detail[0]["loc"].append(field)  # raised by the schema as a whole: name the field it found
    return JSONResponse({"detail": detail, "field": field, "message": message}, 422)


async def _busy(request: Request, exc: Busy) -> JSONResponse:
    return JSONResponse({"detail": str(exc), "field": None, "message": str(exc)}, 503, headers={"Retry-After": "5"})


async def _too_large(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc), "field": None, "message": str(exc)}, 413)


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    """Other HTTP errors (400 for a body that is not JSON, 404, 405) in the same shape."""
    message = str(exc.detail)
    return JSONResponse({"detail": message, "field": None, "message": message}, exc.status_code,
                        headers=getattr(exc, "headers", None))


def _safe(value: Any) -> Any:
    """A value as JSON can carry it: NaN and infinities as text, anything odd as its repr."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {str(k): _safe(v) for k, v in list(value.items())[:50]}
    if isinstance(value, list | tuple):
        return [_safe(v) for v in list(value)[:50]]
    try:
        return jsonable_encoder(value)
    except (TypeError, ValueError):
        return repr(value)[:200]
