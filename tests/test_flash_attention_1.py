"""FlashAttention 1 as an attention kernel (``--attention-kernel flash1``; core.time.attention_core
FA1_CAUSAL_TFLOPS / fa1_fraction_of_peak / fa1_passes; the GPT-NeoX v1.0 Pythia rows of training_runs.yaml, issue 37 point 4).
The speeds are the numbers printed above the bars of Dao 2023 (FlashAttention-2, arXiv:2307.08691) Figure 4,
A100 80GB SXM4, forward + backward, causal panels (c) head dim 64 and (d) head dim 128."""

import math

import pytest
from helpers import NEOX_V1_ROWS
from helpers import reference_runs_by_id as _runs

from gpuplan.core.time.attention_core import FA1_CAUSAL_TFLOPS, FA2_CAUSAL_TFLOPS, fa1_fraction_of_peak, fa1_passes
from gpuplan.core.time.efficiency import DEFAULT_ATTENTION_EFFICIENCY
from gpuplan.jobs.validation.gpu_hours import run_inputs


def test_fa1_runs_at_the_figures_own_speed():
    """FA1's forward + backward TFLOP/s read in Figure 4 over the A100's 312 BF16 TFLOP/s: s 2,048 head dim 64
    77 / 312 = 24.7%, head dim 128 69 / 312 = 22.1%; 4,096: 87 (64); past 16k the 16k bar (97); between points
    log-linear in s (2,896 = the geometric midpoint of 2k and 4k: (77 + 87) / 2 = 82)."""
    assert fa1_fraction_of_peak(2048, 64) == pytest.approx(77 / 312, rel=1e-12) == pytest.approx(0.2468, abs=1e-4)
    assert fa1_fraction_of_peak(2048, 128) == pytest.approx(69 / 312, rel=1e-12) == pytest.approx(0.2212, abs=1e-4)
    assert fa1_fraction_of_peak(4096, 64) == pytest.approx(87 / 312, rel=1e-12)
    assert fa1_fraction_of_peak(65536, 64) == pytest.approx(97 / 312, rel=1e-12)
    assert fa1_fraction_of_peak(math.sqrt(2048 * 4096), 64) == pytest.approx(82 / 312, rel=1e-9)


def test_the_rate_not_the_ratio_because_gpuplans_ampere_flash_is_below_fa2s_bars():
    """gpuplan's flash on Ampere runs at DEFAULT_ATTENTION_EFFICIENCY x 312 = 93.6 TFLOP/s (fitted on llm-foundry
    A100 rows that ran its Triton kernel), between the chart's FA1 (69-77) and FA2 (140-155) bars at s 2,048: the
    FA2 / FA1 ratio applied to it would put FA1 at 93.6 / (155 / 69) = 41.7 TFLOP/s, under FA1's own 69."""
    flash = DEFAULT_ATTENTION_EFFICIENCY * 312
    assert flash == pytest.approx(93.6)
    for dim, fa1, fa2 in ((64, 77, 140), (128, 69, 155)):
        assert FA1_CAUSAL_TFLOPS[dim][2] == fa1 and FA2_CAUSAL_TFLOPS[dim][2] == fa2
        assert fa1 < flash < fa2
        assert flash / (fa2 / fa1) < fa1


def test_a_head_dim_between_kernels_runs_the_wider_kernel():
    """flash-attn 0.2.2 runs head dims 65-128 on its head-dim-128 kernel (fmha_api.cpp@v0.2.2 L179-187), the
    columns past the head dim only predicated off: Pythia 2.8B's 80 gets 80 / 128 of the 128 panel's speed,
    69 / 312 x 0.625 = 13.8% of peak on its own FLOPs; 48 runs the 64 kernel: 77 / 312 x 48 / 64 = 18.5%."""
    assert fa1_fraction_of_peak(2048, 80) == pytest.approx(69 / 312 * 80 / 128, rel=1e-12) == pytest.approx(0.1382, abs=1e-4)
    assert fa1_fraction_of_peak(2048, 48) == pytest.approx(77 / 312 * 48 / 64, rel=1e-12)


def test_fa1_is_never_faster_than_the_flash_kernel():
    """fa1_passes keeps the flash kernel's split and never goes below it: 1 GFLOP forward per token at s 2,048,
    head dim 128, on a 312 TFLOP/s part: FA1 takes 3.5e9 / (312e12 x 69 / 312) = 50.72 us; a flash of 10 + 25 us
    is stretched by 50.72 / 35 (forward 14.49, backward 36.23 us); a flash already slower (40 + 100 us) stays."""
    fwd, bwd = fa1_passes(1e9, 2048, 128, 312e12, (10e-6, 25e-6))
    assert fwd + bwd == pytest.approx(3.5e9 / 69e12, rel=1e-12) == pytest.approx(50.72e-6, rel=1e-4)
    assert bwd / fwd == pytest.approx(2.5, rel=1e-12)
    assert fa1_passes(1e9, 2048, 128, 312e12, (40e-6, 100e-6)) == (pytest.approx(40e-6), pytest.approx(100e-6))


def test_pythia_1_4b_step_grows_by_its_attention_time_times_rate_ratio_minus_one():
    """Pythia 1.4B (head dim 2,048 / 16 = 128, s 2,048, A100 40GB, full recompute, dp64 mb16, one micro-batch):
    flash runs at 0.30 x 312 = 93.6 TFLOP/s, FA1 at 69, so flash1 multiplies the attention by 93.6 / 69 = 1.3565
    and adds attention x (1 + 1 / 3.5) x 0.3565 to the step, where the attention is the class line (forward +
    2.5x backward) plus the recomputed forward (1 / 3.5 of it). By hand at this commit: 0.24681 s x 1.285714 x
    0.356522 = 0.11313 s on a 2.2990 s step (2.2990 -> 2.4122 s); nothing else moves (dp_overlap 0)."""
    from gpuplan.jobs.budget.estimate import estimate_budget

    fa1 = run_inputs(_runs()["pythia-1.4b"])
    assert fa1.attention_kernel == "flash1"
    fa1_report, fa2_report = estimate_budget(fa1), estimate_budget(fa1.model_copy(update={"attention_kernel": "flash"}))
    attention = fa2_report.value("class_attention")
    assert attention == pytest.approx(0.2468, abs=5e-4)
    # by hand: causal attention 2 x h x (s + 1) FLOPs a token and layer forward (h 2,048, s 2,048), x 3.5 (forward
    # + 2.5x backward), 24 layers x 16 x 2,048 tokens, at 0.30 x 312 = 93.6 TFLOP/s
    assert attention == pytest.approx(3.5 * 2 * 2048 * 2049 * 24 * 16 * 2048 / 93.6e12, rel=1e-9)
    ratio = DEFAULT_ATTENTION_EFFICIENCY * 312 / 69
    change = fa1_report.value("io_step_seconds") - fa2_report.value("io_step_seconds")
    assert change == pytest.approx(attention * (1 + 1 / 3.5) * (ratio - 1), rel=1e-6)
    assert change == pytest.approx(0.1131, abs=5e-4)
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


@pytest.mark.parametrize(("command", "args", "says"), [
    ("train", ("--gpu", "v100", "--dtype", "fp16"), "NVIDIA Tesla V100"),  # fp16: no bf16 path (s25: gpu refused)
    ("train", ("--gpu", "mi300x"), "AMD Instinct MI300X"),
    ("plan", ("--gpu", "gb200", "--dtype", "fp8", "--fp8-attention"), "--fp8-attention is cuDNN's FP8 attention"),
])
def test_fa1_is_refused_where_its_code_cannot_run(run_cli, command, args, says):
    """flash-attn 0.2.x is CUDA code for Turing / Ampere and later and computes in fp16 / bf16 (review of
    bcc81fb: V100, MI300X and FP8 attention were answered with exit 0)."""
    code, _, err = run_cli(command, "pythia-410m", "--gpus", "32", "--tokens", "3e11", "--attention-kernel", "flash1",
                           *args)
    assert code == 2 and err.startswith("error: attention_kernel: got 'flash1'") and err.count("\n") == 1, err
    assert says in err, err
