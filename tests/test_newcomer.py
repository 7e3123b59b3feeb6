"""Issue 39: answers a newcomer can trust at a glance. Each test fails on the code before it:
piped output, labels that say only what is true, refusals instead of impossible answers, and a
deadline met after every allowance the answer adds."""

import csv
import io

import pytest
from helpers import report_lines

from gpuplan.report.model import Line, Report, Section
from gpuplan.report.render import footer, headline_rows, range_text, to_csv

# ---- 7: piped output is plain, full width, untruncated; --format csv --------------------------


def test_piped_catalog_is_one_row_per_model_at_full_width(run_cli, run_json):
    code, out, _ = run_cli("catalog", "models")
    rows = run_json("catalog", "models")["tables"]["models"]
    lines = out.splitlines()
    assert code == 0 and "┃" not in out and "…" not in out
    for row in rows:  # every model on one line, every column of it whole (was: 20+ lines of 4 characters)
        line = next(text for text in lines if text.startswith(row["id"] + " "))
        assert all(str(row[c]) in line for c in ("name", "params", "published source"))
    assert len(lines) == len(rows) + 5  # title, blank, table title, header, rule


def test_csv_of_a_catalog_reads_back_as_its_rows(run_cli, run_json):
    code, out, _ = run_cli("catalog", "gpus", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    table = run_json("catalog", "gpus")["tables"]["accelerators"]
    assert code == 0 and len(rows) == len(table)
    assert [r["id"] for r in rows] == [r["id"] for r in table] and rows[0]["aliases"] == table[0]["aliases"]


def test_csv_of_a_report_has_every_result_line_in_base_units(run_cli, run_json):
    code, out, _ = run_cli("train", "--format", "csv")
    results = run_json("train")["results"]
    block = out.split("\n\n")[0].split("\n", 1)[1]  # "# results" heads the first block
    rows = {r["key"]: r for r in csv.DictReader(io.StringIO(block))}
    assert code == 0 and set(rows) == set(results)
    assert float(rows["flops_6nd"]["value"]) == pytest.approx(8.4e22)  # 6 x 7e9 x 2e12


def test_notes_are_never_cut(run_cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    for terminal in (False, True):
        monkeypatch.setattr("gpuplan.commands.build.on_terminal", lambda: terminal)
        code, out, _ = run_cli("train")
        assert code == 0 and "…" not in out
        assert "set --comm-allowance 0." in " ".join(out.split())  # the last words of the third note


def test_a_wide_table_on_an_80_column_terminal_is_one_block_per_row(run_cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr("gpuplan.commands.build.on_terminal", lambda: True)
    code, out, _ = run_cli("catalog", "models", "--filter", "llama-3.1-8b")
    assert code == 0 and "- id" in out and "llama-3.1-8b" in out and "Llama 3.1 8B" in out
    assert max(len(line) for line in out.splitlines()) <= 80


# ---- 6: labels that say only what is true ----------------------------------------------------


def _line(**kw):
    return Line(**({"key": "k", "label": "l", "value": 1.0} | kw))


def test_a_range_of_one_value_is_not_printed():
    assert range_text(_line(unit="days", text="66.15 days", low=66.149, high=66.151)) == ""
    assert range_text(_line(unit="days", text="66.15 days", low=65.0, high=67.0)) == "65.00 days – 67.00 days"


def test_a_range_in_seconds_takes_its_values_unit():
    # 0.69 days with a range in hours was "0.69 days" beside "16.5 h – 16.6 h"
    line = _line(unit="s", value=0.69 * 86400, text="0.69 days", low=0.68 * 86400, high=0.70 * 86400)
    assert range_text(line) == "0.68 days – 0.70 days"
    assert range_text(_line(unit="s", value=7200, text="2.00 h", low=3600, high=3 * 3600)) == "1.00 h – 3.00 h"


def test_a_short_run_reads_in_hours_with_its_gpu_time_and_one_gpu(run_cli, run_json):
    """125M parameters on 1B tokens on one A100 at 40%: 6 x 125e6 x 1e9 / (312e12 x 0.4) = 6,010 s
    = 0.0696 GPU-days (printed "0"), 1.67 h; with the 20% allowance 2.00 h (10-30%: 1.84-2.17 h),
    printed "0.08 days" beside "0.08 days – 0.09 days"; the layout ran "on 1 GPUs"."""
    args = ("train", "--gpus", "1", "--params", "125M", "--tokens", "1B")
    code, out, _ = run_cli(*args)
    lines = {line.split("  ")[0]: line for line in out.splitlines()}
    assert code == 0
    assert lines["GPU-days"].split()[-1] == "0.0696"
    assert lines["wall-clock with comm allowance"].endswith("2.00 h  1.84 h – 2.17 h")
    assert lines["layout"].endswith("on 1 GPU")
    assert run_json(*args)["results"]["gpu_days"] == pytest.approx(6 * 125e6 * 1e9 / (312e12 * 0.4) / 86400, rel=1e-3)
    assert range_text(_line(unit="days", text="2.00 h", low=1.84 / 24, high=2.17 / 24)) == "1.84 h – 2.17 h"


def test_infer_prints_a_latency_range_once_and_counts_sequences(run_cli):
    """The TTFT / TPOT value text repeated its range ("84.3 ms (75.3-111.4)" beside "75.3 ms – 111
    ms"); "longest context for 1 sequence(s)" and "all 1 sequences" read as a form letter."""
    code, out, _ = run_cli("infer", "llama-3.1-8b", "--gpu", "h100")
    lines = {line.split("  ")[0]: line for line in out.splitlines()}
    ttft = next(line for label, line in lines.items() if label.startswith("time to first token"))
    assert code == 0 and ttft.count("ms") == 3 and "(" not in ttft.split(")", 1)[1]  # value, low, high
    assert "longest context for 1 sequence" in lines and "output tokens/s, 1 sequence" in lines
    assert "sequence(s)" not in out


def test_plan_layouts_are_in_order_of_their_slow_end(run_json):
    """Ranked by time, a 47.59 s layout stood above a 46.47 s one with no column saying why: each
    row now shows its '± model' and the rows are in order of step x (1 + u)."""
    rows = run_json("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8")["tables"][
        "top 10 layouts (ranked by time with failures at each layout's slow end: step x (1 + its ± model), "
        "failure rate at its range's high end; fewest GPUs within 1%)"]
    assert all(r["± model"].startswith("±") for r in rows)
    # the order is the printed 'ranked days' (planner.plan.ranked_seconds_per_token: the slow end x the failure
    # share at the range's high rate), non-decreasing to its 0.1 day
    ranked = [float(r["ranked days"].replace(",", "")) for r in rows]
    assert ranked == sorted(ranked)
    # and by step x (1 + u) from the rounded cells: each '± model' is u to the nearest point (±0.5) and each step to
    # 0.01 s, so a row may stand above the next by up to those roundings, no more. 0d4052f brought three
    # interleaved pp 2 rows within 0.1% of dp8 ZeRO-3's slow end (48.39 x 1.07 against 46.83 x 1.10: +0.01% past
    # the 0.5% this test allowed, the ±7% and ±10% cells' rounding)
    low = [(float(r["step s"]) - 0.005) * (1 + (float(r["± model"].strip("±%")) - 0.5) / 100) for r in rows]
    high = [(float(r["step s"]) + 0.005) * (1 + (float(r["± model"].strip("±%")) + 0.5) / 100) for r in rows]
    assert all(a <= b * 1.001 for a, b in zip(low, high[1:]))  # 0.1%: the rows' failure shares at the high rate


def test_duration_ranges_read_like_their_values():
    """A wall-clock printed in seconds lost its range (both ends "0.00 days"); minutes printed to
    two places beside a one-place value; 1,000+ days lost the comma the range kept."""
    from gpuplan.core.units import format_duration

    assert range_text(_line(unit="days", text="36.1 s", low=33.1 / 86400, high=39.1 / 86400)) == "33.1 s – 39.1 s"
    assert range_text(_line(unit="days", text="18.7 min", low=17.17 / 1440, high=20.3 / 1440)) == "17.2 min – 20.3 min"
    assert format_duration(2111.54 * 86400) == "2,111.54 days"
    assert range_text(_line(unit="s", text="2,111.54 days", low=1230.77 * 86400, high=3418.8 * 86400)) == \
        "1,230.77 days – 3,418.80 days"


def test_a_two_gpu_budget_counts_its_gpu_hours_and_gpus(run_cli):
    """100M tokens of Llama 3.2 1B on 2 H100: 0.625 GPU-hours billed (printed "1" beside "0.625"),
    "time for space: 1 GPUs", "1 GPUs x ..."."""
    code, out, _ = run_cli("budget", "llama-3.2-1b", "--tokens", "1e8", "--gpus", "2", "--gpu", "h100", "--full")
    lines = {line.split("  ")[0]: line for line in out.splitlines()}
    assert code == 0 and "1 GPUs" not in out
    assert lines["GPU-hours billed, on-demand"].split()[3] == "0.625"
    assert "time for space: 1 GPU" in lines
    assert float(lines["GPU-hours budget"].split()[2]) == pytest.approx(0.719, abs=0.002)


def test_an_unmet_default_week_answers_with_the_fastest_plan_and_says_so(run_cli, run_json):
    """`plan` with neither --gpus nor --days takes the article's week and searches the same GPU
    counts `train --mfu predicted` does (common cluster sizes up to 131,072, then the counts between
    the two that bracket the answer): Llama 3.1 405B on 2T tokens of H100 answers the same count in
    both, between 16,384 (9.36 days with failures) and 24,576 (6.50), where every count of the grid
    below it misses (plan searched powers of two to 16,384 and refused it, exit 2; then 24,576 before
    issue 39's counts between). On 15T tokens of A100 no count meets the week: the answer is the
    fastest layout, with a note; a week the user gives is refused with what would be needed."""
    from helpers import misses_below

    met = run_json("plan", "llama-3.1-405b", "--gpu", "h100")["results"]
    train = run_json("train", "--model", "llama-3.1-405b", "--gpu", "h100", "--mfu", "predicted")["results"]
    assert met["best_gpus"] == train["gpus"] and 16384 < met["best_gpus"] < 24576
    assert met["fail_wall_seconds"] <= 7 * 86400 and train["fail_wall_seconds"] <= 7 * 86400
    # the fewest: 16,384, the common size below, and each count between it and the answer miss the week
    misses_below(met["best_gpus"], 7, 16384, 24576, model="llama-3.1-405b", gpu="h100")
    data = run_json("plan", "llama-3.1-405b", "--gpu", "a100", "--tokens", "15T")
    rows = data["tables"][next(k for k in data["tables"] if k.startswith("top "))]
    # 98,304 since 0d4052f (DP syncs chunk by chunk under interleaving): its dp512 tp8 pp6 vpp21 cp4 layout went
    # 15.84 -> 14.31 s a step (45.4 -> 41.0 days with failures), past 131,072's dp128 tp8 pp64 cp2 (no vpp: 42.7)
    assert data["results"]["best_days"] > 7 and data["results"]["best_gpus"] == 98304
    assert data["results"]["best_days"] == pytest.approx(min(float(r["days"]) for r in rows), abs=0.051)
    assert any("up to 131,072" in note and "give --days or --gpus" in note for note in data["notes"])
    code, _, err = run_cli("plan", "llama-3.1-405b", "--gpu", "a100", "--tokens", "15T", "--days", "7")
    assert code == 2 and err.startswith("error: days:") and "98,304 GPUs" in err and err.count("\n") == 1


def test_counts_are_singular_when_one():
    report = Report("x", "t", (), (), (Section("s", (_line(),)),), notes=("only",))
    assert "1 section (0 more lines), 0 assumptions with sources, 1 note;" in footer(report, 1)


def test_headline_lines_with_the_same_label_are_headed_by_their_section():
    pools = Section("Disaggregated", (_line(key="a", label="TTFT p99"), _line(key="b", label="cost")))
    colocated = Section("Colocated", (_line(key="c", label="TTFT p99"), _line(key="d", label="cost")))
    report = Report("x", "t", (), (), (pools, colocated), headline=("a", "b", "c", "d"))
    labels = [label if line is not None else f"[{label}]" for label, line in headline_rows(report)]
    assert labels == ["[Disaggregated]", "TTFT p99", "cost", "[Colocated]", "TTFT p99", "cost"]


def test_disaggregated_sizing_heads_each_ttft_with_its_setup(run_cli):
    code, out, err = run_cli("infer", "llama-3.1-8b", "--rps", "20", "--ttft-p99", "500ms", "--tpot", "50ms",
                             "--prompt", "2K", "--output-tokens", "512", "--disaggregate")
    assert code == 0, err
    lines = out.split("\n\n")[0].splitlines()
    ttft = [i for i, line in enumerate(lines) if line.startswith("TTFT p99 ")]
    headings = [i for i, line in enumerate(lines) if line.endswith(":") and not line.startswith(" ")]
    # was: TTFT, TPOT and cost twice under one header; now each pair follows its own section's heading
    assert len(ttft) == 2 and len(headings) == 2 and headings[0] < ttft[0] < headings[1] < ttft[1]
    assert lines[headings[0]].startswith("Disaggregated prefill / decode")


def test_mfu_predicted_marks_set_only_what_was_set(run_json):
    data = run_json("train", "llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "64", "--mfu",
                    "predicted")
    by_key = {a["key"]: a for a in data["assumptions"]}
    # --mfu was given; the allowance and the FLOPs method were replaced by predicted mode, not set
    assert by_key["mfu"]["user_set"] and not by_key["comm_allowance"]["user_set"]
    assert not by_key["flops_method"]["user_set"] and "predicted" in by_key["flops_method"]["value"]
    assert "(0%-0%)" not in by_key["comm_allowance"]["value"]
    assert any(n.startswith("FLOPs method: --mfu predicted times the exact count") for n in data["notes"])


def test_a_default_batch_is_not_called_asked(run_json):
    def batch_text(data):
        return report_lines(data)["mem_global_batch"]["text"]

    data = run_json("train", "llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "64")
    assert batch_text(data).endswith("vs 1,024 by default)")  # 4M tokens / 4,096 = 1,024 sequences
    asked = run_json("train", "llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "64", "--global-batch",
                     "512")
    assert batch_text(asked).endswith("vs 512 asked)")


# ---- 1: a solved MFU above what any GPU delivers is refused, naming what would do ---------------


@pytest.mark.parametrize("args, compute_only, ceiling", [
    # compute alone: 6 x 7e9 x 2e12 / (8 x 312e12 x 7 x 86400) = 5,564.5% (the figure); the
    # days must also hold the 20% communication allowance and failures: x 1.2 x (1 to 1.03; Llama 3's
    # interruption rate costs 1-2% of goodput at these sizes)
    (("--gpus", "8", "--days", "7"), 55.645, "64.1%"),  # A100's best published: MPT-7B, llm-foundry
    # 6 x 70e9 x 2e12 / (200 x 989.4e12 x 20 x 86400) = 245.6%; H100 dense BF16's best 46.7% (Llama 3.1 70B on 512
    # H100, torchtitan, IBM / Meta float8 blog Table 3: 960 tokens/s/GPU; was MPT-7B's 46.4% before that row)
    (("--params", "70B", "--tokens", "2T", "--gpu", "h100", "--gpus", "200", "--days", "20"), 2.456, "46.7%"),
])
def test_a_solved_mfu_past_the_published_best_is_refused(run_cli, args, compute_only, ceiling):
    import re

    code, out, err = run_cli("train", *args)
    assert code == 2 and out == "" and err.count("\n") == 1  # was exit 0 and "MFU (solved) 5564.5%"
    # the MFU on the FLOPs the time uses (6ND), beside the exact-FLOPs one compared with the ceiling
    needed = float(re.search(r"\(([\d.]+)% of 6ND\)", err)[1]) / 100
    assert compute_only * 1.2 <= needed <= compute_only * 1.2 * 1.03
    assert f", above {ceiling}, the best published dense bf16 MFU" in err
    # the run that sets the ceiling is named: MPT-7B's on A100, the IBM / Meta 70B row's on H100
    best_run = {"64.1%": "llmfoundry-mpt-7b-", "46.7%": "torchtitan-ibm-2411-llama-3.1-70b-"}[ceiling]
    assert best_run in err and "--gpus " in err and " days on " in err


def test_the_refusal_names_the_gpus_at_the_ceiling(run_cli):
    import re

    from gpuplan.jobs.validation.mfu_ceiling import ceiling

    code, _, err = run_cli("train", "--params", "70B", "--tokens", "2T", "--gpu", "h100", "--gpus", "200", "--days",
                           "20", "--flops-method", "exact")
    best = ceiling("h100-sxm", False, "bf16").mfu
    assert code == 2
    # exact FLOPs on both sides: the same days at the ceiling take GPUs x needed MFU / best MFU = 1,349.5, and a
    # little more: 1,360 GPUs fail more often than 200, leaving less of the 20 days for compute, and a count's
    # layout may leave GPUs idle (since the data-parallel wire carries megatron's 4-byte gradients, 1,358 and
    # 1,359 H100 run dp20 tp2 pp8 vpp10 cp4 on 1,280 and miss). The solver names the fewest that meet
    # (jobs/training/timing.gpus_within, dcc9faa; it settled at 1,432 before, 6.1% above, while 1,360 met):
    # 1,360 = dp17 tp2 pp10 cp4 on all, 0.8% above 1,349.5. The count named meets; one fewer does not
    needed = float(re.search(r"needs MFU ([\d.]+)%", err)[1]) / 100
    gpus = int(re.search(r"the run needs ([\d,]+) GPUs for 20.00 days", err)[1].replace(",", ""))
    assert 200 * needed / best <= gpus <= 200 * needed / best * 1.01
    ask = ("train", "--params", "70B", "--tokens", "2T", "--gpu", "h100", "--days", "20", "--flops-method", "exact")
    assert run_cli(*ask, "--gpus", str(gpus))[0] == 0
    code, _, err = run_cli(*ask, "--gpus", str(gpus - 1))
    assert code == 2 and "needs MFU" in err


def test_a_solved_mfu_within_the_published_best_is_the_answer(run_json):
    # compute alone 6 x 70e9 x 2e12 / (2,048 x 989.4e12 x 20 x 86400) = 24.0%; the 20 days also hold
    # the 20% communication allowance and failures, so the MFU needed is 24.0% x 1.2 x (1 to 1.03), the
    # MFU that does the FLOPs in the compute-only wall-clock the report prints
    r = run_json("train", "--params", "70B", "--tokens", "2T", "--gpu", "h100", "--gpus", "2048", "--days", "20")[
        "results"]
    compute_only = 8.4e23 / (2048 * r["peak_flops"] * 20 * 86400)
    assert r["peak_flops"] == pytest.approx(989.4e12, rel=1e-3)
    assert compute_only * 1.2 <= r["mfu"] <= compute_only * 1.2 * 1.03
    assert r["mfu"] == pytest.approx(8.4e23 / (2048 * r["peak_flops"] * r["wall_days"] * 86400))
    assert r["fail_wall_seconds"] == pytest.approx(20 * 86400, rel=1e-3)  # was 24 days with comm and failures
    assert r["wall_days_with_comm"] == pytest.approx(r["wall_days"] * 1.2)


def test_the_ceiling_table_ships_generated_from_the_cited_yaml():
    """catalog/reference/best_published_mfu.json is what the YAML gives (regenerate with
    python -m gpuplan.jobs.validation.mfu_ceiling); reading it takes milliseconds."""
    import time
    from importlib import resources

    from gpuplan.jobs.validation import mfu_ceiling as C

    shipped = (resources.files("gpuplan.catalog") / "reference" / C.DATA).read_text("utf-8")
    assert shipped == C.table_json(C.compute_best_published_mfu()), \
        "stale: python -m gpuplan.jobs.validation.mfu_ceiling"
    C.best_published_mfu.cache_clear()
    start = time.perf_counter()
    table = C.best_published_mfu()
    assert time.perf_counter() - start < 0.05 and table[("hopper", False, "bf16")].source


# ---- 3: GPUs solved for a deadline meet it after every allowance the answer adds --------------


def test_train_meets_its_deadline_after_communication_and_failures(run_json):
    from gpuplan import BudgetInputs
    from gpuplan.adapters.resolve import resolve_gpu
    from gpuplan.jobs.budget.compute import wall_with_failures
    from gpuplan.jobs.training.layout import layout_for_gpus

    data = run_json("train")  # the article: 7B, 2T tokens, A100, 40% MFU, 7 days
    r = data["results"]
    gpus = r["gpus"]
    assert r["gpus_compute_only"] == pytest.approx(1112.9, abs=0.1)  # 7,790.3 GPU-days / 7 (the article)
    assert r["fail_wall_seconds"] <= 7 * 86400  # was 8.47 days: 1,113 GPUs before comm and failures
    assert r["wall_days_with_comm"] == pytest.approx(7790.3 * 1.2 / gpus, rel=1e-4)
    inputs = BudgetInputs()
    # one 8-GPU node fewer misses it (on its own layout and the GPUs it computes on, as the budget
    # counts failures; whole nodes past one node since wave 5, tests/test_newcomer_wave5.py)
    fewer = layout_for_gpus(inputs, gpus - 8)
    wall = wall_with_failures(inputs.spec(), resolve_gpu("a100"), inputs.budget_settings(), gpus=fewer.gpus, work_seconds=7790.3 * 1.2 * 86400 / fewer.gpus,
        tokens=2e12, global_batch_tokens=float(fewer.global_batch * 4096), recipe=inputs.recipe_name,
        zero=fewer.layout.zero, model_parallel=fewer.layout.tp * fewer.layout.pp)
    assert wall > 7 * 86400


def test_readme_70b_deadline_is_met(run_json):
    r = run_json("train", "--model", "llama-2-70b", "--tokens", "2T", "--gpu", "h100", "--days", "30",
                 "--flops-method", "exact", "--seq-len", "8K")["results"]
    # was 36.5 days; 29.48 days on 1,152 GPUs: the planner lays 1,136 and 1,144 out on 1,088, which miss it
    assert r["fail_wall_seconds"] <= 30 * 86400 < r["fail_wall_seconds"] * 1.02


# ---- 2: a deadline picks the smallest count (then cheapest) that meets it ---------------------


def test_plan_deadline_picks_the_fewest_gpus_that_meet_it(run_json):
    from helpers import fastest_with_failures

    data = run_json("plan", "--params", "70B", "--tokens", "2T", "--gpu", "h100", "--days", "30", "--top", "5")
    r = data["results"]
    # the common cluster sizes (powers of two and 1.5x them, as `train --mfu predicted` searches), then the
    # counts between 512 and 768 in steps of 32: 640 GPUs, 28.89 days with failures (was 16,384 GPUs, 1.5 days;
    # then 1,024 when only powers of two were searched; then 768, 24.74 days, before issue 39's counts between)
    assert r["best_gpus"] == 640 and r["fail_wall_seconds"] <= 30 * 86400
    train = run_json("train", "--params", "70B", "--tokens", "2T", "--gpu", "h100", "--days", "30", "--mfu",
                     "predicted")["results"]
    assert train["gpus"] == 640
    # 512 GPUs (the common size below) and every count between them at the granularity are too few
    days = fastest_with_failures((512, 544, 576, 608), params="70B", tokens="2T", gpu="h100")
    assert set(days) == {512, 544, 576, 608} and min(days.values()) > 30, days
    rows = data["tables"][next(t for t in data["tables"] if t.startswith("top"))]
    # fewest GPUs first: three 640-GPU layouts that meet it, then 672 (five at 640 on a 2 B DP wire, four until TE's
    # CP ring kernels were charged: core.memory.recipe_facts.reduced_grad_bytes, core.time.context_parallel)
    assert rows[0]["GPUs"] == 640 and [r["GPUs"] for r in rows] == sorted(r["GPUs"] for r in rows) == [640] * 3 + [672] * 2


def test_plan_without_gpus_or_days_takes_the_article_week(run_json):
    r = run_json("plan", "llama-2-7b")["results"]  # was 16,384 GPUs for 0.6 days
    assert r["best_gpus"] < 16384 and r["fail_wall_seconds"] <= 7 * 86400
    half = run_json("plan", "llama-2-7b", "--gpus", str(r["best_gpus"] // 2))["results"]
    assert half["fail_wall_seconds"] > 7 * 86400


def test_an_explicit_rank_by_is_kept_with_a_deadline(run_json):
    r = run_json("plan", "--params", "70B", "--tokens", "2T", "--gpu", "h100", "--days", "30", "--rank-by",
                 "time")["results"]
    assert r["best_gpus"] == 16384


# ---- 5: calibrate refuses a log whose layout it needs and was not given ------------------------

LOG = str(__import__("pathlib").Path(__file__).parent / "fixtures" / "logs" / "megatron_mixtral.log")


def test_calibrate_refuses_a_multi_gpu_log_without_its_layout(run_cli, tmp_path):
    out = tmp_path / "c.json"
    args = ("calibrate", LOG, "--model", "mixtral-8x7b", "--gpu", "h100", "--gpus", "16", "--seq-len", "2048",
            "--global-batch", "128", "--out", str(out))
    code, stdout, err = run_cli(*args)
    # was exit 0, an 800 GiB modelled peak and a fixed memory overhead of -746.57 GiB written to the file
    assert code == 2 and not out.exists() and err.count("\n") == 1
    assert err.startswith("error: tp/pp/ep/zero: ") and "give the run's --tp, --pp, --ep and --zero" in err
    assert "GiB per GPU, more than the 79.65 GiB of the NVIDIA H100" in err  # the default layout cannot be the run
    code, _, err = run_cli(*args, "--tp", "4", "--ep", "4", "--zero", "1")
    assert code == 0 and out.exists(), err


def test_a_config_json_is_named_by_its_folder(run_json, tmp_path):
    import shutil
    from pathlib import Path

    data = run_json("train", "--model", "examples/llama-2-7b/config.json", "--tokens", "1T", "--gpu", "a100",
                    "--gpus", "256")
    assert data["inputs"]["model"] == "llama-2-7b" and data["title"].startswith("Training budget: llama-2-7b ")
    named = tmp_path / "my-model.json"  # any other file name: its own stem
    shutil.copy(Path(__file__).parents[1] / "examples" / "llama-2-7b" / "config.json", named)
    assert run_json("train", "--model", str(named), "--tokens", "1T", "--gpu", "a100", "--gpus", "256")[
        "inputs"]["model"] == "my-model"


def test_the_memory_recommendation_says_at_least_once(run_cli):
    code, out, _ = run_cli("infer")
    line = next(text for text in out.splitlines() if ">= 24 GB" in text)
    assert code == 0 and "at least" not in line  # was "recommend a GPU with at least >= 24 GB"


# ---- 8: README counts come from the catalog ---------------------------------------------------


def test_readme_catalog_counts_are_the_catalogs():
    import re
    from pathlib import Path

    from gpuplan.catalog import hardware_entries, model_entries

    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    found = re.search(r"the (\d+)-model and (\d+)-accelerator catalogs", readme)
    assert found, "README: 'the N-model and M-accelerator catalogs'"
    assert (int(found[1]), int(found[2])) == (len(model_entries()), len(hardware_entries())), \
        "README's catalog counts are stale: update them from `gpuplan catalog models|gpus`"


# ---- 9: the README's test command is .ci/run ---------------------------------------------------


def test_the_readme_test_command_is_ci_run():
    import re
    from pathlib import Path

    root = Path(__file__).parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    quick = readme[readme.index("## Quick start"):readme.index("## What works today")]
    commands = [line.strip() for block in re.findall(r"```bash\n(.*?)```", quick, flags=re.S)
                for line in block.splitlines() if line.strip()]
    assert "bash .ci/run" in commands and not any("pytest" in c for c in commands)
    ci = (root / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line.split("#")[0].strip() for line in ci.splitlines()]
    torch = next(i for i, line in enumerate(lines) if line.startswith("pip install") and "torch==2.13.0" in line)
    extras = next(i for i, line in enumerate(lines) if "pip install -q --no-compile -e '.[test,profile,web,plot]'" in line)
    compiled = next(i for i, line in enumerate(lines) if line.startswith("python -m compileall"))
    # the pinned torch first (no CUDA build pulled); the bytecode pip was told not to write is compiled before any
    # process imports torch (CI runs with PYTHONDONTWRITEBYTECODE=1)
    imports_torch = next(i for i, line in enumerate(lines) if "import sys, torch" in line)
    assert torch < extras < compiled < imports_torch and lines[-1] == "python -m pytest"
    assert "--no-compile" in lines[torch] and "purelib" in lines[compiled]
    assert "fonts-wqy-microhei" in ci and "chromium" in ci  # the CJK plot test and the page's tests run in CI


def test_a_predicted_deadline_is_met_with_failures_on_the_fewest_gpus(run_json):
    args = ("train", "llama-3.1-8b", "--tokens", "2T", "--gpu", "h100", "--days", "20", "--mfu", "predicted")
    r = run_json(*args)["results"]
    assert r["fail_wall_seconds"] <= 20 * 86400
    from gpuplan.planner.space import is_common_size, range_counts

    smaller = max(c for c in range_counts(8, r["gpus"] - 1) if is_common_size(c))  # the next cluster size down
    fewer = run_json("train", *args[1:6], "--gpus", str(smaller), "--mfu", "predicted")["results"]
    assert fewer["fail_wall_seconds"] > 20 * 86400
