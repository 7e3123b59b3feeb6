"""kernels.drafter_runs_eager names the methods a vLLM V1 0.8.x proposer runs eagerly: EAGLE-1 and
EAGLE-3 only. MTP is left out because no 0.8.x MTP run reaches the roofline: 0.8.x runs MTP on its V0
engine only (engine/arg_utils.py@v0.8.5 L1423-1441, L1649-1658) and the inputs refuse it
(inputs_releases.VLLM_SPECULATIVE_V0_ONLY), before and after that window it is accepted."""

import pytest

from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving.releases import parse_release
from gpuplan.errors import InputError
from gpuplan.jobs.inference import inputs_releases as IR


@pytest.mark.parametrize("label", ["vllm==0.8.0", "vllm==0.8.3", "vllm==0.8.5"])
def test_mtp_on_vllm_0_8_is_refused_before_the_roofline(label):
    with pytest.raises(InputError) as err:
        IR.check_speculative("mtp", parse_release(label))
    assert err.value.field == "speculative" and "only on its V0 engine" in str(err.value)


def test_the_eager_drafters_are_eagle_and_eagle3_on_vllm_0_8():
    v085, v090 = parse_release("vllm==0.8.5"), parse_release("vllm==0.9.0")
    assert KR.drafter_runs_eager(v085, "eagle") and KR.drafter_runs_eager(v085, "eagle3")
    assert not KR.drafter_runs_eager(v090, "eagle") and not KR.drafter_runs_eager(v090, "eagle3")
    # the MTP windows the inputs accept: V0 0.7.3 (not V1, so not this rule) and V1 from 0.9.0 (graphed)
    IR.check_speculative("mtp", parse_release("vllm==0.7.3"))
    IR.check_speculative("mtp", v090)
    assert not KR.drafter_runs_eager(parse_release("vllm==0.7.3"), "mtp")
    assert not KR.drafter_runs_eager(v090, "mtp")
