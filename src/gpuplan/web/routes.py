"""The /api routes: health, the two catalogs, and one POST per estimator. A route with a body
reads it strictly (web/body.py) before FastAPI validates it: duplicate keys, deep nesting, lone
surrogates and anything but one JSON object are 422 naming the field or the body.

No ``from __future__ import annotations`` here: FastAPI reads the request model of each
generated endpoint from its annotation object.
"""

from typing import Annotated, Any, Callable, Optional

from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute

from gpuplan import __version__
from gpuplan.web import service
from gpuplan.jobs import JOBS, Job
from gpuplan.errors import InputError
from gpuplan.web.body import preview, read_body
from gpuplan.schema.types import MAX_TEXT, choice
from gpuplan.web.flight import flights_of
from gpuplan.web.limits import CAMPAIGN_NARROWER, guarded
from gpuplan.web.models import ErrorResponse, Health, ReportResponse, request_model

Lang = Annotated[choice("en", "zh"), Query(description="Language of labels and titles; numbers are unchanged.")]
"""Read as `gpuplan report --lang` reads it (schema.types.choice: 'ZH' is zh; it was refused here, hostile wave 27)."""
Filter = Annotated[Optional[str], Query(description=f"Case-insensitive text filter (at most {MAX_TEXT} characters, no "
                                                    "control characters: `gpuplan catalog --filter`'s own check, "
                                                    "jobs.catalog.schema.CatalogInputs).")]
"""No max_length of the query's own: it refused 101-256 characters `gpuplan catalog --filter` answers, in pydantic's
words ('String should have at most 100 characters'), not the schema's (wave 19)."""
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "A malformed request (a body that is not JSON is 422, `field` "
                                                 "`body`)."},
    422: {"model": ErrorResponse, "description": "Invalid input, or a body that is not one JSON object; `field` "
                                                 "names the field (or `body`)."},
    413: {"model": ErrorResponse, "description": "Request body over the size limit."},
}


class StrictBodyRoute(APIRoute):
    """A route whose JSON body is read by :func:`read_body` first (FastAPI's documented custom
    route class); the checked body is left in ``request.state.body``."""

    def get_route_handler(self) -> Callable:
        handler = super().get_route_handler()
        allowed = {param.alias for param in self.dependant.query_params}
        has_body = self.body_field is not None
        fields = getattr(self.body_field.field_info.annotation, "model_fields", {}) if has_body else {}
        known = frozenset(name for key, field in fields.items() for name in (key, field.alias) if name)

        async def strict(request: Request) -> Response:
            _known_query(request, allowed)
            if has_body:
                raw = await request.body()
                request.state.body = read_body(raw, request.headers.get("content-type"), known or None)
                request = CheckedBody(request, raw, request.state.body)
            return await handler(request)

        return strict


class CheckedBody(Request):
    """The request FastAPI validates next, its body() and json() answering the bytes read and the dict read_body
    checked (FastAPI's documented custom Request pattern, "Custom Request and APIRoute class": public methods
    overridden, not Starlette's private Request._json), so the text is parsed once (read_body's reading is
    json.loads' own where it returns: its odd numbers are refused). State lives in the shared ASGI scope."""

    def __init__(self, request: Request, raw: bytes, body: Any) -> None:
        super().__init__(request.scope, request.receive)
        self.checked_raw, self.checked_body = raw, body

    async def body(self) -> bytes:
        return self.checked_raw

    async def json(self) -> Any:
        return self.checked_body


def _known_query(request: Request, allowed: set[str]) -> None:
    """A query parameter the route does not declare is refused (422 naming it), not ignored: the
    estimators' fields go in the JSON body."""
    for key in request.query_params:
        if key not in allowed:
            valid = ", ".join(sorted(allowed)) or "none"
            raise InputError(preview(key, 40), preview(request.query_params[key], 40),
                             f"is not a query parameter of {request.url.path} (it takes: {valid}); send "
                             "estimate fields in the JSON body")
        values = request.query_params.getlist(key)
        if len(values) > 1:  # ?lang=zh&lang=en answered in English (the last), as the CLI refuses --lang twice
            raise InputError(preview(key, 40), ", ".join(preview(v, 20) for v in values[:4]),
                             "is given more than once in the query; give it once")


def api_router() -> APIRouter:
    router = APIRouter(prefix="/api", route_class=StrictBodyRoute)

    @router.get("/health", response_model=Health, summary="Version and available estimators")
    def health() -> dict[str, Any]:
        return {"status": "ok", "version": __version__, "estimators": served(router)}

    @router.get("/catalog/models", response_model=ReportResponse, responses=ERRORS,
                summary="The model catalog (gpuplan catalog models)")
    def catalog_models(filter: Filter = None, lang: Lang = "en") -> JSONResponse:  # noqa: A002
        return JSONResponse(service.catalog("models", filter, lang))

    @router.get("/catalog/gpus", response_model=ReportResponse, responses=ERRORS,
                summary="The accelerator catalog (gpuplan catalog gpus)")
    def catalog_gpus(filter: Filter = None, lang: Lang = "en") -> JSONResponse:  # noqa: A002
        return JSONResponse(service.catalog("gpus", filter, lang))

    for job in JOBS.values():
        _add_job(router, job)
    _add_campaign(router)
    return router


CAMPAIGN_EXAMPLE = {"model": "llama-3.1-8b", "gpu": "h100", "mfu": 0.4, "stages": [
    {"name": "8K", "tokens": "1T", "gpus": 256, "seq_len": 8192},
    {"name": "32K", "tokens": "20B", "gpus": 64, "seq_len": 32768}]}
"""The example body of POST /api/campaign (OpenAPI): a pre-training stage and a context extension (docs/campaign.md)."""


def _add_campaign(router: APIRouter) -> None:
    """POST /api/campaign: a `gpuplan campaign` document as one JSON object (docs/campaign.md)."""

    async def estimate_campaign(request: Request, body: Annotated[dict[str, Any], Body(examples=[CAMPAIGN_EXAMPLE])],
                                lang: Lang = "en") -> JSONResponse:
        from gpuplan.web import campaign

        raw, app, folder = request.state.body, request.app, request.app.state.calibration_dir
        return JSONResponse(await guarded(app, campaign.answer, raw, lang, folder, job="budget",
                                          hint=CAMPAIGN_NARROWER))

    estimate_campaign.available = "budget" in JOBS and _available(JOBS["budget"])  # type: ignore[attr-defined]
    router.add_api_route("/campaign", estimate_campaign, methods=["POST"], responses=ERRORS,
                         summary="A training campaign in stages (gpuplan campaign)",
                         description="The `gpuplan campaign` plan file as one JSON object: `stages`, a list of 1 to "
                                     "32 objects of `POST /api/budget` fields (and an optional `name`); other keys "
                                     "are defaults every stage inherits. Each stage's budget report and the totals.")


def served(router: APIRouter) -> dict[str, bool]:
    """Each estimator route's name (POST /api/<name>) -> whether this build answers it, read from the router's own
    routes, so /api/health cannot drift from what is served: it listed the jobs only, not POST /api/campaign
    (hostile wave 27b). A route built by :func:`_add_job` for a job not installed answers 503 and says False."""
    return {route.path.removeprefix(router.prefix + "/"): getattr(route.endpoint, "available", True)
            for route in router.routes if isinstance(route, APIRoute) and "POST" in route.methods}


def _available(job: Job) -> bool:
    try:
        job.schema  # noqa: B018 - imports the job's package
    except ImportError:
        return False
    return True


def _add_job(router: APIRouter, job: Job) -> None:
    """POST /api/<name>: the job's schema is the request model; 503 when the job's package is
    not installed in this build."""
    name = job.name
    if not _available(job):
        def unavailable(body: Annotated[dict[str, Any], Body()], lang: Lang = "en") -> JSONResponse:
            message = f"the {name} estimator is not installed in this build"
            return JSONResponse({"detail": message, "field": None, "message": message}, 503)

        unavailable.__name__ = f"estimate_{name}"
        unavailable.available = False  # type: ignore[attr-defined]  # read by served(): /api/health says False
        router.add_api_route(f"/{name}", unavailable, methods=["POST"], summary=job.summary,
                             responses={503: {"model": ErrorResponse}})
        return
    model = request_model(name, job.schema)

    async def endpoint(request: Request, body: model, lang: Lang = "en") -> JSONResponse:  # type: ignore[valid-type]
        # `body` is checked by FastAPI for the schema (and documents it); the estimate re-reads the
        # raw JSON (as read_body left it) through the same schema, so a value means what it means
        # on the CLI.
        # A kept result is answered at once; the same request already running is waited for
        # (web/flight.py); anything else queues for a slot (web/limits.py).
        raw, app, folder = request.state.body, request.app, request.app.state.calibration_dir
        key = service.cache_key(name, raw, lang, folder)
        result = service.cached(key)
        if result is None:
            result = await flights_of(app).run(key, lambda: guarded(app, service.estimate, name, raw, lang, folder,
                                                                        job=name))
        return JSONResponse(result)

    endpoint.__name__ = f"estimate_{name}"
    router.add_api_route(f"/{name}", endpoint, methods=["POST"], response_model=ReportResponse, responses=ERRORS,
                         summary=f"{job.summary.split(' (')[0]}",
                         description=f"{job.summary}\n\n{_fields_line(job)}")


def _fields_line(job: Job) -> str:
    """Which CLI options a job's body takes. `gpuplan train` builds its options from the budget's schema, so the
    training job's body takes a subset of them (no price or failure fields): its description said 'the options of
    `gpuplan train` (the same schema)' and /api/training refused train's --price (wave-12 sweep, four doors)."""
    fields = set(job.schema.model_fields)
    wider = next((other for other in JOBS.values() if other.command == job.command and other.name != job.name
                  and _available(other) and set(other.schema.model_fields) > fields), None)
    if wider is None:
        return f"Fields: the options of `gpuplan {job.command}` (the same schema)."
    return (f"Fields: the options of `gpuplan {job.command}` that {job.schema.__name__} takes (the same checks); "
            f"all of them: POST /api/{wider.name}.")
