"""The FastAPI application: the JSON API under /api, the static page at /, the OpenAPI schema
at /openapi.json. Built by :func:`create_app`; ``gpuplan serve`` runs it with uvicorn.

Errors (web/errors.py): bad input (InputError from a parser, a body that is not one strict JSON
object, or a schema violation) -> 422 naming the field; a body over the limit -> 413. Swagger UI
and ReDoc are off: they load from a CDN, and the page must work with no internet; the schema
itself is served.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from gpuplan import __version__
from gpuplan.web.errors import HANDLERS
from gpuplan.web.limits import MAX_BODY_BYTES, Guard

STATIC = Path(__file__).resolve().parent / "static"
DESCRIPTION = """Plan GPUs for training and serving LLMs. Every estimator takes the same fields as
its CLI command (raw values such as "2T", "7d", "40%") and returns the command's report
(`Report.to_dict()`, what `--json` prints) plus chart series. Bad input: HTTP 422 with `field`
naming the input. Add `?lang=zh` for Chinese labels (numbers and units unchanged)."""


def create_app(allowed_hosts: list[str] | None = None, max_body_bytes: int = MAX_BODY_BYTES,
               calibration_dir: str | None = None, warm: bool = False) -> Any:
    """The ASGI app. ``allowed_hosts``: Host header names to accept (``gpuplan serve`` passes the
    loopback names, which stops DNS-rebinding pages from reaching a local server); None = any.
    ``warm``: answer a few small requests at start-up, before connections are accepted
    (service.warm_up; ``gpuplan serve`` does)."""
    from contextlib import asynccontextmanager
    from pathlib import Path

    from gpuplan.errors import InputError
    from gpuplan.web.routes import api_router

    if calibration_dir is not None and not Path(calibration_dir).is_dir():  # GPUPLAN_CALIBRATION_DIR set by hand
        raise InputError("calibration_dir", calibration_dir, "is not an existing folder (GPUPLAN_CALIBRATION_DIR "
                         "or gpuplan serve --calibration-dir)")

    @asynccontextmanager
    async def lifespan(_app):
        if warm:
            import asyncio

            from gpuplan.web.service import warm_up

            await asyncio.get_running_loop().run_in_executor(None, warm_up)
        yield

    app = FastAPI(title="gpuplan", version=__version__, description=DESCRIPTION, docs_url=None, redoc_url=None,
                  lifespan=lifespan)
    app.state.calibration_dir = calibration_dir
    for exception, handler in HANDLERS:
        app.add_exception_handler(exception, handler)
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
