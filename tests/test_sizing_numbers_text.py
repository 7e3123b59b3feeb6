"""How the sizing answer prints counts and rates at the extremes (H1 wave 20's found list): thousands separators on
replica counts ('619682 x (tp 2 ...)' before), and a rate below 0.01 requests/s in significant digits ('at 0.00
requests/s a replica' for --rps 1e-6)."""

from __future__ import annotations

from gpuplan.catalog import load_accelerator
from gpuplan.jobs.inference.sizing_text import placement, rate_text


def test_rate_text_keeps_two_decimals_and_shows_small_rates():
    assert rate_text(12345.678) == "12,345.68" and rate_text(0.54) == "0.54" and rate_text(0.01) == "0.01"
    assert rate_text(1e-6) == "1e-06" and rate_text(0.00456) == "0.00456" and rate_text(0.0) == "0.00"


def test_placement_separates_thousands():
    gpu = load_accelerator("h100-sxm")
    assert placement(7_986_413, 2, gpu, 15_972_826) == f"7,986,413 x (tp 2 on {gpu.name}) = 15,972,826 GPUs"


def test_the_cli_prints_a_tiny_rate_as_asked(run_cli):
    code, out, err = run_cli("infer", "llama-3.1-8b", "--rps", "1e-6")
    assert code == 0, err
    assert "at 1e-06 requests/s a replica" in out and "at 0.00 requests/s" not in out
