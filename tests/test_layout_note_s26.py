"""`gpuplan report`'s memory section beside its budget section names the budget's layout and the fields that state it
in the file (report/layout_note.py, session 24 MT2). Its list was a hand copy of the fields memory takes without `etp`
and `shard_group` (closing note s25): a MoE file stating `etp: 1` under `tp: 2`, or one stating `shard_group: 8`, was
told to state a layout without them, and memory, given the list, checked another layout (etp = tp; plain sharding)
and still differed from the budget. Here the note's list is followed as written: the memory section then checks the
budget's layout (no note) and gives the budget's own allocated peak, read from the first report's note."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.usefixtures("time_box")

NOTE = re.compile(r"this section checks the layout the plan file states .*?the budget section runs (?P<layout>.*?): "
                  r"(?P<peak>[\d.,]+ GiB) allocated, fits \w+\. To check that layout here, state it in the file "
                  r"\((?P<fields>[^)]*)\)")


def _report(run_cli, plan, tmp_path) -> str:
    md = tmp_path / "r.md"
    code, _, err = run_cli("report", str(plan), "--out", str(tmp_path / "r.html"), "--markdown", str(md),
                           "--no-plots")
    assert code == 0, err
    return md.read_text()


@pytest.mark.parametrize(("base", "stated", "field"), [
    ("model: mixtral-8x7b\ngpu: h100\ngpus: 64\ntokens: 100B\n", "tp: 2\nep: 8\netp: 1\n", "etp: 1"),
    ("model: llama-3.1-8b\ngpu: h100\ngpus: 64\ntokens: 100B\n", "shard_group: 8\n", "shard_group: 8"),
], ids=["moe-etp", "hsdp-shard-group"])
def test_the_layout_notes_fields_state_the_budgets_layout(run_cli, tmp_path, base, stated, field):
    plan = tmp_path / "p.yaml"
    plan.write_text(base + stated)
    note = NOTE.search(_report(run_cli, plan, tmp_path))
    assert note, "no layout note"
    fields = note["fields"].split(", ")
    assert field in fields, note["fields"]  # the degree the file states, which the budget's layout keeps
    plan.write_text(base + "".join(f"{pair}\n" for pair in fields))  # the note followed as written
    text = _report(run_cli, plan, tmp_path)
    assert "this section checks the layout" not in text
    assert f"| allocated peak (PyTorch tensors) | {note['peak']} |" in text
