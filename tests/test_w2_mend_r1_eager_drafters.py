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
    """EAGLE-3 before 0.8.5 and MTP on 0.8.x have no eager V1 drafter to price: one reason each; 0.9.0 and
    other engines pass."""
    assert "0.8.5" in SR.unavailable(parse_release("vllm==0.8.4"), "eagle3")
    assert "V0" in SR.unavailable(parse_release("vllm==0.8.5"), "mtp")
    assert "0.8.5" in SR.unavailable(parse_release("vllm==0.6.3"), "eagle3")  # V0: no EAGLE-3 either
    for label, method in (("vllm==0.8.5", "eagle3"), ("vllm==0.8.4", "eagle"), ("vllm==0.9.0", "mtp"),
                          ("sglang==0.4.9", "mtp"), ("vllm==0.7.3", "mtp")):
        assert SR.unavailable(parse_release(label), method) is None, (label, method)


def _answer(**kw):
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    return estimate_inference(InferenceInputs(search=False, model="llama-3.1-8b", gpu="h100", **kw))


def test_answer_names_the_runner_host_time():
    """Review w10 r1 SHOULD-FIX 2: vLLM 0.8.4, EAGLE k = 2 names the runner's 29 serial launches (1.2168 ms,
    inside the 8.90 ms verify step) and the drafts' 42 launches (1.7622 ms, host-bound), at 41.96 us a
    launch, and says --launch-layer-us does not change them; 0.9.0 (graphed drafter) has no such line."""
    r = _answer(engine="vllm==0.8.4", speculative="eagle", spec_tokens=2)
    line = r.line("spec_runner_host")
    assert line.value == pytest.approx((29 + 42) * LAUNCH_S, rel=1e-4)
    assert "29 serial launches" in line.formula and "42 draft launches (host-bound" in line.formula
    assert "--launch-layer-us does not change it" in line.formula
    host = next(a for a in r.assumptions if a.key == "host_time")
    assert "29 serial launches a verify step + 42 draft launches, 41.96 us each" in host.value
    graphed = _answer(engine="vllm==0.9.0", speculative="eagle", spec_tokens=2)
    assert all(ln.key != "spec_runner_host" for s in graphed.sections for ln in s.lines)


def test_host_line_names_launch_layer_us_only_where_it_moves():
    """SGLang 0.5.6 prices its eager steps at the kernels' issue time: the host-time line does not point to
    --launch-layer-us; vLLM 0.8.4's eager prefill steps are priced at Efficiency.layer_launch_s: it does."""
    flag = {e: next(a.flag for a in _answer(engine=e).assumptions if a.key == "host_time")
            for e in ("sglang==0.5.6", "vllm==0.8.4")}
    assert flag == {"sglang==0.5.6": "--engine", "vllm==0.8.4": "--engine / --launch-layer-us"}
