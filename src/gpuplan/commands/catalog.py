"""`gpuplan catalog models|gpus`: the model and accelerator catalogs."""

import click


def command():
    from gpuplan.commands.build import emit, format_options, schema_options, with_schema
    from gpuplan.jobs.catalog.schema import CatalogInputs

    group = click.Group("catalog", help="List the model and accelerator catalogs.",
                        short_help="List the model and accelerator catalogs.")

    def listing(kind: str, help: str) -> click.Command:
        def callback(fmt="table", as_json=False, full=False, **flags):
            from gpuplan.jobs.catalog.listing import gpu_catalog_report, model_catalog_report

            inputs = CatalogInputs.parse(flags)
            report = (model_catalog_report if kind == "models" else gpu_catalog_report)(inputs.filter)
            emit(report, fmt, as_json, True)  # a listing is its own answer: always in full

        return with_schema(click.Command(kind, callback=callback, help=help,
                                         params=schema_options(CatalogInputs) + format_options(with_full=False)),
                           CatalogInputs)

    group.add_command(listing("models", "Catalog models with counted and published parameter counts."))
    group.add_command(listing("gpus", "Catalog accelerators with dense peaks, memory and bandwidth."))
    return group
