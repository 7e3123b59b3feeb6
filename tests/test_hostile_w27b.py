"""Hostile inputs, wave 27b (helper HX2, session 24): what the API says it serves, unknown options, calibration
factors out of any measured range. Each case is refused in one line naming the field, exit status 2, at every door
that takes it."""

from __future__ import annotations

import pytest

# ---- 1. /api/health lists every estimator route, read from the routes themselves ----------------------------------


def test_health_lists_every_post_route_the_api_serves(client):
    """/api/health listed the five jobs, not POST /api/campaign; it now reads the router's own routes."""
    health = client.get("/api/health").json()["estimators"]
    posted = {path.removeprefix("/api/") for path, ops in client.get("/openapi.json").json()["paths"].items()
              if "post" in ops}
    assert set(health) == posted == {"training", "budget", "memory", "plan", "inference", "campaign"}
    assert health["campaign"] is True
