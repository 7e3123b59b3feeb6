"""`gpuplan measure`: measure a training step's memory on the CPU beside the estimate."""

HELP = ("Measure a real training step's memory on the CPU (FakeTensorMode; needs the profile extra) and "
        "compare it with the estimate, category by category.")


def command():
    from gpuplan.commands.build import job_command
    from gpuplan.jobs.measure.schema import MeasureInputs

    def run(inputs):
        from gpuplan.jobs.measure.estimate import measure_report

        return measure_report(inputs)

    return job_command("measure", MeasureInputs, run, HELP, target_help="The model: a catalog name, a Hugging "
                       "Face id, or a config.json (or a folder holding one); or a plan file.")
