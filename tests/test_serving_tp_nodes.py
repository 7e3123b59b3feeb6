"""Serving tensor parallelism past the GPU's scale-up domain (issue 38, review w14 R2 N3): a TP group larger
than the NVLink domain (Accelerator.scale_up_ranks: 8 on HGX H100, 72 on GB200 NVL72) runs its all-reduces
through NCCL across the domains (the engines' own kernels stay inside a node: vLLM custom_all_reduce.py
@00d618aa:90-96, 'Custom allreduce is disabled because this process group spans across nodes'), timed by
core.comm.collectives on the catalog's scale-out links; groups inside the domain keep the engine's kernel."""
from __future__ import annotations

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving.releases import parse_release
from gpuplan.core.serving.tp_span import spans_domains

MESSAGE = 1 * 8192 * 2
"""One decode token of Llama-3-70B (hidden 8,192, bf16): the TP all-reduce a batch-1 decode step sends, bytes."""
LATENCY = 8e-6
"""setup.Efficiency.allreduce_latency_s over NVLink (the engine's own kernel)."""


@pytest.fixture(scope="module")
def h100():
    return load_accelerator("h100")


def own_kernel(tp: int) -> float:
    """The engine's own kernel: 8 us + 2(tp-1)/tp x message at 0.8 x 450 GB/s per direction (900 GB/s both)."""
    return LATENCY + 2 * (tp - 1) / tp * MESSAGE / (900e9 / 2 * 0.8)


def test_tp16_on_h100_is_nccls_tree_across_two_nodes(h100):
    """16 KiB over 16 H100s (2 domains of 8): NCCL's tuner picks tree / LL (collectives._tree), hand-worked
    from NCCL's constants (tuning.cc) and the catalog's links (h100-sxm: 900 GB/s NVLink both directions at
    0.82, 400 Gb/s = 50 GB/s NIC per GPU at 0.9):
      latency  6.8 (tree LL base) + 2 x ((8 - 1) x 0.6 NVLink + log2(2) x 5.0 net) = 25.2 us
      bandwidth min(0.92 x min(8 x 50e9 x 0.9 = 360e9, 450e9 x 0.82 / 2 = 184.5e9) / 3.8, 39e9 / 2 (LL cap on
                two nodes) / 2) = 19.5 GB/s x 0.7 (tree correction at 16 KiB, log2(16384 / 64) = 8) = 13.65 GB/s
      -> 25.2 us + 16,384 / 13.65e9 = 26.400 us, against 8.085 us for the engine's kernel tp 16 was timed with."""
    release = parse_release("vllm==0.10.1")
    assert spans_domains(16, h100) and not spans_domains(8, h100)
    limit = KR.custom_allreduce_limit(release, 16, h100)  # as roofline passes it: 0, the own kernel off
    assert limit == 0.0
    # by hand (docstring): 25.2 us + 16,384 B / 13.65e9 B/s (1.2003 us) = 26.4003 us; the own kernel tp 16 was
    # timed with: 8 us + 2 x 15 / 16 x 16,384 / 360e9 (0.0853 us) = 8.0853 us
    seconds = KR.tp_allreduce_seconds(MESSAGE, 16, h100.scale_up_bandwidth, LATENCY, fabric=h100,
                                      custom_max_bytes=limit)
    assert seconds == pytest.approx(26.4003e-6, rel=1e-5)


def test_tp_inside_the_domain_keeps_the_engines_kernel(h100):
    """tp 8 on H100 and tp 16 on a GB200 NVL72 (72 GPUs on one NVLink domain): the own kernel, as before."""
    gb200 = load_accelerator("gb200")
    assert gb200.scale_up_ranks == 72 and not spans_domains(16, gb200)
    assert KR.tp_allreduce_seconds(MESSAGE, 8, h100.scale_up_bandwidth, LATENCY, fabric=h100) == pytest.approx(
        own_kernel(8), rel=1e-9)
    per_direction = gb200.scale_up_bandwidth / 2 * 0.8
    assert KR.tp_allreduce_seconds(MESSAGE, 16, gb200.scale_up_bandwidth, LATENCY, fabric=gb200) == pytest.approx(
        LATENCY + 2 * 15 / 16 * MESSAGE / per_direction, rel=1e-9)
    # vLLM refuses its kernel at world size 16 (tp_span.OWN_KERNEL_WORLD_SIZES, helper B3): NCCL inside the NVL72
    assert KR.custom_allreduce_limit(parse_release("vllm==0.10.1"), 16, gb200) == 0.0
    # PCIe-only parts (catalog scale-up domain 1): the node is their server of 8, so tp 2 on one stays inside it
    rtx4090 = load_accelerator("rtx-4090")
    assert rtx4090.scale_up_ranks == 1 and not spans_domains(2, rtx4090) and spans_domains(16, rtx4090)
    assert KR.custom_allreduce_limit(parse_release("vllm==0.10.1"), 2, rtx4090) == KR.CUSTOM_ALLREDUCE_MAX_BYTES


def test_tp16_on_h100_decode_pays_the_network_and_says_so(monkeypatch):
    """Llama-3-70B, tp 16 on H100, batch 1: 80 layers x 2 all-reduces each, and the embedding's (vLLM's
    VocabParallelEmbedding all-reduces its output: outside_layers, review w17 ME S2), move from the own kernel
    (8.085 us) to NCCL's tree across the two nodes (26.400 us): TPOT + 161 x 18.315 us = + 2.949 ms;
    the note says the all-reduces are timed over the scale-out network. The time to first token does not move:
    its 3,840-token message (60 MiB) is above the own kernel's 8 MiB, so NCCL across the nodes timed it before."""
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    def results():
        report = estimate_inference(InferenceInputs(search=False, model="llama-3-70b", gpu="h100", tp=16))
        return report.to_dict()["results"], report.notes

    from gpuplan.core.serving import roofline, step_memo

    def forget():  # the step's constants and decode tables are remembered by their inputs, not by KR's rule
        roofline._step_constants.cache_clear()
        step_memo.clear()

    after, notes = results()
    with monkeypatch.context() as patch:  # the rule off: the own kernel on the scale-up link, as before
        patch.setattr(KR, "own_kernel_off", lambda engine, tp, fabric: False)  # spans_domains and vLLM's sizes (B3)
        forget()
        before, _ = results()
    forget()
    assert after["tpot"] - before["tpot"] == pytest.approx(161 * (26.400e-6 - 8.085e-6), rel=2e-3)
    assert after["ttft"] == pytest.approx(before["ttft"], rel=1e-12)
    assert any("spans 2 scale-up domains of 8" in n and "timed as NCCL's over the scale-out network" in n
               for n in notes)
