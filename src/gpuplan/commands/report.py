"""`gpuplan report PLANFILE --out report.html [--markdown report.md] [--lang zh]`: a shareable,
self-contained report of a plan file — the training budget, memory, the layout search and
(when the file has serving fields) inference — with the same plots as the web page.

A plan file is the flat mapping `gpuplan train`/`memory`/`plan` read; each section gets the
fields its job's schema takes. Serving fields (context, batch, quantization, ...) go to the
inference section, which also reads an optional ``inference:`` mapping for serving values of
shared fields (``tp``, ``pp``, ``gpus`` of the serving setup rather than of training).
"""

from __future__ import annotations

from typing import Any

import click

from gpuplan.errors import CAMPAIGN_KEY, null_refusal

TRAINING_SECTIONS = ("budget", "memory", "plan")
SHARED_WITH_INFERENCE = ("model", "params", "gpu", "price")
HELP = (
    "Write a self-contained HTML report (and Markdown) of a plan file, with plots: memory per GPU against "
    "capacity, time and cost vs GPU count, ranked layouts and the Pareto front, and the serving capacity curve."
)


def _check_nested(nested: dict[str, Any], data: dict[str, Any], serving_only: set[str], where: str) -> None:
    """The ``inference:`` mapping as a top-level key is checked (hostile wave 27): a null is not the default in
    disguise (`inference: {tp: null}` served the default where a top-level `tp: null` is refused), and a serving-only
    field is given in one place (`batch: 4` beside `inference: {batch: 8}` served 8, nothing said)."""
    from gpuplan.errors import InputError

    for key, value in nested.items():
        if value is None:
            raise null_refusal(f"inference.{key}", where)  # the one wording at every door (errors.NULL_TEXT)
        if key in serving_only and key in data:
            raise InputError(f"{where}: inference.{key}", value, f"is given twice, also at the top level "
                             f"({data[key]}); a serving-only field goes in one place (inference: is for the serving "
                             "values of fields training reads too: tp, pp, gpus)")


def reports_for_plan(data: dict[str, Any], where: str, sections: str | tuple[str, ...] | None = None) -> list:
    """Run each section's job on the plan-file fields its schema takes; InputError on unknown
    fields (naming them) or bad values."""
    from gpuplan.errors import InputError
    from gpuplan.jobs import JOBS
    from gpuplan.report.schema import DEFAULT_SECTIONS

    if isinstance(sections, str):
        from gpuplan.report.schema import ReportInputs

        sections = ReportInputs.parse({"plan": where, "sections": sections}).sections
    data = dict(data)
    nested = data.pop("inference", None)
    if nested is not None and not isinstance(nested, dict):
        raise InputError(f"{where}: inference", nested, "expected a mapping of serving fields")
    fields = {name: set(JOBS[name].schema.model_fields) for name in (*TRAINING_SECTIONS, "inference")}
    training = set().union(*(fields[name] for name in TRAINING_SECTIONS))
    serving_only = fields["inference"] - training
    _check_nested(nested or {}, data, serving_only, where)
    unknown = sorted(set(data) - training - serving_only)
    if CAMPAIGN_KEY in unknown:  # a campaign file: named with what runs it (schema.base), not as an unknown field
        from gpuplan.schema.base import campaign_refusal

        raise campaign_refusal(data[CAMPAIGN_KEY], where)
    if unknown:
        raise InputError(
            f"{where}: {unknown[0]}",
            data[unknown[0]],
            "unknown field; valid fields: " + ", ".join(sorted(training | serving_only)),
        )
    if sections is None:
        has_serving = bool(nested) or any(k in serving_only for k in data)
        sections = DEFAULT_SECTIONS + (("inference",) if has_serving else ())
    data.setdefault("gpu", JOBS["budget"].schema.model_fields["gpu"].default)  # one GPU type for every section

    def raw_for(name: str) -> dict[str, Any]:
        if name == "inference":
            return {k: v for k, v in data.items() if k in serving_only or k in SHARED_WITH_INFERENCE} | (nested or {})
        return {k: v for k, v in data.items() if k in fields[name]}

    done: dict[str, Any] = {}

    def run(name: str):
        """The section's job, through the door every command's job takes (commands.build.run_typed: a refusal
        after parsing quotes the text written for its field; `ttft_p99: 1ms` was told 'got 0.001' here once).
        shard_group auto: memory checks the budget's layout (report.shard_group_memory)."""
        from gpuplan.commands.build import run_typed
        from gpuplan.jobs.inference.tpu_serving import NotServedOnTpu, in_report
        from gpuplan.report import shard_group_memory as auto

        if name in done:
            return done[name]
        fields, note = raw_for(name), ""
        if name == "memory" and auto.searches_groups(fields):
            fields, note = auto.with_budget_layout(fields, run("budget"))
        try:
            report = run_typed(JOBS[name].run, JOBS[name].schema, fields, where)
        except NotServedOnTpu as refusal:  # the shared gpu is a TPU: name the serving section's own field
            if name == "inference" and "gpu" not in (nested or {}):
                raise in_report(refusal) from None
            raise
        if name == "memory" and not note and "budget" in sections:
            from gpuplan.report.layout_note import with_budget_contrast

            report = with_budget_contrast(report, run("budget"))
        done[name] = report.with_note(note) if note else report
        return done[name]

    if "inference" not in sections and (nested or any(k in serving_only for k in data)):
        # serving fields in a report without its inference section are still checked, not ignored
        run("inference")
    read = set().union(*(fields[name] for name in sections if name != "inference"))
    unread = set(data) - read - (serving_only | set(SHARED_WITH_INFERENCE) if "inference" in sections else set())
    for name in ("memory", "budget", "plan"):  # so are training fields no section asked reads (hostile w30:
        if name not in sections and unread & fields[name]:  # `--sections inference` wrote `zero: 7`, `days: -5`)
            JOBS[name].schema.parse(raw_for(name), where)  # parsed, not estimated: a layout no search fits or
            unread -= fields[name]  # `rank_by: cost` must not cost or kill a report that does not show it
    return [run(name) for name in sections]


def _utf8(text: str) -> bool:
    """Whether ``text`` is UTF-8 text: a name holding a byte that is not (read as a surrogate, U+DCFF for 0xff) made
    the Markdown's plot links unwritable after the plots were written (exit 70; hostile wave 27)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def command():
    from gpuplan.commands.build import PATH_FIELDS, plan_relative_paths, schema_options, with_schema
    from gpuplan.report.schema import ReportInputs

    def callback(plan: str, **flags: Any) -> None:
        import os
        import sys
        from pathlib import Path

        from gpuplan.adapters.files import check_writable, write_atomic
        from gpuplan.adapters.plan_file import is_plan_file, read_plan_file, refusals_name
        from gpuplan.errors import InputError, printable
        from gpuplan.report.html import build_documents
        from gpuplan.report.i18n import translator

        inputs = ReportInputs.parse({"plan": plan, **flags})
        if not is_plan_file(inputs.plan):
            raise InputError("plan", inputs.plan, "expected a .yaml, .yml or .toml plan file")
        for target, field in ((inputs.out, "out"), (inputs.markdown, "markdown")):
            if target:
                check_writable(target, field, inputs=(inputs.plan,))  # before any work; never over the plan
        if inputs.out and inputs.markdown and Path(inputs.out).resolve() == Path(inputs.markdown).resolve():
            raise InputError("markdown", inputs.markdown, "names the same file as --out; give the Markdown and the "
                             "HTML report different paths")
        if inputs.markdown and inputs.plots:
            folder = Path(inputs.markdown).parent / f"{Path(inputs.markdown).stem}-plots"
            if not Path(inputs.markdown).stem.isascii() and not _utf8(Path(inputs.markdown).stem):
                raise InputError("markdown", inputs.markdown, "is not UTF-8 text, and the Markdown links its plots by "
                                 "this name; rename it, or pass --no-plots")
            if folder.is_symlink():  # followed before: the plots went wherever a planted link pointed
                raise InputError("markdown", inputs.markdown, f"its plots go in {folder}, a symbolic link (to "
                                 f"{os.readlink(folder)}); remove it, choose another --markdown name, or pass --no-plots")
            if folder.exists() and not folder.is_dir():
                raise InputError("markdown", inputs.markdown, f"its plots go in {folder}, which exists and is not a "
                                 "folder; move that file, choose another --markdown name, or pass --no-plots")
        if inputs.plots:
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                raise InputError(
                    "plots", "matplotlib", "is not installed; pip install 'gpuplan[plot]' or pass --no-plots"
                ) from None
            except ValueError as exc:  # matplotlib checks its settings at import: MPLBACKEND=nonsense (w29: exit 70)
                names = sorted(k for k in os.environ if k.startswith(("MPL", "MATPLOTLIB")))
                why = str(exc).split(";")[0][:80]
                raise InputError("environment", ", ".join(names) or "matplotlibrc", f"matplotlib cannot read its "
                                 f"settings ({why}); fix or unset them, or pass --no-plots") from None
        raw = plan_relative_paths(read_plan_file(inputs.plan), inputs.plan)
        read = (inputs.plan, *(raw.get(k) for k in PATH_FIELDS if isinstance(raw.get(k), str)))
        for target, field, suffixes in ((inputs.out, "out", (".html", ".htm")), (inputs.markdown, "markdown",
                                                                                 (".md", ".markdown"))):
            if target:  # nor over a file the plan names (its config.json); HTML / Markdown names only
                check_writable(target, field, inputs=read, suffixes=suffixes)
        with refusals_name(inputs.plan):  # every refusal of the plan's jobs names the file (adapters.plan_file)
            reports = reports_for_plan(raw, inputs.plan, inputs.sections)
        md_path = Path(inputs.markdown) if inputs.markdown else None
        image_dir = f"{md_path.stem}-plots" if md_path else "report-plots"
        docs = build_documents(reports, inputs.lang, inputs.plots, source=printable(Path(inputs.plan).name),
                               image_dir=image_dir)  # a tab in the name: escaped, as refusals name it
        t = translator(inputs.lang)
        if md_path is not None:
            if docs.images:
                (md_path.parent / image_dir).mkdir(exist_ok=True)
            for relative, data in docs.images.items():
                write_atomic(md_path.parent / relative, data, "markdown")
            write_atomic(md_path, docs.markdown, "markdown", read)
            sys.stdout.write(t("messages.wrote", path=md_path) + "\n")
        if inputs.out:
            write_atomic(inputs.out, docs.html, "out", read)
            sys.stdout.write(t("messages.wrote", path=inputs.out) + "\n")
        else:
            sys.stdout.write(docs.html)

    params = [click.Argument(["plan"])] + schema_options(ReportInputs, skip=("plan",))
    return with_schema(
        click.Command(
            "report",
            callback=callback,
            params=params,
            help=HELP + "\n\nPLAN: " + ReportInputs.model_fields["plan"].description,
            short_help="A report of a plan file.",
        ),
        ReportInputs,
    )
