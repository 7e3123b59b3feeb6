"""Three small serving facts (issue 38, helper B3): vLLM's / SGLang's own all-reduce kernel runs only at TP
world sizes 2, 4, 6, 8 (CustomAllreduce._SUPPORTED_WORLD_SIZES; core.serving.tp_span.OWN_KERNEL_WORLD_SIZES),
NCCL at every other size."""
from __future__ import annotations

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving.releases import parse_release

MESSAGE = 1 * 8192 * 2
"""One decode token of Llama-3-70B (hidden 8,192, bf16), bytes."""
LATENCY = 8e-6
"""setup.Efficiency.allreduce_latency_s over NVLink (the engine's own kernel)."""


@pytest.fixture(scope="module")
def parts():
    return load_accelerator("h100"), load_accelerator("gb200")


@pytest.mark.parametrize("engine", ["vllm==0.10.1", "vllm==0.19", "sglang==0.5.6"])
def test_own_kernel_only_at_world_sizes_2_4_6_8(parts, engine):
    """custom_all_reduce.py: vLLM @v0.10.1.1:51 / @v0.19.0:52, SGLang @v0.5.6:55 list [2, 4, 6, 8]; any other
    size logs 'unsupported world size' and leaves the kernel off. On H100 (bf16, hidden 8,192, no table limit
    given) the 8 MiB bound applies at 2 / 4 / 6 / 8 (vLLM 0.19 reads its sm90 tables: > 0), 0 at 3 / 5 / 7; on
    a GB200 NVL72 tp 16 sits inside one NVLink domain yet gets 0 (NCCL). tp 8 / tp 4 on GB200 trays, by release:
    test_serving_sizing_domain."""
    h100, gb200 = parts
    release = parse_release(engine)
    for tp in (2, 4, 6, 8):
        assert KR.custom_allreduce_limit(release, tp, h100, hidden=8192) > 0, tp
    for tp in (3, 5, 7):
        assert KR.custom_allreduce_limit(release, tp, h100, hidden=8192) == 0.0, tp
    assert KR.custom_allreduce_limit(release, 16, gb200, hidden=8192) == 0.0
    assert KR.custom_allreduce_limit(release, 3, h100, given=4e6) == 0.0  # a given workspace cannot turn it on


def test_trtllm_keeps_its_own_rule(parts):
    """TensorRT-LLM's AUTO strategy is not vLLM's class: tp 3 on NVLink keeps its 8 MB workspace bound
    (custom_allreduce_bytes_of: 8e6 above tp 2)."""
    h100, _ = parts
    assert KR.custom_allreduce_limit(parse_release("trtllm==1.0"), 3, h100) == 8e6


def test_tp3_all_reduce_is_nccls_time(parts):
    """vLLM tp 3 on H100: the step's limit is 0, so tp_allreduce_seconds times the 16 KiB message with NCCL's
    model (core.comm.collectives), not the own kernel's 8 us + 2 x 2/3 x 16,384 / (450e9 x 0.8) = 8.061 us."""
    h100, _ = parts
    limit = KR.custom_allreduce_limit(parse_release("vllm==0.10.1"), 3, h100)
    seconds = KR.tp_allreduce_seconds(MESSAGE, 3, h100.scale_up_bandwidth, LATENCY, fabric=h100, custom_max_bytes=limit)
    assert seconds == pytest.approx(KR.nccl_all_reduce_seconds(MESSAGE, 3, h100), rel=1e-12)
    own = KR.tp_allreduce_seconds(MESSAGE, 3, h100.scale_up_bandwidth, LATENCY, fabric=h100)
    assert own == pytest.approx(8e-6 + 2 * 2 / 3 * MESSAGE / (900e9 / 2 * 0.8), rel=1e-9)
    assert own == pytest.approx(8.061e-6, rel=1e-3) and seconds != pytest.approx(own, rel=1e-3)


def test_pipeline_hops_that_leave_the_domain(parts):
    """Ranks TP innermost, domains of 8 on H100 (72 on GB200): tp 8 pp 2 crosses at its one boundary; tp 4 pp 2
    stays in GPUs 0-7; tp 4 pp 4 crosses once (stage 2 starts at GPU 8); tp 3 pp 3 once (GPU 5 -> 8); tp 8 pp 4 on
    a GB200 NVL72 never (32 of 72 GPUs), tp 8 pp 16 once (stage 9 starts at GPU 72)."""
    from gpuplan.core.serving.pp_hops import hops_across_domains
    h100, gb200 = parts
    assert [hops_across_domains(tp, pp, h100) for tp, pp in ((8, 2), (4, 2), (4, 4), (3, 3), (1, 16))] == [1, 0, 1, 1, 1]
    assert hops_across_domains(8, 4, gb200) == 0 and hops_across_domains(8, 16, gb200) == 1
    assert hops_across_domains(8, 2, None) == 0 and hops_across_domains(8, 1, h100) == 0


def test_pipeline_hop_seconds_on_the_network(parts):
    """A 16 KiB hop (one decode token of Llama-3-70B): inside the domain 8 us + 16,384 / (900e9 / 2) = 8.036 us;
    across H100 nodes core.comm.volumes.p2p_time on the catalog's 400 Gb/s = 50e9 B/s x 0.9 with 15 us:
    15 us + 16,384 / 45e9 = 15.364 us. tp 4 pp 4: two hops inside, one across = 31.437 us."""
    from gpuplan.core.serving.pp_hops import pipeline_hop_seconds
    h100, _ = parts
    # by hand: inside 8 us + 16,384 B / 450e9 B/s (0.0364 us) = 8.0364 us; across 15 us + 16,384 / 45e9 (0.3641 us)
    # = 15.3641 us; tp 4 pp 4: 2 x 8.0364 + 15.3641 = 31.4369 us
    assert pipeline_hop_seconds(MESSAGE, 4, 2, h100, 900e9, LATENCY) == pytest.approx(8.0364e-6, rel=1e-5)
    assert pipeline_hop_seconds(MESSAGE, 8, 2, h100, 900e9, LATENCY) == pytest.approx(15.3641e-6, rel=1e-5)
    assert pipeline_hop_seconds(MESSAGE, 4, 4, h100, 900e9, LATENCY) == pytest.approx(31.4369e-6, rel=1e-5)
    assert pipeline_hop_seconds(MESSAGE, 8, 1, h100, 900e9, LATENCY) == 0.0


def test_graph_floor_lines_state_the_reported_step():
    """SGLang 0.5.6 Qwen3-235B-A22B TP 8 on 8 B200 at batch 2: the graph layer runs 17 kernels (its q copy from 2
    tokens, layer_kernels.graph_kernels), 4.267 us x 17 = 72.53 us a layer (68.27 us at batch 1's 16), and the
    step's floor is 94 x 72.53 us = 6.818 ms: the assumption and the per-step line state 73 us and 17 kernels,
    not batch 1's 68 us and 16 (issue 38)."""
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    def lines(batch):
        report = estimate_inference(InferenceInputs(search=False, model="qwen3-235b-a22b", gpu="b200", tp=8,
                                                    engine="sglang==0.5.6", batch=batch)).to_dict()
        floor = next(a for a in report["assumptions"] if a["key"] == "kernel_floor")
        step = next(line for section in report["sections"] for line in section.get("lines", ())
                    if line["key"] == "kernel_floor_per_step")
        return floor, step

    # by hand: 4.2667 us (graph_floor.GRAPH_KERNEL_S, 1.6 ms / 375) x 17 = 72.533 us a layer; 94 layers x 72.533 us
    # = 6.8181 ms (batch 1: 4.2667 x 16 = 68.27 us)
    floor, step = lines(2)
    assert floor["value"] == "73 us a layer" and "17 kernels a layer here (2-token step)" in floor["source"]
    # + the 20 kernels outside the layers at TP 8 and 1 copy in the 2-row logits gather's reshape, 21 x 4.2667 us =
    # 89.6 us (outside_layers, wave 17, review w17 ME): 6.9077 ms
    assert step["value"] == pytest.approx(6.8181e-3 + 0.0896e-3, rel=1e-4) and step["formula"].startswith("94 layers x 73 us")
    floor, step = lines(1)
    assert floor["value"] == "68 us a layer" and "16 kernels a layer here (1-token step)" in floor["source"]
    assert step["formula"].startswith("94 layers x 68 us")
