"""`gpuplan report PLANFILE --out report.html [--markdown report.md] [--lang zh]`: a shareable,
self-contained report of a plan file — the training budget, memory, the layout search and
(when the file has serving fields) inference — with the same plots as the web page.

A plan file is the flat mapping `gpuplan train`/`memory`/`plan` read; each section gets the
fields its command takes. Serving fields (context, batch, quantization, ...) go to the inference
section, which also reads an optional ``inference:`` mapping for fields whose meaning differs
when serving (``tp``, ``pp``, ``gpus``). Only typer is imported at module import.
"""

from typing import Annotated, Any, Optional

import typer

SECTIONS = ("budget", "memory", "plan", "inference")
DEFAULT_SECTIONS = ("budget", "memory", "plan")
SHARED_WITH_INFERENCE = ("model", "params", "gpu", "price_per_gpu_hour")


def _training_fields() -> dict[str, tuple[str, ...]]:
    from gpuplan.web.estimators import fields_of

    return {name: fields_of(name) or () for name in ("budget", "memory", "plan")}


def parse_sections(text: str | None, has_serving: bool) -> tuple[str, ...]:
    from gpuplan.errors import InputError

    if text is None:
        return DEFAULT_SECTIONS + (("inference",) if has_serving else ())
    chosen = tuple(dict.fromkeys(part.strip().lower() for part in text.split(",") if part.strip()))
    bad = [s for s in chosen if s not in SECTIONS]
    if bad or not chosen:
        raise InputError("sections", text, f"comma-separated names from {', '.join(SECTIONS)}")
    return chosen


def reports_for_plan(data: dict[str, Any], where: str, sections: str | None = None) -> list:
    """Run each section's estimator on the plan-file fields it takes; InputError on unknown
    fields (naming them) or bad values."""
    from gpuplan.adapters.plan_file import plan_model, validate_plan_fields
    from gpuplan.errors import InputError
    from gpuplan.jobs.training.inputs import BUILTIN_DEFAULTS
    from gpuplan.web.estimators import ESTIMATORS, fields_of

    data = dict(data)
    nested = data.pop("inference", None)
    if nested is not None and not isinstance(nested, dict):
        raise InputError(f"{where}: inference", nested, "expected a mapping of serving fields")
    per_section = _training_fields()
    serving = fields_of("inference") or ()
    training = set().union(*per_section.values())
    serving_only = tuple(f for f in serving if f not in training)
    known = tuple(dict.fromkeys([*training, *serving_only]))
    data = validate_plan_fields(data, plan_model(known), where)
    if nested is not None:
        if not serving:
            raise InputError(f"{where}: inference", "inference", "the inference estimator is not installed")
        nested = validate_plan_fields(nested, plan_model(serving), f"{where}: inference")
    chosen = parse_sections(sections, bool(nested) or any(f in data for f in serving_only))
    data.setdefault("gpu", BUILTIN_DEFAULTS["gpu"])  # one GPU type for every section
    reports = []
    for name in chosen:
        if name == "inference":
            raw = {k: v for k, v in data.items() if k in serving_only or k in SHARED_WITH_INFERENCE}
            raw |= nested or {}
        else:
            raw = {k: v for k, v in data.items() if k in per_section[name]}
        reports.append(ESTIMATORS[name].run(raw))
    return reports


def register(app: typer.Typer) -> None:
    """Add `report` to ``app``."""

    @app.command()
    def report(
        plan: Annotated[str, typer.Argument(help="A plan file (.yaml/.yml/.toml) with the fields of gpuplan train, "
                                            "memory, plan (and serving fields for inference).")],
        out: Annotated[Optional[str], typer.Option(help="HTML file to write (self-contained). Default report.html.")] = None,
        markdown: Annotated[Optional[str], typer.Option(help="Also write Markdown here; its plots go to a "
                                                        "<name>-plots folder beside it.")] = None,
        lang: Annotated[Optional[str], typer.Option(help="Language of labels and messages: en or zh.")] = None,
        sections: Annotated[Optional[str], typer.Option(help="Comma-separated from budget, memory, plan, inference. "
                                                        "Default: budget,memory,plan (+inference with serving fields).")] = None,
        plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Draw the plots (needs the plot extra: "
                                            "matplotlib).")] = True,
    ) -> None:
        """Write a self-contained HTML report (and Markdown) of a plan file, with plots: memory
        per GPU against capacity, time and cost vs GPU count, ranked layouts and the Pareto front,
        and the serving capacity curve."""
        from pathlib import Path

        from gpuplan.adapters.plan_file import is_plan_file, read_plan_file
        from gpuplan.errors import InputError
        from gpuplan.report.html import build_documents
        from gpuplan.report.i18n import check_lang, translator

        language = check_lang(lang)
        if not is_plan_file(plan):
            raise InputError("plan file", plan, "expected a .yaml, .yml or .toml plan file")
        if plots:
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                raise InputError("plots", "matplotlib", "is not installed; pip install 'gpuplan[plot]' "
                                 "or pass --no-plots") from None
        reports = reports_for_plan(read_plan_file(plan), str(plan), sections)
        html_path = Path(out or "report.html")
        md_path = Path(markdown) if markdown else None
        image_dir = f"{md_path.stem}-plots" if md_path else "report-plots"
        docs = build_documents(reports, language, plots, source=Path(plan).name, image_dir=image_dir)
        t = translator(language)
        written = [_write(html_path, docs.html.encode("utf-8"))]
        if md_path is not None:
            written.append(_write(md_path, docs.markdown.encode("utf-8")))
            for relative, data in docs.images.items():
                _write(md_path.parent / relative, data)
        for path in written:
            typer.echo(t("messages.wrote", path=path))


def _write(path, data: bytes):
    from gpuplan.errors import InputError

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as exc:
        raise InputError("out", str(path), f"cannot be written ({exc.strerror or exc})") from None
    return path
