"""Hostile inputs, wave 27b (helper HX2, session 24): what the API says it serves, unknown options, calibration
factors out of any measured range. Each case is refused in one line naming the field, exit status 2, at every door
that takes it."""

from __future__ import annotations

import pytest

# ---- 1. /api/health lists every estimator route, read from the routes themselves ----------------------------------


def test_health_lists_every_post_route_the_api_serves(client):
    """/api/health listed the five jobs, not POST /api/campaign; it now reads the router's own routes."""
    health = client.get("/api/health").json()["estimators"]
    posted = {path.removeprefix("/api/") for path, ops in client.get("/openapi.json").json()["paths"].items()
              if "post" in ops}
    assert set(health) == posted == {"training", "budget", "memory", "plan", "inference", "campaign"}
    assert health["campaign"] is True


# ---- 2. an option the command does not have: named, with the command's closest options --------------------------


@pytest.mark.parametrize("args, line", [
    (("train", "--gpu-count", "8"), "--gpu-count: not an option of gpuplan train; did you mean --gpus, --gpu, "
                                     "--gpus-per-node? (gpuplan train --help lists them)"),
    (("train", "--num-gpus", "8"), "--num-gpus: not an option of gpuplan train; did you mean --gpus? (gpuplan train "
                                   "--help lists them)"),
    (("train", "--seqlen", "8K"), "--seqlen: not an option of gpuplan train; did you mean --seq-len? (gpuplan train "
                                  "--help lists them)"),
    (("train", "--tensor-model-parallel-size", "2"), "--tensor-model-parallel-size: not an option of gpuplan train; "
                                                     "did you mean --tp? (gpuplan train --help lists them)"),
    (("infer", "--tp-size", "2"), "--tp-size: not an option of gpuplan infer; did you mean --tp, --group-size? "
                                  "(gpuplan infer --help lists them)"),
    (("train", "--lr", "1e-4"), "--lr: not an option of gpuplan train (gpuplan train --help lists them)"),
    (("campaign", "c.yaml", "--tokens", "1B"), "--tokens: not an option of gpuplan campaign; a stage's field goes in "
                                               "FILE: at the top level (every stage inherits it) or in a stage "
                                               "(gpuplan campaign --help lists them)"),
    (("campaign", "c.yaml", "--jsn"), "--jsn: not an option of gpuplan campaign; did you mean --json? (gpuplan "
                                      "campaign --help lists them)"),
    (("catalog", "models", "--filtr", "x"), "--filtr: not an option of gpuplan catalog models; did you mean "
                                            "--filter? (gpuplan catalog models --help lists them)"),
    (("--verbos",), "--verbos: not an option of gpuplan; did you mean --version? (gpuplan --help lists them)"),
])
def test_an_unknown_option_is_named_with_the_commands_closest(run_cli, args, line):
    """click said "No such option: '--gpu-count'" with its own guesses (--cpu-cores, --gpu, --spot-discount), or none
    (campaign FILE --tokens 1B, whose stage fields go in the file)."""
    code, out, err = run_cli(*args)
    assert (code, out, err) == (2, "", f"error: {line}\n")


def test_a_negated_switch_is_offered_in_its_positive_form():
    from gpuplan.commands.unknown_option import closest_options

    assert closest_options("--compiled", ["--compile", "--no-compile", "--json"]) == ["--compile"]
    assert closest_options("--no-compiled", ["--compile", "--no-compile"])[0] == "--no-compile"
