"""`memory` and `plan` keep the same framework gap free (planner/framework_rules.py published_reserve):
one fit rule, so the two commands cannot disagree on whether a torchtitan layout fits."""

from __future__ import annotations

import pytest

LLAMA_31_8B_PARAMS = 8_030_261_248  # catalog/models: HF safetensors.total for meta-llama/Llama-3.1-8B
LAYOUT = ("llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--zero", "3", "--seq-len", "4096",
          "--global-batch", "512")


def _lines(report: dict) -> dict:
    found = {}

    def walk(node):
        if isinstance(node, dict):
            if "key" in node and "value" in node:
                found.setdefault(node["key"], node["value"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(report)
    return found


def test_the_gap_is_the_share_of_the_reserve_beyond_the_model_states(run_json):
    lines = _lines(run_json("memory", *LAYOUT, "--framework", "torchtitan", "--micro-batch", "2", "--full"))
    # By hand: the rule's model states are weights, master weights and optimizer states (not the
    # gradients). torchtitan's fsdp2 recipe keeps fp32 sharded parameters (4 B, no separate master)
    # and two fp32 Adam moments (8 B): 12 B/param, sharded eight ways. The reserved peak scales the
    # allocated peak by one allocator factor, so reserved(allocated - states) = reserved x (1 -
    # states / allocated).
    states = 12 * LLAMA_31_8B_PARAMS / 8
    expected = 0.27 * lines["peak_reserved"] * (1 - states / lines["peak_allocated"])
    assert lines["framework_gap"] == pytest.approx(expected, rel=1e-3)
    budget = lines["capacity"] * 0.95  # the default 5% margin
    assert lines["headroom"] == pytest.approx(budget - lines["peak_total"] - lines["framework_gap"], rel=1e-6)


def test_memory_and_plan_agree_where_the_gap_decides(run_cli, run_json):
    # micro-batch 2: 65.6 GiB of reserved + runtime fits 75.7 GiB, but not with the ~14 GiB gap.
    two = _lines(run_json("memory", *LAYOUT, "--framework", "torchtitan", "--micro-batch", "2", "--full"))
    assert two["peak_total"] + two["framework_gap"] > two["capacity"] * 0.95 > two["peak_total"]
    assert two["fits"] is False
    fixed = ("--tp", "1", "--pp", "1", "--cp", "1", "--recompute", "none", "--framework", "torchtitan")
    code, _, err = run_cli("plan", *LAYOUT[:1], *LAYOUT[1:], *fixed, "--micro-batch", "2")
    assert code == 2 and "torchtitan's published gap" in err
    one = _lines(run_json("memory", *LAYOUT, "--framework", "torchtitan", "--micro-batch", "1", "--full"))
    assert one["fits"] is True
    assert run_cli("plan", *LAYOUT, *fixed, "--micro-batch", "1")[0] == 0


def test_frameworks_without_a_measured_gap_keep_nothing_extra(run_json):
    lines = _lines(run_json("memory", *LAYOUT, "--framework", "megatron", "--micro-batch", "2", "--full"))
    assert "framework_gap" not in lines
    assert lines["fits"] is True  # the same 65.6 GiB fits without the gap
