"""The /api routes: health, the two catalogs, and one POST per estimator.

No ``from __future__ import annotations`` here: FastAPI reads the request model of each
generated endpoint from its annotation object.
"""

from typing import Annotated, Any, Literal, Optional

from fastapi import APIRouter, Body, Query
from fastapi.responses import JSONResponse

from gpuplan import __version__
from gpuplan.web import service
from gpuplan.web.estimators import ESTIMATORS, Estimator, fields_of
from gpuplan.web.models import ErrorResponse, Health, ReportResponse, request_model

Lang = Annotated[Literal["en", "zh"], Query(description="Language of labels and titles; numbers are unchanged.")]
Search = Annotated[Optional[str], Query(max_length=100, description="Case-insensitive text filter.")]
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "The body is not JSON."},
    422: {"model": ErrorResponse, "description": "Invalid input; `field` names it."},
    413: {"model": ErrorResponse, "description": "Request body over the size limit."},
}


def api_router() -> APIRouter:
    router = APIRouter(prefix="/api")

    @router.get("/health", response_model=Health, summary="Version and available estimators")
    def health() -> dict[str, Any]:
        return {"status": "ok", "version": __version__,
                "estimators": {name: fields_of(name) is not None for name in ESTIMATORS}}

    @router.get("/catalog/models", response_model=ReportResponse, responses=ERRORS,
                summary="The model catalog (gpuplan catalog models)")
    def catalog_models(search: Search = None, lang: Lang = "en") -> JSONResponse:
        return JSONResponse(service.catalog("models", search, lang))

    @router.get("/catalog/gpus", response_model=ReportResponse, responses=ERRORS,
                summary="The accelerator catalog (gpuplan catalog gpus)")
    def catalog_gpus(search: Search = None, lang: Lang = "en") -> JSONResponse:
        return JSONResponse(service.catalog("gpus", search, lang))

    for estimator in ESTIMATORS.values():
        _add_estimator(router, estimator)
    return router


def _add_estimator(router: APIRouter, estimator: Estimator) -> None:
    """POST /api/<name>: the request model from the command's fields; 503 when the estimator's
    module is not installed in this build."""
    fields = fields_of(estimator.name)
    name = estimator.name
    if fields is None:
        def unavailable(body: Annotated[dict[str, Any], Body()], lang: Lang = "en") -> JSONResponse:
            message = f"the {name} estimator is not installed in this build"
            return JSONResponse({"detail": message, "field": None, "message": message}, 503)

        unavailable.__name__ = f"estimate_{name}"
        router.add_api_route(f"/{name}", unavailable, methods=["POST"], summary=estimator.summary,
                             responses={503: {"model": ErrorResponse}})
        return
    model = request_model(name, fields)

    def endpoint(body: model, lang: Lang = "en") -> JSONResponse:  # type: ignore[valid-type]
        return JSONResponse(service.estimate(name, body.model_dump(exclude_none=True), lang))

    endpoint.__name__ = f"estimate_{name}"
    router.add_api_route(f"/{name}", endpoint, methods=["POST"], response_model=ReportResponse, responses=ERRORS,
                         summary=f"{estimator.summary.split(' (')[0]}",
                         description=f"{estimator.summary}\n\nFields: the flags of `gpuplan {estimator.command}`.")
