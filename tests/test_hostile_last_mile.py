"""Issue 40, files and the CLI's last mile: every writer keeps the target's mode, refuses to write
over one of its own inputs or through a symbolic link, and goes through a temporary file in the
same folder and an atomic rename; readers stop at their size and depth limits. Each refusal: one
line, exit 2, and the files on disk unchanged."""

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from gpuplan.adapters import files

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "fixtures" / "logs"
MIXTRAL = ["--model", "mixtral-8x7b", "--gpu", "h100", "--gpus", "16", "--seq-len", "2048", "--ep", "4", "--zero", "1"]


def one_line_refusal(code, err, fragment=""):
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, (code, err)
    assert fragment in err, err


@pytest.fixture
def plan(tmp_path):
    path = tmp_path / "p.yaml"
    shutil.copy(ROOT / "examples" / "article-7b.yaml", path)
    return path


@pytest.mark.parametrize("flag", ["--out", "--markdown"])
def test_report_refuses_to_overwrite_its_own_plan_file(run_cli, plan, flag):
    before = plan.read_bytes()
    code, _, err = run_cli("report", str(plan), flag, str(plan), "--no-plots")
    one_line_refusal(code, err, "is also an input")
    assert err.startswith(f"error: {flag[2:]}: ")
    assert plan.read_bytes() == before  # the plan was HTML afterwards (issue 40, item 4)


def test_report_refuses_the_plan_through_a_hard_link_or_another_spelling(run_cli, plan, tmp_path):
    before = plan.read_bytes()
    os.link(plan, tmp_path / "same.yaml")
    for other in (tmp_path / "same.yaml", tmp_path / "." / "p.yaml", tmp_path / "sub" / ".." / "p.yaml"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        code, _, err = run_cli("report", str(plan), "--out", str(other), "--no-plots")
        one_line_refusal(code, err, "is also an input")
    assert plan.read_bytes() == before


def test_report_refuses_to_overwrite_the_config_its_plan_names(run_cli, tmp_path):
    config = tmp_path / "config.json"
    shutil.copy(ROOT / "examples" / "llama-2-7b" / "config.json", config)
    plan = tmp_path / "p.yaml"
    plan.write_text("model: ./config.json\ngpu: h100\ngpus: 8\ntokens: 1T\n")
    before = config.read_bytes()
    code, _, err = run_cli("report", str(plan), "--out", str(config), "--no-plots", "--sections", "memory")
    one_line_refusal(code, err, "is also an input")
    assert config.read_bytes() == before


def test_report_still_writes_a_new_file(run_cli, plan, tmp_path):
    code, out, err = run_cli("report", str(plan), "--out", str(tmp_path / "r.html"), "--no-plots",
                             "--sections", "memory")
    assert code == 0, err
    assert (tmp_path / "r.html").read_text().lstrip().lower().startswith("<!doctype html")


def calibrate_to(run_cli, out):
    return run_cli("calibrate", str(LOGS / "megatron_mixtral.log"), *MIXTRAL, "--out", str(out))


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664])
def test_calibrate_over_an_existing_file_keeps_its_mode(run_cli, tmp_path, mode):
    out = tmp_path / "c.json"
    out.write_text("{}")
    out.chmod(mode)
    code, _, err = calibrate_to(run_cli, out)
    assert code == 0, err
    assert stat.S_IMODE(out.stat().st_mode) == mode  # was 0644 whatever it had been (item 5)
    assert json.loads(out.read_text())["kind"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]  # no temporary file left


def test_a_new_file_gets_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        files.write_atomic(tmp_path / "new.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o640


@pytest.mark.parametrize("dangling", [False, True])
def test_an_out_that_is_a_symbolic_link_is_refused_and_nothing_moves(run_cli, tmp_path, dangling):
    target = tmp_path / "real.json"
    if not dangling:
        target.write_text("keep me\n")
        target.chmod(0o600)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    code, _, err = calibrate_to(run_cli, link)
    one_line_refusal(code, err, "is a symbolic link")
    assert link.is_symlink() and os.readlink(link) == str(target)  # was replaced by a regular file
    if not dangling:
        assert target.read_text() == "keep me\n" and stat.S_IMODE(target.stat().st_mode) == 0o600
    else:
        assert not target.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write any file")
def test_a_read_only_target_is_refused(tmp_path):
    out = tmp_path / "ro.md"
    out.write_text("old\n")
    out.chmod(0o444)
    with pytest.raises(files.InputError, match="read-only"):
        files.write_atomic(out, "new\n")
    assert out.read_text() == "old\n"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    out = tmp_path / "keep.md"
    out.write_text("old\n")

    def failing_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", failing_replace)
    with pytest.raises(files.InputError, match="No space left"):
        files.write_atomic(out, "new\n")
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["keep.md"]


@pytest.mark.parametrize("as_folder", [False, True])
def test_profile_refuses_to_overwrite_the_config_it_profiles(run_cli, tmp_path, as_folder):
    config = tmp_path / "config.json"
    shutil.copy(ROOT / "examples" / "llama-2-7b" / "config.json", config)
    before = config.read_bytes()
    code, _, err = run_cli("profile", str(tmp_path if as_folder else config), "--out", str(config))
    one_line_refusal(code, err, "is also an input")
    assert config.read_bytes() == before
