"""FlashAttention 1 as an attention kernel (``--attention-kernel flash1``; core.time.attention_core
FA1_CAUSAL_TFLOPS / fa1_time_factor; the GPT-NeoX v1.0 Pythia rows of training_runs.yaml, issue 37 point 4).
The speeds are the numbers printed above the bars of Dao 2023 (FlashAttention-2, arXiv:2307.08691) Figure 4,
A100 80GB SXM4, forward + backward, causal panels (c) head dim 64 and (d) head dim 128."""

import math

import pytest

from gpuplan.catalog import reference_runs
from gpuplan.core.time.attention_core import fa1_time_factor
from gpuplan.jobs.validation.gpu_hours import run_inputs

NEOX_V1_ROWS = ("pythia-160m", "pythia-410m", "pythia-1.4b", "pythia-2.8b", "pythia-6.9b", "pythia-12b")


def _runs():
    return {r["id"]: r for r in reference_runs()["runs"]}


def test_fa1_time_over_fa2_is_the_figures_speed_ratio():
    """FA2 / FA1 TFLOP/s read in Figure 4 at s 2,048: head dim 64 140 / 77, head dim 128 155 / 69; 4,096: 156 / 87
    (64); past 16k the 16k bars (171 / 97); between points both speeds are log-linear in s (2,896 = the
    geometric midpoint of 2k and 4k: (140 + 156) / 2 over (77 + 87) / 2 = 148 / 82)."""
    assert fa1_time_factor(2048, 64) == pytest.approx(140 / 77, rel=1e-12) == pytest.approx(1.8182, abs=1e-4)
    assert fa1_time_factor(2048, 128) == pytest.approx(155 / 69, rel=1e-12) == pytest.approx(2.2464, abs=1e-4)
    assert fa1_time_factor(4096, 64) == pytest.approx(156 / 87, rel=1e-12)
    assert fa1_time_factor(65536, 64) == pytest.approx(171 / 97, rel=1e-12)
    assert fa1_time_factor(math.sqrt(2048 * 4096), 64) == pytest.approx(148 / 82, rel=1e-9)


def test_a_head_dim_between_kernels_runs_the_wider_kernel():
    """flash-attn 0.2.2 runs head dims 65-128 on its head-dim-128 kernel (fmha_api.cpp@v0.2.2 L179-187), the
    columns past the head dim only predicated off: Pythia 2.8B's 80 costs 128 / 80 of its FLOPs at the 128
    panel's ratio: 1.6 x 155 / 69 = 3.594; 48 runs the 64 kernel: 64 / 48 x 140 / 77 = 2.424."""
    assert fa1_time_factor(2048, 80) == pytest.approx(128 / 80 * 155 / 69, rel=1e-12) == pytest.approx(3.594, abs=1e-3)
    assert fa1_time_factor(2048, 48) == pytest.approx(64 / 48 * 140 / 77, rel=1e-12)


def test_pythia_1_4b_step_grows_by_its_attention_time_times_ratio_minus_one():
    """Pythia 1.4B (head dim 2,048 / 16 = 128, s 2,048, full recompute, dp64 mb16, one micro-batch): flash1 adds
    attention x (155 / 69 - 1) to the step, where the attention is the class line (forward + 2.5x backward) plus
    the recomputed forward (1 / 3.5 of it). By hand at this commit: 0.24681 s x (1 + 1 / 3.5) x 1.24638 = 0.3955 s
    on a 2.2990 s step (2.2990 -> 2.6945 s); nothing else moves (no communication is hidden: dp_overlap 0)."""
    from gpuplan.jobs.budget.estimate import estimate_budget

    fa1 = run_inputs(_runs()["pythia-1.4b"])
    assert fa1.attention_kernel == "flash1"
    fa1_report, fa2_report = estimate_budget(fa1), estimate_budget(fa1.model_copy(update={"attention_kernel": "flash"}))
    attention = fa2_report.value("class_attention")
    assert attention == pytest.approx(0.2468, abs=5e-4)
    ratio = 155 / 69
    change = fa1_report.value("io_step_seconds") - fa2_report.value("io_step_seconds")
    assert change == pytest.approx(attention * (1 + 1 / 3.5) * (ratio - 1), rel=1e-6)
    assert change == pytest.approx(0.3955, abs=5e-4)
    assert fa1_report.value("class_attention") == pytest.approx(attention * ratio, rel=1e-9)


def test_gpt_neox_v1_rows_state_flash_attention_1_and_the_older_configs_stay_eager():
    """The six rows read from the configurations with attention-config flash ran GPT-NeoX v1.0's flash-attn==0.2.2;
    the 70M and 1B rows cite earlier configurations with no flash entry (unfused attention), and 1B's head dim 256
    is beyond FlashAttention 1 anyway."""
    runs = _runs()
    for rid in NEOX_V1_ROWS:
        assert run_inputs(runs[rid]).attention_kernel == "flash1", rid
        assert "flash-attn==0.2.2" in runs[rid]["attention_kernel_source"], rid
    for rid in ("pythia-70m", "pythia-1b"):
        assert runs[rid]["attention_kernel"] == "eager" and "no flash attention_config" in runs[rid]["cluster_source"]


def test_fa1_keeps_the_flash_kernels_memory():
    """FlashAttention 1 saves what FlashAttention 2 saves (q, k, v, out, the log-sum-exp): the memory settings get
    'flash', the step 'flash1'."""
    from gpuplan.jobs.plan.search import evaluator_for

    ev = evaluator_for(run_inputs(_runs()["pythia-410m"]))
    assert (ev.memory.attention_kernel, ev.step.attention_kernel) == ("flash", "flash1")


@pytest.mark.parametrize(("args", "says"), [
    (("--attention-kernel", "flash3"), "must be one of flash, flash1, sdpa, eager"),
    (("--attention-kernel", "flash1", "--model", "pythia-1b"), "has 256 (q, k)"),
    (("--attention-kernel", "flash1", "--framework", "hf"), "not 1"),
])
def test_a_kernel_that_cannot_run_is_refused_in_one_line(run_cli, args, says):
    base = {"--model": "pythia-410m"}
    given = dict(zip(args[::2], args[1::2]))
    flags = [x for k, v in (base | given).items() for x in (k, v)]
    code, _, err = run_cli("train", *flags, "--gpu", "a100-sxm4-40gb", "--gpus", "32", "--tokens", "3e11")
    assert code == 2, err
    assert err.startswith("error: attention_kernel") and err.count("\n") == 1 and says in err, err
