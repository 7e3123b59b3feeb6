"""`gpuplan plan`: search every valid layout and rank them."""

HELP = ("Search every valid parallel layout (dp, tp, pp, vpp, cp, ep, ZeRO, micro-batch, recompute), drop those "
        "that do not fit memory, rank the rest; Pareto front of GPUs vs days vs cost.")


def command():
    from gpuplan.commands.build import job_command
    from gpuplan.jobs import JOBS

    def run(inputs):
        from gpuplan.jobs.plan.estimate import plan_report

        with _LateProgress() as progress:
            return plan_report(inputs, progress)

    return job_command("plan", JOBS["plan"].schema, run, HELP)


class _LateProgress:
    """A rich progress bar on stderr that appears only once a search has run for a second, and only
    on a terminal: piped or captured stderr gets nothing (rich's transient bar still ends with a
    newline there, which put a blank line before a refusal's one line)."""

    def __init__(self) -> None:
        import sys
        import time

        self._start, self._bar, self._task, self._clock = time.perf_counter(), None, None, time.perf_counter
        self._shown = sys.stderr.isatty()

    def __enter__(self):
        return self

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None and self._shown and self._clock() - self._start > 1.0:
            from rich.console import Console
            from rich.progress import Progress

            self._bar = Progress(console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("searching layouts", total=total)
        if self._bar is not None:
            self._bar.update(self._task, completed=done)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()
