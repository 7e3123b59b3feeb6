"""vLLM's int4 prefill GEMMs on sm8x run Marlin, whose 64-row problems cap its rate (issue 38, core/serving/marlin).

- vLLM 0.9.1 converts an AWQ checkpoint to awq_marlin unless --quantization awq is given
  (quantization/awq_marlin.py@v0.9.1:107-124) and calls gptq_marlin_gemm at every M (utils/marlin_utils.py
  @v0.9.1:434-475); the kernel splits M into problems of 64 rows (gptq_marlin.cu@v0.9.1:537-551).
- Its rate from batch 64 to 4,000 is 139.7-141.4 TFLOP/s (vllm PR 2497, Marlin's bench.py on an A100-class part):
  marlin.MARLIN_LARGE_M_FRACTION = 141.4 / 312 = 0.4532 of the fp16 peak, against 0.80 for a 16-bit GEMM.
- vllm#20469 (held out: vLLM 0.9.1 --enforce-eager, Qwen3-14B-AWQ on one A100 80GB PCIe, 30 x 16,000 / 200 tokens,
  benchmark_serving at concurrency 1): measured mean TTFT 3,345.37 ms; the model was 2,288.0 ms (-31.6%) with the
  16-bit GEMM fraction and is within 10% with Marlin's.
"""

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.serving import marlin as MG
from gpuplan.core.serving import setup as SU
from gpuplan.core.serving import weights as W
from gpuplan.core.serving.releases import parse_release
from gpuplan.jobs.validation import inference as VI

ISSUE_20469 = "vllm20469-qwen3-14b-awq-a100pcie-16000-200-c1-eager"


def _row(row_id: str) -> dict:
    found = [e for section in VI.reference_measurements().values() if isinstance(section, list)
             for e in section if isinstance(e, dict) and e.get("id") == row_id]
    assert len(found) == 1, row_id
    return found[0]


def test_fraction_is_the_bench_plateau_over_the_a100_peak():
    assert MG.MARLIN_LARGE_M_FRACTION == pytest.approx(141.4 / 312.0, rel=1e-12)
    assert MG.MARLIN_LARGE_M_FRACTION == pytest.approx(0.4532, abs=1e-4)


@pytest.mark.parametrize("release, gpu, fmt, runs", [
    ("vllm==0.9.1", "a100-pcie-80gb", "int4-g128", True),   # the row: sm80, awq_marlin
    ("vllm==0.23", "l4", "int4", True),                      # Ada, sm89: the same kernel
    ("vllm==0.9.1", "h100-sxm", "int4-g128", False),         # sm90: not the Ampere figure (GPTQ goes to Machete)
    ("vllm==0.9.1", "a100-pcie-80gb", "bf16", False),        # 16-bit weights: cuBLAS
    ("vllm==0.9.1", "a100-pcie-80gb", "fp8", False),         # FP8 is not Marlin's int4 path here
    ("vllm==0.5.2", "a100-pcie-80gb", "int4-g128", False),   # before awq_marlin (VLLM_MARLIN_SINCE)
    ("sglang==0.5.6", "a100-pcie-80gb", "int4-g128", False),  # other engines keep their GEMM fraction
])
def test_runs_marlin_where_vllm_serves_int4_on_sm8x(release, gpu, fmt, runs):
    assert MG.runs_marlin(parse_release(release), load_accelerator(gpu), fmt) is runs


def test_fraction_scales_with_the_range_and_leaves_other_setups_alone():
    a100 = load_accelerator("a100-pcie-80gb")
    int4 = W.weight_format("int4", group_size=128)
    vllm = SU.ServingSetup(int4, 2.0, runtime=SU.Runtime(engine="vllm", version=(0, 9, 1)))
    eff = vllm.efficiency
    for which in (0, 1, 2):  # expected, low, high: 0.4532 x (0.80, 0.60, 0.90) / 0.80
        assert MG.gemm_fraction(vllm, a100, eff.compute[which]) == pytest.approx(
            0.4532 * eff.compute[which] / 0.80, rel=1e-3)
    # llama.cpp / MLC / ExLlama rows carry a default vLLM Runtime on their own prior: untouched
    other = SU.ServingSetup(int4, 2.0, efficiency=SU.OTHER_ENGINES)
    assert MG.gemm_fraction(other, a100, 0.5) == 0.5


def test_issue_20469_cold_prefill_gemms_run_at_marlins_rate_and_the_row_is_within_10_percent():
    e = _row(ISSUE_20469)
    assert (e["release"], e["gpu"], e["quantization"]) == ("vllm==0.9.1", "a100-pcie-80gb", "int4")
    cold = VI._served_request(e, 16000, 200)[0]
    # 16,000 tokens of Qwen3-14B's linears: 2 x 13.2e9 weights a token; at 0.4532 x 312 TFLOP/s that is ~3.0 s
    # (1.70 s at the 16-bit 0.80): compute-bound, so the GEMM time is the FLOPs over Marlin's rate
    assert cold.gemm_s == pytest.approx(2.99, rel=0.01)
    ttft = VI._online_cases(e)[0]
    measured, predicted = ttft[2], ttft[3]
    assert measured == pytest.approx(3.34537, rel=1e-6)
    assert abs(predicted / measured - 1) <= 0.10  # +5.8% on 2026-12-06; -31.6% with the 16-bit fraction


def test_a_users_compute_efficiency_rescales_marlins_fraction_too():
    """--compute-efficiency rescales the 16-bit range (jobs/inference/schema.py _scaled); Marlin's follows it:
    a calibration to 0.60 (0.75 x the default 0.80) gives 0.75 x 0.4532 = 0.3399."""
    a100 = load_accelerator("a100-pcie-80gb")
    setup = SU.ServingSetup(W.weight_format("int4", group_size=128), 2.0,
                            runtime=SU.Runtime(engine="vllm", version=(0, 9, 1)),
                            efficiency=SU.Efficiency(compute=(0.60, 0.45, 0.675)))
    assert MG.gemm_fraction(setup, a100, 0.60) == pytest.approx(0.3399, rel=1e-3)
