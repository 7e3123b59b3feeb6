"""Mends from the session-24 review (R1): each test fails on the code before its mend."""

import pytest

from helpers import field_refusal


@pytest.mark.parametrize("text, line", [
    ("model: llama-3.1-8b\ngpu: h100\n# the usual 8 GPUs\rgpus: 4096\n", 3),  # a key hidden in a comment (vim: ^M)
    ("model: llama-3.1-8b\r\ngpu: h100\r\ngpus: 8\rtp: 2\r\n", 3),            # a lone CR inside a CRLF file
])
def test_yaml_plan_file_with_a_lone_carriage_return_is_refused(run_cli, tmp_path, text, line):
    """PyYAML ends a line at a carriage return that starts no CRLF; vim and less show it inside one (^M): the same
    attack as U+2028 (hostile wave 27), refused naming the file and the line an editor counts."""
    plan = tmp_path / "p.yaml"
    plan.write_bytes(text.encode())
    err = field_refusal(run_cli("memory", str(plan)), "plan file", f"(line {line}): a carriage return")
    assert "use LF or CRLF line endings" in err


def test_yaml_plan_file_with_crlf_line_endings_is_read(run_cli, tmp_path):
    """A Windows file (CRLF everywhere) reads as its LF twin does."""
    crlf, lf = tmp_path / "crlf.yaml", tmp_path / "lf.yaml"
    body = "model: llama-3.1-8b\ngpu: h100\ngpus: 8\n"
    crlf.write_bytes(body.replace("\n", "\r\n").encode())
    lf.write_bytes(body.encode())
    a, b = run_cli("memory", str(crlf), "--json"), run_cli("memory", str(lf), "--json")
    assert a[0] == b[0] == 0 and a[1] == b[1]


def test_rate_text_rounding_up_to_one_reads_as_one_does():
    """A rate just below 1 request/s rounds to three significant figures as '1'; 1.0 itself prints '1.00'."""
    from gpuplan.jobs.inference.sizing_text import rate_text

    assert rate_text(0.9996) == rate_text(1.0) == "1.00"
    assert rate_text(0.0527) == "0.0527" and rate_text(0.54) == "0.54"


def test_explain_claims_no_shortfall_met_by_zero3_over_one_rank():
    """`--zero 3` given at dp x cp = 1 shards over one rank, saving nothing (the note train and plan print): explain
    said 'memory shortfall met with ZeRO-3' for it, since no row without ZeRO-3 was left to compare (review R1 S1)."""
    from gpuplan.jobs.plan.estimate import plan_report
    from gpuplan.jobs.plan.schema import PlanInputs

    report = plan_report(PlanInputs(model="llama-3.1-8b", tokens=1e12, gpu="h100", gpus=8, tp=8, zero=3, explain=True))
    assert " tp8 " in report.value("best_layout") and "ZeRO-3" in report.value("best_layout")
    assert report.section_of("why_shortfall") is None


def test_deadline_brackets_by_each_counts_first_layout():
    """--days D answers the fewest searched GPUs whose first layout (the one --gpus N answers) meets D; the bracket of
    counts searched between the common sizes is found by the same rule (review R2 M1): llama-3.1-8b 15T on H100 in 2
    days answered 24,576 GPUs, the next common size up, where 17,408's first layout meets 2 days (1.78 with failures)
    and 16,384's misses it."""
    from gpuplan.jobs.plan.estimate import plan_report
    from gpuplan.jobs.plan.schema import PlanInputs

    ask = dict(model="llama-3.1-8b", tokens=15e12, gpu="h100")
    answer = plan_report(PlanInputs(days=2, **ask))
    n = int(answer.value("best_gpus"))
    assert 16_384 < n < 24_576
    on_n = plan_report(PlanInputs(gpus=n, **ask))
    assert on_n.value("best_layout") == answer.value("best_layout")  # the layout --gpus N answers
    assert on_n.value("fail_wall_seconds") <= 2 * 86_400
    below = plan_report(PlanInputs(gpus=16_384, **ask))
    assert below.value("fail_wall_seconds") > 2 * 86_400


@pytest.mark.parametrize("dtype, gpu, left_out", [
    ("fp4", "b200", {"a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm", "h200-sxm"}),  # FP4 tensor cores: Blackwell
    ("fp8", "h100", {"a100-sxm4-40gb", "a100-sxm4-80gb"}),  # no FP8 tensor cores on Ampere
])
def test_memory_default_verdict_table_keeps_the_parts_that_compute_the_dtype(dtype, gpu, left_out):
    """memory --dtype lists no default part that cannot compute in it (review R2 S2: an fp4 table said H200 'fits'),
    as --compare refuses such a part; the parts that can stay."""
    from gpuplan.jobs.memory.estimate import estimate_memory
    from gpuplan.jobs.memory.schema import MemoryInputs

    report = estimate_memory(MemoryInputs(model="llama-3.1-8b", gpu=gpu, gpus=8, dtype=dtype))
    table = next(t for t in report.tables if t.title == "verdict per GPU type")
    listed = {row[0] for row in table.rows}
    assert not listed & left_out and "b200" in listed
