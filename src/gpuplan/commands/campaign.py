"""`gpuplan campaign FILE`: a training campaign in stages (a plan file with a `stages:` list), each stage budgeted as
`gpuplan budget` budgets it, and the campaign's totals (jobs/campaign, docs/campaign.md)."""

from __future__ import annotations

from typing import Any

HELP = ("A training campaign in stages: FILE is a YAML or TOML plan file with a `stages:` list, each stage the fields "
        "of a `gpuplan budget` plan file (top-level keys are defaults every stage inherits; a stage's own keys override "
        "them; an optional `name` a stage). One row per stage from its budget, and the totals: GPU-hours, cost "
        "on-demand and spot, calendar time with the stages run one after another.")


def command():
    import click

    from gpuplan.commands.build import format_options

    def callback(file: str, fmt: str = "table", as_json: bool = False, full: bool = False) -> None:
        from gpuplan.adapters.plan_file import read_plan_file
        from gpuplan.commands.build import check_format, plan_relative_paths
        from gpuplan.errors import InputError
        from gpuplan.jobs.campaign.estimate import estimate_campaign

        check_format(fmt, as_json)
        if not str(file).lower().endswith((".yaml", ".yml", ".toml")):
            raise InputError("file", file, "a campaign is a plan file: .yaml, .yml or .toml (docs/campaign.md)")
        document = read_plan_file(file)  # the plan-file loader's limits: a regular file, 1 MiB, safe YAML, no aliases
        answer = estimate_campaign(document, str(file), lambda raw: plan_relative_paths(raw, file))
        write(answer, fmt, as_json, full)  # written only once every stage has answered

    params: list[Any] = [click.Argument(["file"], metavar="FILE")] + format_options()
    return click.Command("campaign", callback=callback, params=params, help=HELP,
                         short_help="A training campaign in stages: each stage's budget and the totals")


def write(answer, fmt: str, as_json: bool, full: bool) -> None:
    """Print ``answer`` (CampaignAnswer): JSON with every stage's whole budget report; else the stages' table and the
    totals, after each stage's own budget report with ``full``."""
    import sys

    from gpuplan.commands.build import emit

    if as_json or fmt == "json":
        import json

        from gpuplan.report.render import _json_default

        sys.stdout.write(json.dumps(answer.to_dict(), indent=2, default=_json_default, allow_nan=False) + "\n")
        return
    if full:
        from gpuplan.report.render import md_text

        head = {"markdown": "## {}: {}\n\n", "csv": "# {}: {}\n"}.get(fmt, "== {}: {}\n")
        for stage in answer.stages:  # a name in Markdown as every Markdown text is written ('<' as &lt;, '|' escaped)
            name = md_text(stage.stage.name) if fmt == "markdown" else stage.stage.name
            sys.stdout.write(head.format(stage.stage.label, name))
            emit(stage.report, fmt, False, True)
            sys.stdout.write("\n")
    from gpuplan.jobs.campaign.report import campaign_report

    emit(campaign_report(answer), fmt, False, True)
