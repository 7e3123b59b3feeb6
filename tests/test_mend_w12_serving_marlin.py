"""Mender MB (wave 12, review R3 M1 / M3): where vLLM's dense Marlin factor applies, and at what ratio.

- M1: Marlin takes group sizes -1, 32, 64, 128 only (MARLIN_SUPPORTED_GROUP_SIZES, vLLM
  quantization/utils/marlin_utils.py@v0.9.1:25); any other stays on a non-Marlin kernel.
- M3: Ada's ratio to the 16-bit fraction is IST-DASLab/marlin#21's 0.82x torch fp16 (RTX 6000 Ada); Ampere keeps
  141.4 / 312 = 0.453 of the peak (vllm PR 2497). int4 MoE experts run fused_marlin_moe (no figure): not priced.
"""

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.serving import marlin as MG
from gpuplan.core.serving import setup as SU
from gpuplan.core.serving import weights as W
from gpuplan.core.serving.releases import parse_release

VLLM = parse_release("vllm==0.9.1")


@pytest.mark.parametrize("group, runs", [(None, True), (32, True), (64, True), (128, True),
                                         (16, False), (256, False), (1024, False)])
def test_marlin_only_for_its_group_sizes(group, runs):
    fmt = W.weight_format("int4", group_size=group)  # None = one group a channel ('int4', vLLM's -1)
    assert MG.runs_marlin(VLLM, load_accelerator("a100-pcie-80gb"), fmt.name) is runs


def _setup(group=128):
    return SU.ServingSetup(W.weight_format("int4", group_size=group), 2.0,
                           runtime=SU.Runtime(engine="vllm", version=(0, 9, 1)))


def test_a_group_marlin_refuses_keeps_the_16_bit_fraction():
    assert MG.gemm_fraction(_setup(256), load_accelerator("a100-pcie-80gb"), 0.80) == 0.80


def test_ada_takes_marlin_21s_ratio_ampere_the_a100_plateau():
    # Ada (L4, sm89): 0.82 x the 16-bit 0.80 = 0.656; Ampere (A10 sm86, A100 sm80): 141.4 / 312 = 0.4532
    assert MG.gemm_fraction(_setup(), load_accelerator("l4"), 0.80) == pytest.approx(0.656, rel=1e-9)
    for gpu in ("a10", "a100-pcie-80gb"):
        assert MG.gemm_fraction(_setup(), load_accelerator(gpu), 0.80) == pytest.approx(0.4532, abs=1e-4)


def test_int4_moe_experts_are_not_priced_at_the_dense_marlin_rate():
    a100 = load_accelerator("a100-pcie-80gb")
    assert MG.runs_marlin(VLLM, a100, "int4-g128", moe=True) is False
    assert MG.gemm_fraction(_setup(), a100, 0.80, moe=True) == 0.80
