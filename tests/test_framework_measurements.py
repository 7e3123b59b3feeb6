"""scripts/measure_frameworks.py's measurements are reproducible: one torchtitan run and one PEFT
run re-measured with the installed frameworks equal the packaged reference records to the byte.

Needs the ``frameworks`` extra (torchtitan, megatron-core, peft, torchao; pip install -e
'.[frameworks]'); CI installs only test/profile/web/plot, so there these tests skip and the
packaged records are checked by tests/test_framework_profiles.py instead."""

from __future__ import annotations

import importlib.util

import pytest
import yaml

HAVE = all(importlib.util.find_spec(m) is not None for m in ("torch", "torchtitan", "peft", "triton"))
pytestmark = pytest.mark.skipif(not HAVE, reason="frameworks extra not installed (pip install -e '.[frameworks]')")


def _reference(run_id: str) -> dict:
    from importlib import resources

    text = (resources.files("gpuplan.catalog") / "reference" / "framework_measurements.yaml").read_text("utf-8")
    return {r["id"]: r for r in yaml.safe_load(text)["runs"]}[run_id]


@pytest.mark.parametrize("run_id, fields", [
    ("torchtitan_dp=8", {"framework": "torchtitan", "dp": 8}),
    ("peft_seq_len=4096_optimizer_impl=fused_lora_rank=0",
     {"framework": "peft", "seq_len": 4096, "optimizer_impl": "fused", "lora_rank": 0}),
])
def test_remeasured_run_equals_the_packaged_record(run_id, fields):
    from gpuplan.profile.frameworks import FrameworkRun, measure_framework, run_id as make_id

    run = FrameworkRun(**fields)
    assert make_id(run) == run_id
    measured = measure_framework(run)
    assert measured.full_depth_peak_bytes == _reference(run_id)["full_depth"]["peak_bytes"]
