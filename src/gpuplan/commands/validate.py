"""`gpuplan validate`: the estimators against the packaged published runs."""

import click

HELP = (
    "Run the estimators over the packaged reference set of published runs and measurements; print the "
    "error per kind. --out FILE also writes the accuracy tables (Markdown, e.g. docs/accuracy.md)."
)


def command():
    from gpuplan.commands.build import check_format, emit, format_options, schema_options, with_schema
    from gpuplan.jobs.validation.schema import ValidateInputs

    def callback(fmt="table", as_json=False, full=False, **flags):
        from gpuplan.jobs.validation.estimate import accuracy_markdown, validation_report

        check_format(fmt, as_json)  # before any work
        inputs = ValidateInputs.parse(flags)
        if inputs.out:
            from gpuplan.adapters.files import check_writable
            from gpuplan.errors import InputError

            if not inputs.out.lower().endswith((".md", ".markdown")):
                raise InputError("out", inputs.out, "is where the accuracy tables go, in Markdown: give a .md path "
                                 "(--json / --format choose what is printed, not what --out holds)")
            check_writable(inputs.out)
        report = validation_report()
        if inputs.out:
            from gpuplan.adapters.files import write_atomic

            write_atomic(inputs.out, accuracy_markdown(report))
        emit(report, fmt, as_json, full)

    return with_schema(
        click.Command(
            "validate",
            callback=callback,
            params=schema_options(ValidateInputs) + format_options(),
            help=HELP,
            short_help="The estimators against published runs.",
        ),
        ValidateInputs,
    )
