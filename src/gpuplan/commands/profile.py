"""`gpuplan profile`: a short real training run (trial) that writes a measurement JSON. Under
torchrun (`torchrun --nproc-per-node N -m gpuplan profile MODEL ...`) every rank runs it and rank 0
prints and writes."""

HELP = ("Train MODEL briefly on synthetic tokens (random weights, nothing downloaded) and record step time, "
        "tokens/s, MFU/HFU and peak memory beside gpuplan's estimate. Needs the profile extra. Several GPUs: "
        "torchrun --nproc-per-node N -m gpuplan profile MODEL ...")


def command():
    from gpuplan.commands.build import job_command
    from gpuplan.profile.schema import TrialInputs

    def run(inputs):
        import os

        from gpuplan.profile.trial import check_parallelism, run_trial
        from gpuplan.profile.trial_report import trial_report

        inputs.spec()  # the config read and checked before torch (a sequence past GPT-2's positions: exit 70)
        check_parallelism(inputs.parallelism)  # before a sweep's folder: every run would be skipped for it
        if inputs.out and not inputs.sweep:
            from gpuplan.adapters.files import check_writable

            model = inputs.model or ""  # a config.json (or its folder) is an input: never written over
            check_writable(inputs.out, inputs=(model, os.path.join(model, "config.json")),  # before training
                           suffixes=(".json",))
        if inputs.sweep:
            from gpuplan.profile.sweep import run_sweep, sweep_report

            from gpuplan.adapters.files import check_out_folder

            out_dir = str(check_out_folder(inputs.out or "gpuplan-sweep"))  # before training
            return sweep_report(run_sweep(inputs.settings(), out_dir, inputs.sweep_budget), out_dir)
        data = run_trial(inputs.settings(), inputs.out)
        if int(os.environ.get("RANK", "0")) != 0:
            return None  # rank 0 prints and writes
        return trial_report(data, inputs.out)

    return job_command("profile", TrialInputs, run, HELP, target_help="The model: a catalog name, a Hugging Face "
                       "id, or a config.json (or a folder holding one); or a plan file.")
