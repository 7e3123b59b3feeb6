"""A calibration file of the server's folder, rewritten, is answered with its new factors (review R2 S2-7).

The result cache (web.service.cache_key) was keyed on the request body, which holds the file's name: after the
operator rewrote cal.json from a 1.0 s log to a 2.0 s one, the same request kept answering the 1.0 s step. The key now
holds a SHA-256 of the file's bytes (web.calibration_files). The logs: five equal steps (the first skipped), llama-3-8b
tp 2 pp 2 on 8 H100 under megatron, planned at the log's layout with --cp 1 --vpp 1, so the calibrated step is the
log's (tests/test_calibration_round_trip_s25.py).
"""

import json

import pytest

FLAGS = ("--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--tp", "2", "--pp", "2", "--seq-len", "4096",
         "--zero", "1", "--micro-batch", "1", "--global-batch", "16", "--recompute", "none", "--framework", "megatron")
BODY = {"model": "llama-3-8b", "gpu": "h100", "gpus": 8, "tp": 2, "pp": 2, "cp": 1, "vpp": 1, "seq_len": 4096,
        "zero": 1, "micro_batch": 1, "global_batch": 16, "recompute": "none", "framework": "megatron", "tokens": 1e12,
        "mfu": "predicted", "calibration": "cal"}


def _calibrate(folder, seconds):
    from gpuplan.cli import main

    log = folder.parent / f"steps_{seconds}.csv"
    log.write_text("step,step_time_s\n" + "".join(f"{i},{seconds}\n" for i in range(1, 6)))
    assert main(["calibrate", str(log), *FLAGS, "--out", str(folder / "cal.json"), "--json"]) == 0


def _step(client, body=BODY):
    response = client.post("/api/budget", json=body)  # `gpuplan train`'s answer: the budget with its step
    assert response.status_code == 200, response.text[:300]
    return response.json()["results"]["io_step_seconds"]


def test_a_rewritten_calibration_is_read_again(tmp_path, capsys):
    from fastapi.testclient import TestClient

    from gpuplan.web.app import create_app

    folder = tmp_path / "cals"
    folder.mkdir()
    _calibrate(folder, 1.0)
    client = TestClient(create_app(calibration_dir=str(folder)))
    assert _step(client) == pytest.approx(1.0, rel=1e-6)
    assert _step(client) == pytest.approx(1.0, rel=1e-6)  # the same file: the kept answer
    _calibrate(folder, 2.0)
    capsys.readouterr()
    assert _step(client) == pytest.approx(2.0, rel=1e-6)  # was 1.0: the kept answer of the old file
    # a campaign's stage names its calibration too: the key holds every name in the body
    from gpuplan.web.calibration_files import calibration_names

    assert calibration_names({"stages": [{"calibration": "a"}, {"x": {"calibration": "b"}}]}) == ["a", "b"]


def test_the_key_reads_the_file_the_request_reads(tmp_path):
    """A directory 'cal' beside cal.json: calibration_document passes it over and reads cal.json, and the key is now
    cal.json's bytes too (final read s25: it was the directory's mode and size, so a rewritten cal.json stayed
    answered from the cache)."""
    import hashlib

    from gpuplan.web.calibration_files import fingerprint

    folder = tmp_path / "cals"
    folder.mkdir()
    (folder / "cal").mkdir()
    (folder / "cal.json").write_text('{"a": 1}')
    assert fingerprint(str(folder), "cal") == hashlib.sha256(b'{"a": 1}').hexdigest()
    (folder / "cal.json").write_text('{"a": 2}')
    assert fingerprint(str(folder), "cal") == hashlib.sha256(b'{"a": 2}').hexdigest()
    assert fingerprint(str(folder), "missing") == ""
