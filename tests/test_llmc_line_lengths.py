"""review_w11_r1 SHOULD (long lines): the --framework llmc code keeps to 120 characters a line, as the other wave-11
files do; core/time/step.py's llm.c terms (the `LO.` calls: 147 and 217 characters before) are wrapped without
growing step.py past tests/test_architecture.py's 420 lines."""

from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "gpuplan"
LIMIT = 120


@pytest.mark.parametrize("path", ["core/memory/llmc_memory.py", "core/time/llmc_ops.py", "planner/framework_rules.py"])
def test_llmc_files_keep_to_120(path):
    long = [(n, len(line)) for n, line in enumerate((SRC / path).read_text("utf-8").splitlines(), 1) if len(line) > LIMIT]
    assert not long, long


def test_llmc_lines_elsewhere_keep_to_120():
    for path, marker in (("core/time/step.py", "LO."), ("core/frameworks.py", "llm.c"),
                         ("schema/training_fields.py", "caching_allocator")):
        lines = (SRC / path).read_text("utf-8").splitlines()
        long = [n for n, line in enumerate(lines, 1) if marker in line and len(line) > LIMIT]
        assert not long, (path, long)
    assert len((SRC / "core/time/step.py").read_text("utf-8").splitlines()) <= 420
