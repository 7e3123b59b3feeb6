"""POST /api/campaign, framework-free: a campaign document (the `gpuplan campaign` plan file as one JSON object) in,
each stage's budget and the totals out (jobs/campaign). As for every estimator, a model is a catalog name only and a
calibration the document itself or a name in the operator's folder: the server never opens a path a request names."""

from __future__ import annotations

import json
import threading
from typing import Any

from gpuplan.web import service


def answer(body: dict[str, Any], lang: str = "en", calibration_dir: str | None = None,
           stop: threading.Event | None = None) -> dict[str, Any]:
    """The campaign's answer for a request body: ``CampaignAnswer.to_dict()`` (each stage's budget report in ``lang``)
    with the campaign's own report (its table and totals) under ``report``. ``stop``: set once the request has been
    answered (web/limits.guarded); the campaign then stops before its next stage."""
    service.preload()
    from gpuplan.jobs.campaign.estimate import estimate_campaign
    from gpuplan.jobs.campaign.report import campaign_report
    from gpuplan.report.i18n import check_lang, translate_report

    lang = check_lang(lang)
    key = service.cache_key("campaign", body, lang, calibration_dir)
    kept = service.cached(key)
    if kept is not None:
        return kept
    def before_stage(stage) -> None:  # the request was answered 503 for time: no further stage is run
        if stop is not None and stop.is_set():
            from gpuplan.web.limits import Stopped

            raise Stopped(f"campaign stopped before {stage.label}: its request was answered already")

    result = estimate_campaign(body, None, lambda raw: stage_fields(raw, calibration_dir), before_stage)
    out = result.to_dict()
    for stage, data in zip(result.stages, out["stages"]):
        data["budget"] = translate_report(stage.report, lang).to_dict()
    out = service.plain(out | {"report": translate_report(campaign_report(result), lang).to_dict(), "lang": lang})
    size = len(json.dumps(out))
    if size > service.MAX_RESPONSE_BYTES:
        raise service.ResponseTooLarge(f"the response would be {size / 2**20:.1f} MiB, over the "
                                       f"{service.MAX_RESPONSE_BYTES >> 20} MiB limit; ask for fewer stages")
    service._CACHE.put(key, out, size)
    return out


def stage_fields(raw: dict[str, Any], calibration_dir: str | None) -> dict[str, Any]:
    """A stage's fields (or the campaign's defaults) as the server reads them: a model by its catalog name only, a
    calibration as a document (service.request_limits), never a path."""
    raw = service.request_limits(raw, calibration_dir)
    if raw.get("model") not in (None, ""):
        from gpuplan.catalog import model_entry

        raw["model"] = model_entry(str(raw["model"]))["id"]
    return raw
