"""`gpuplan memory`: per-GPU training memory of a layout."""

HELP = ("Per-GPU training memory: states by recipe, activations, overheads, a verdict per GPU type, the "
        "largest micro-batch, and what would make it fit.")


def command():
    from gpuplan.commands.build import job_command
    from gpuplan.jobs import JOBS

    job = JOBS["memory"]
    return job_command("memory", job.schema, job.run, HELP)
