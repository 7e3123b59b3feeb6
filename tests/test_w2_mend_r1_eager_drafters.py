"""Every eager vLLM 0.8.x drafter is priced by one rule (review w10 r1, MUST-FIX 1): the draft forwards
issued from Python at the package's launch time, max(issue, GPU), whatever --launch-layer-us says;
EAGLE-3's launches counted from vLLM 0.8.5's code; methods 0.8.x's V1 engine did not run are refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.serving import kv_cache as K
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import setup as SU
from gpuplan.core.serving import spec_runner as SR
from gpuplan.core.serving import weights as W
from gpuplan.core.serving.releases import parse_release
from gpuplan.core.serving.speculative import speculation

LAUNCH_S = 41.957e-6  # first_token_path.EAGER_HOST_PER_LAUNCH_S


def _spec_step(label: str, method: str, k: int, layer_launch_s: float):
    """The speculative decode step of Llama-3-8B at batch 1, 512 cached tokens, bf16, H100 SXM."""
    spec, gpu = load_model("llama-3-8b"), load_accelerator("h100-sxm")
    release = parse_release(label)
    plain = SU.ServingSetup(W.FORMATS["bf16"], 2, runtime=SU.Runtime(engine=release.engine, version=release.version))
    plain = replace(plain, efficiency=replace(plain.efficiency, layer_launch_s=layer_launch_s))
    setup = replace(plain, speculation=speculation(method, k, 0.6, spec))
    kv = K.kv_layout(spec, 2, 1, 1, 16).bytes_per_sequence(512)
    return R.decode_step(spec, W.param_groups(spec), setup, kv, tp=1, pp=1, batch=1, context=512,
                         **R.gpu_keywords(gpu, plain))


def test_eagle3_counts_worked_by_hand():
    """EAGLE-3 at 0.8.5 (llama_eagle3.py, eagle.py, gpu_model_runner.py @v0.8.5): the layer 12 launches (2
    rms_norm, cat, qkv, rotary, cache write, attention, o, fused add-norm, gate_up, silu_and_mul, down); per
    verify EAGLE-1's 45 + 3 runner ops (3 auxiliary gathers + cat for 1 gather) + 3 head ops = 51, of which
    the draft segment 14 and 5 behind the forward, so 32 serial; each later draft 11 position / slot ops +
    embedding + final norm + LM head + 4 vocabulary-map ops + argmax = 19. k = 2: 14 + 24 + 19 = 57."""
    ops = SR.runner_ops(parse_release("vllm==0.8.5"), "eagle3")
    assert (ops.per_verify, ops.per_later_draft, ops.layer_launches) == (51, 19, 12)
    assert (ops.behind_forward, ops.draft_segment, ops.single_draft_fewer) == (5, 14, 3)
    assert SR.serial_host_seconds(ops, LAUNCH_S) == pytest.approx(32 * LAUNCH_S, rel=1e-12)
    assert SR.draft_launches(ops, 2) == 57
    assert SR.draft_launches(ops, 1) == 14 - 3 + 12
    eagle = SR.runner_ops(parse_release("vllm==0.8.4"), "eagle")
    assert SR.draft_launches(eagle, 2) == 42 and SR.draft_launches(eagle, 4) == 86


@pytest.mark.parametrize("method", ["eagle", "eagle3"])
def test_launch_layer_us_moves_no_eager_drafter(method):
    """On 0.8.5 both heads' draft forwards are Python-issued: --launch-layer-us (Efficiency.layer_launch_s)
    40 us -> 400 us moves neither the drafts nor the runner's host time (the parent moved EAGLE-3's drafts,
    80 us a layer added on top of the GPU time)."""
    low, high = _spec_step("vllm==0.8.5", method, 2, 40e-6), _spec_step("vllm==0.8.5", method, 2, 400e-6)
    assert high.draft_s == pytest.approx(low.draft_s, rel=1e-12)
    assert high.host_s == pytest.approx(low.host_s, rel=1e-12)


def test_eagle_and_eagle3_drafts_follow_one_rule():
    """At k = 2 on 0.8.5 each head's drafts are host-bound: exactly its issue, EAGLE-1 11 + 2 x 9 + 17 = 46
    launches, EAGLE-3 57 launches (above); EAGLE-3 issues more, so it is not faster (the parent gave
    EAGLE-3 4.6 ms a token against EAGLE-1's 5.5 ms from the accounting alone)."""
    e1, e3 = _spec_step("vllm==0.8.5", "eagle", 2, 80e-6), _spec_step("vllm==0.8.5", "eagle3", 2, 80e-6)
    assert e1.draft_s == pytest.approx(46 * LAUNCH_S, rel=1e-4)
    assert e3.draft_s == pytest.approx(57 * LAUNCH_S, rel=1e-4)
    assert e3.host_s - e1.host_s == pytest.approx(3 * LAUNCH_S, rel=1e-4)


def test_methods_v1_did_not_run_are_refused():
    """EAGLE-3 before 0.8.5 and MTP on 0.8.x have no eager V1 drafter to price: one reason each (since review w10 r3,
    jobs/inference/inputs_releases.check_speculative); 0.9.0 and other engines pass."""
    from gpuplan.errors import InputError
    from gpuplan.jobs.inference.inputs_releases import check_speculative

    for label, method, fragment in (("vllm==0.8.4", "eagle3", "0.8.5"), ("vllm==0.8.5", "mtp", "V0"),
                                    ("vllm==0.6.3", "eagle3", "0.8.5")):
        with pytest.raises(InputError, match=fragment):
            check_speculative(method, parse_release(label))
    for label, method in (("vllm==0.8.5", "eagle3"), ("vllm==0.8.4", "eagle"), ("vllm==0.9.0", "mtp"),
                          ("sglang==0.4.9", "mtp"), ("vllm==0.7.3", "mtp")):
        check_speculative(method, parse_release(label))
