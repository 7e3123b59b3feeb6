import json

import pytest

from gpuplan.cli import main


@pytest.fixture
def run_cli(capsys):
    """Run the CLI in-process: returns (exit status, stdout, stderr)."""

    def run(*args: str):
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def run_json(run_cli):
    def run(*args: str) -> dict:
        code, out, err = run_cli(*args, "--json")
        assert code == 0, err
        return json.loads(out)

    return run


@pytest.fixture(scope="module")
def published_rows():
    """The published-throughput rows by id (jobs.validation.published_throughput.published_throughput_rows)."""
    from gpuplan.jobs.validation.published_throughput import published_throughput_rows

    return {r["id"]: r for r in published_throughput_rows()}
