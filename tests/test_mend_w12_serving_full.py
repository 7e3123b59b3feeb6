"""Mender MB (wave 12, review R3 M2): `infer --full` prints the GEMM fraction it used where vLLM runs Marlin.

The 16-bit line said 0.80 (or a user's --compute-efficiency) while the GEMMs ran at Marlin's fraction, scaled from
it (core/serving/marlin.py: 141.4 / 312 / 0.80 = 0.567 on Ampere). Hand-worked: 0.80 x 0.567 = 0.45; a calibrated
0.453 gives 0.453 x 0.567 = 0.26, the rate the 5,282 ms GEMMs were priced at.
"""

from functools import lru_cache

from gpuplan.jobs.inference.estimate import estimate_inference
from gpuplan.jobs.inference.schema import InferenceInputs


@lru_cache(maxsize=None)
def _line(gpu: str, group: int = 128, compute=None) -> str:
    kw = {} if compute is None else {"compute_efficiency": compute}
    r = estimate_inference(InferenceInputs(model="qwen3-14b", gpu=gpu, quantization="int4", group_size=group,
                                           engine="vllm==0.9.1", context=4096, output_tokens=200, search=False, **kw))
    return next(a.value for a in r.assumptions if a.key == "compute_efficiency")


def test_the_marlin_fraction_is_printed_next_to_the_16_bit_one():
    # the 16-bit default 0.80 (0.60-0.90) (jobs/inference/schema.py compute_efficiency) times Marlin's ratio:
    # Ampere 141.4 / 312 / 0.80 = 0.5665 -> 0.453 (0.340-0.510), Ada 0.82 -> 0.656 (0.492-0.738), printed to two
    # decimals
    assert "runs Marlin: 0.45 (0.34-0.51) = this x 0.567 (Ampere" in _line("a100-pcie-80gb")
    assert "runs Marlin: 0.66 (0.49-0.74) = this x 0.82 (Ada" in _line("l4")


def test_a_calibrated_compute_efficiency_shows_the_marlin_rate_it_gives():
    line = _line("a100-pcie-80gb", compute=0.453)
    assert line.startswith("0.45 (") and "runs Marlin: 0.26 (" in line


def test_no_marlin_clause_where_marlin_does_not_run():
    assert "Marlin" not in _line("a100-pcie-80gb", group=256)  # vLLM refuses group 256 for Marlin (M1)
    assert "Marlin" not in _line("h100-sxm")
