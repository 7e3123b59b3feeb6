"""The web page's shard-group input (--shard-group, a number or auto) in a real headless Chromium, with
tests/test_web_e2e.py's server, browser and page; skipped, with its reason, where that module is (no Playwright or
no Chromium binary)."""

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")

from test_web_e2e import (CHROMIUM, api, browser, calculate, card, line_text, open_page, page,  # noqa: E402,F401
                          pick_model, server)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium binary (apt-get install chromium, or set "
                                "GPUPLAN_CHROMIUM)")
ASK = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "tokens": "1T", "gpus": "512"}


def _fill(page, server, group: str) -> None:
    open_page(page, server)
    pick_model(page, ASK["model"])
    page.select_option("#gpu", ASK["gpu"])
    page.fill("#tokens", ASK["tokens"])
    page.fill("#gpus", ASK["gpus"])
    page.fill("#plan_gpus", ASK["gpus"])
    page.fill("#shard_group", group)
    calculate(page)


def test_auto_reaches_the_plan_and_budget_panels_and_memory_takes_the_chosen_group(server, page):
    _fill(page, server, "auto")
    plan = api("plan", {**ASK, "shard_group": "auto"})
    assert card(page, "plan", "best_layout") == line_text(plan, "best_layout")
    budget = api("budget", {**ASK, "shard_group": "auto"})
    assert card(page, "budget", "mem_layout") == line_text(budget, "mem_layout")
    assert page.get_attribute("#panel-memory", "data-state") != "error"  # memory got the budget's group, not auto
    assert "shard_group=auto" in page.url


def test_a_number_reaches_the_panels_and_a_bad_one_is_shown_at_the_field(server, page):
    _fill(page, server, "8")
    budget = api("budget", {**ASK, "shard_group": "8"})
    assert "(HSDP: shard 8)" in card(page, "budget", "mem_layout") == line_text(budget, "mem_layout")
    page.fill("#shard_group", "automatic")
    calculate(page)
    assert "shard_group: got 'automatic'" in page.text_content("#shard_group-error")
