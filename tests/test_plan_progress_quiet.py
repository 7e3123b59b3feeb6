"""The plan search's progress bar stays off stderr that is not a terminal: a refusal there is one
line (rich's transient bar ended with a newline when captured, a blank line before the error)."""

from gpuplan.commands.plan import _LateProgress


def test_no_progress_bar_on_captured_stderr(capsys):
    progress = _LateProgress()
    progress._clock = lambda: progress._start + 5.0  # a search running for 5 s
    with progress:
        progress(1, 10)
        assert progress._bar is None
    assert capsys.readouterr().err == ""


def test_progress_bar_on_a_terminal(monkeypatch):
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    progress = _LateProgress()
    progress._clock = lambda: progress._start + 5.0
    with progress:
        progress(1, 10)
        assert progress._bar is not None
