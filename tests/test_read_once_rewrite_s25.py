"""adapters.read_once keeps a reader's result under the hash of the bytes it read (review R2 N): it hashed the file,
then load() read it again, so a rewrite in between was kept under the old bytes' key and answered for them."""

from gpuplan.adapters import read_once as R


def test_a_file_rewritten_while_it_is_read_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "_KEPT", {})
    path = tmp_path / "cal.json"
    path.write_text("A")
    reads = []

    def load_while_rewritten():  # the reader sees the new bytes: the key was made from the old ones
        path.write_text("B")
        reads.append(path.read_text())
        return reads[-1]

    assert R.read_once(path, "calibration", load_while_rewritten) == "B"
    path.write_text("A")  # the bytes hashed before: "B" must not be answered for them
    assert R.read_once(path, "calibration", lambda: path.read_text()) == "A"


def test_an_unchanged_file_is_read_once(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "_KEPT", {})
    path = tmp_path / "cal.json"
    path.write_text("A")
    calls = []
    for _ in range(3):
        assert R.read_once(path, "calibration", lambda: calls.append(1) or "A") == "A"
    assert len(calls) == 1
