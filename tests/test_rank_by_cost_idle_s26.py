"""--rank-by cost with --gpus given pays for the GPUs a layout leaves idle (session 26; planner.idle_rule.idle_charged):
GPUs given are GPUs paid for. Before, the cost ranked was that of the GPUs used, which falls with the count used, so
an irregular count's alternatives below it always won: `plan llama-3.1-8b --gpu h100 --tokens 1T --gpus 3000
--rank-by cost` answered 2,048 GPUs in 17.29 h (dp512 tp2 pp2 vpp8; $141,278 for the 2,048 at $3.99 a GPU-hour)
where 2,944 of them run it in 13.20 h (dp184 tp2 pp2 vpp8 cp4, the time ranking's answer too)."""

from __future__ import annotations

import json

import numpy as np
import pytest

ASK = ("plan", "llama-3.1-8b", "--gpu", "h100", "--tokens", "1T", "--gpus", "3000", "--rank-by", "cost", "--json")


def test_idle_charged_by_hand():
    """cost x the GPUs given / used: 100 on all 3,000 stays 100; 90 on 2,048 of 3,000 is 90 x 3,000 / 2,048 = 131.84,
    so the whole count ranks first; a table without ``charged_gpus`` (a default range, a deadline) keeps its cost."""
    from gpuplan.planner.idle_rule import idle_charged
    from gpuplan.planner.search import LayoutTable

    gpus, cost = np.array([3000, 2048]), np.array([100.0, 90.0])
    charged = idle_charged(LayoutTable({"gpus": gpus, "charged_gpus": np.array([3000, 3000])}), cost)
    assert charged == pytest.approx([100.0, 131.836], abs=1e-3)
    assert idle_charged(LayoutTable({"gpus": gpus}), cost) is cost


def test_cost_ranking_of_3000_given_pays_for_the_idle(run_cli):
    """The 3,000 paid for: 2,048 used x 17.29 h leaves 952 idle, 3,000 x 17.29 h x $3.99 = $206,961; 2,944 x 13.20 h
    leaves 56, 3,000 x 13.20 h x $3.99 = $158,004: the 2,944-GPU layout is the cheaper for whoever holds the 3,000.
    The cost printed stays that of the GPUs used (2,944 x 13.20 h x $3.99), and the title says what was ranked."""
    code, out, err = run_cli(*ASK)
    assert code == 0, err
    report = json.loads(out)
    results = report["results"]
    assert results["best_gpus"] == 2944 and results["idle_gpus"] == 56
    assert results["best_days"] * 24 == pytest.approx(13.20, abs=0.005)
    assert results["best_cost"] == pytest.approx(2944 * results["best_days"] * 24 * 3.99, rel=1e-6)
    assert any("of every GPU given (those a layout leaves idle too)" in title for title in report["tables"])
