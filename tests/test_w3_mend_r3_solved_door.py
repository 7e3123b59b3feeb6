"""The --gpus + --days door (the MFU solved, jobs.training.timing._solve_mfu) refuses a run failures never let
finish by the same rule as every other door (review w10 r3 S3): it names the global batch given, not `gpus`
with 'fewer GPUs' (which cannot help a fixed batch), and prints an offer only once a re-run answered it
(jobs.plan.offer.answering_offer): at the completion cut-off the wall-clock with failures grows up to e^50, so
on this door the offer is refused on gpus/days and the refusal says 'no offer'."""

import pytest

from gpuplan.cli import main

ASK = ["budget", "llama-3.1-405b", "--global-batch-tokens", "1e12", "--failure-rate", "0.01"]


@pytest.mark.parametrize("gpus,days,tried", [("1024", "400", "5.890048e+08"), ("4096", "90", "6.5470464e+08")])
def test_solved_door_names_the_batch_and_prints_no_unchecked_offer(capsys, gpus, days, tried):
    code = main(ASK + ["--gpus", gpus, "--days", days])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    line = err[0]
    assert line.startswith("error: global_batch_tokens: got 1000000000000;"), line
    assert "with a fixed global batch no GPU count changes that" in line and "fewer GPUs" not in line
    assert f"no offer: the batch tried ({tried} tokens a step) was refused on gpus/days" in line


def test_the_batch_it_tried_is_refused_on_mfu(capsys):
    """The 'was refused on gpus/days' the line above quotes: re-run on its batch, the door needs an MFU of 1,719%."""
    code = main(["budget", "llama-3.1-405b", "--global-batch-tokens", "5.890048e8", "--failure-rate", "0.01",
                 "--gpus", "1024", "--days", "400"])
    err = capsys.readouterr().err
    assert code == 2 and "gpus/days: got '1,024 GPUs in 400.00 days'; needs MFU 1719.0%" in err


def test_where_no_batch_helps_it_names_gpus(capsys):
    """16,384 GPUs at 0.01: the restart alone outlasts the time between failures, so no step is short enough
    (largest_step_tokens 0); fewer GPUs is the remedy, as on the given-count door."""
    code = main(ASK + ["--gpus", "16384", "--days", "300"])
    line = capsys.readouterr().err.strip()
    assert code == 2 and line.startswith("error: gpus: got '16,384';") and "fewer GPUs" in line
