"""Hostile inputs, wave 30 (helper H4, session 26): each case is refused in one line naming the field, exit status 2,
or answered in time, at every door that takes it, with nothing half-written."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from gpuplan.errors import InputError

# ---- 1. adapters.read_once: a FIFO swapped in for the file between its check and its read -------------------------


class _Waited(Exception):
    pass


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not hasattr(signal, "SIGALRM"), reason="needs FIFOs and SIGALRM")
def test_a_fifo_swapped_in_after_the_check_is_not_waited_on(tmp_path, monkeypatch):
    """read_once hashed the file by a stat of its name, then Path.read_bytes() of it: a FIFO put in its place between
    the two (a config.json or a calibration file swapped while `memory` or the web API reads it) was opened for a
    blocking read, which waits for a writer forever. The swap is made certain here: the name's stat reports the
    regular file it was. Now the descriptor is opened without waiting and checked; the reader refuses the FIFO."""
    from gpuplan.adapters import read_once as R

    monkeypatch.setattr(R, "_KEPT", {})
    regular = tmp_path / "was.json"
    regular.write_text("{}")
    fifo = tmp_path / "cal.json"
    os.mkfifo(fifo)
    real_stat = Path.stat
    monkeypatch.setattr(Path, "stat", lambda self, **kw: real_stat(regular if self == fifo else self, **kw))

    def refuse():
        raise InputError("calibration", str(fifo), "is not a regular file (a device, FIFO or socket); expected a file")

    def waited(*_):
        raise _Waited

    previous = signal.signal(signal.SIGALRM, waited)
    signal.alarm(5)
    try:
        with pytest.raises(InputError, match="is not a regular file"):
            R.read_once(fifo, "calibration", refuse)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
