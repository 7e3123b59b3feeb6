"""`gpuplan infer`: serving memory, capacity, latency, throughput and cost."""

HELP = ("Serving memory (weights by format, KV cache, runtime), capacity (sequences at a context, context at a "
        "batch), TTFT / time per output token / throughput vs batch, cost per million tokens, and the smallest "
        "and cheapest catalog configuration. No arguments: the article's 7B in FP16 (14 GB of weights plus KV "
        "cache -> a GPU of at least 24 GB).")


def command():
    from gpuplan.commands.build import job_command
    from gpuplan.jobs import JOBS

    job = JOBS["inference"]
    return job_command("infer", job.schema, job.run, HELP)
