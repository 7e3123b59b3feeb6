"""The budget's notes (jobs/budget/notes.py): a run whose goodput is under half is told it mostly recovers from
failures, first among the notes (hostile wave 22, H's item 5: `budget llama-3.1-405b --gpus 16384 --storage-write 1e-3
--failure-rate 1e-3` printed goodput 0.0% and 2,595,022,840 days with no word said)."""

import json

import pytest

from gpuplan.jobs.budget.notes import LOW_GOODPUT

ASK = ("budget", "llama-3.1-405b", "--gpu", "h100", "--gpus", "16384", "--tokens", "1e13", "--mfu", "0.4", "--json")


def _goodput_and_notes(run_cli, *extra):
    code, out, err = run_cli(*ASK, *extra)
    assert code == 0, err
    report = json.loads(out)
    goodput = next(line["value"] for sec in report["sections"] for line in sec["lines"] if line["key"] == "fail_goodput")
    return goodput, [n for n in report["notes"] if "recovering from failures" in n]


@pytest.mark.parametrize("extra, low", [(("--storage-write", "1e-3", "--failure-rate", "1e-3"), True),
                                        (("--failure-rate", "2e-4"), None), ((), False)])
def test_a_run_that_mostly_recovers_is_told_so(run_cli, extra, low):
    goodput, notes = _goodput_and_notes(run_cli, *extra)
    assert bool(notes) == (goodput < LOW_GOODPUT)  # the note follows the printed goodput, whichever side it falls
    if low is not None:
        assert (goodput < LOW_GOODPUT) == low, goodput
    if notes:
        assert notes[0].startswith(f"goodput {goodput:.1%}: this run spends most of its wall-clock")


def test_a_spot_run_that_mostly_recovers_is_told_so(run_cli):
    # review s20b S4: spot goodput 0.0%, 2.16M days and $2.0 trillion with no note (on demand completes normally)
    ask = ("budget", "llama-3.1-8b", "--gpu", "h100", "--mfu", "0.4", "--gpus", "16384", "--tokens", "15T", "--json")
    for preemption, told in (("20", True), ("0.15", False)):
        code, out, err = run_cli(*ask, "--spot-preemption", preemption)
        assert code == 0, err
        report = json.loads(out)
        spot = [n for n in report["notes"] if n.startswith("spot goodput")]
        assert bool(spot) == told, report["notes"]
        if told:
            assert "run on demand, or give a lower --spot-preemption" in spot[0]
