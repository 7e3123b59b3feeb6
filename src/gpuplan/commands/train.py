"""`gpuplan train`: the training budget in one view (the budget job; the article's example with
no arguments)."""

HELP = ("The training budget in one view: compute, GPU count or time, memory per GPU, data loading, "
        "checkpoints, failures, cost (on-demand vs spot) and contingency. With no arguments: the article's "
        "example (7B parameters, 2T tokens, A100, 40% MFU, 7 days).")


def command():
    from gpuplan.commands.build import job_command
    from gpuplan.jobs import JOBS

    job = JOBS["budget"]
    return job_command("train", job.schema, job.run, HELP)
