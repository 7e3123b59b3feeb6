"""--dp-overlap is shown as it acts (final8 SHOULD): a cap applied only when given (jobs.plan.search.step_settings
reads it only from inputs.given), so its help prints '[default: no cap]' where it printed '[default: 0.9]', a value
no step used."""

import pytest

ARGS = ("llama-2-7b", "--gpu", "a100", "--gpus", "64", "--framework", "megatron", "--zero", "1", "--tp", "1",
        "--pp", "2", "--micro-batch", "1", "--mfu", "predicted")


@pytest.mark.parametrize("command", ["train", "plan", "budget"])
def test_help_shows_no_cap(run_cli, command):
    code, out, _ = run_cli(command, "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "(overlap_comm: no input). [default: no cap]" in flat, flat[flat.find("--dp-overlap"):][:400]


def test_the_shown_default_is_what_runs(run_json):
    """Not given = no cap = a cap of 1 (hide what the schedule hides): 14.895 s for this megatron layout."""
    plain = run_json("train", *ARGS)["results"]["io_step_seconds"]
    assert run_json("train", *ARGS, "--dp-overlap", "1")["results"]["io_step_seconds"] == pytest.approx(plain, rel=1e-12)
