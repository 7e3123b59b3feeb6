"""`gpuplan budget`: the same inputs and report as `gpuplan train`, headed by its cost lines."""

HELP = ("The training budget of `gpuplan train` (same inputs), headed by its cost lines: on-demand vs spot, "
        "failures and goodput, checkpoints, data loading, named contingency.")


def command():
    from gpuplan.commands.build import job_command
    from gpuplan.jobs import JOBS

    job = JOBS["budget"]

    def run(inputs):
        from gpuplan.jobs.budget.estimate import with_cost_headline

        return with_cost_headline(job.run(inputs))

    return job_command("budget", job.schema, run, HELP)
