"""A host-bound MoE layer's stretch is a window for the data-parallel collectives (session 26).

Megatron-Core's MoE dispatcher makes the host wait for the GPU once a layer (core.time.moe_host); from that sync the
layer takes the host's time and the GPU idles through the difference. The data-parallel gathers and reduce-scatters
run on NCCL's stream through that idle as through GPU work, so core.time.step hides them behind the stretched compute.
Before, they hid behind the GPU's work alone, and a longer GPU time was credited twice, once against the host and once
against the collectives: qwen3-30b-a3b, EP 8 on 16 H100, ZeRO-3, one 4,096-token sequence a micro-batch, megatron,
stepped 0.5873 / 0.5855 / 0.5819 / 0.5783 s with the element-wise work 1/0.9, 1, 1/1.2, 1/1.4 as fast (the step fell as
the work grew; session 25 review R2 S1-2, calibrate.reproduce).
"""

from dataclasses import replace

import pytest

from gpuplan.adapters.resolve import resolve_gpu, resolve_model
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time import step as S
from gpuplan.jobs.plan.schema import PlanInputs
from gpuplan.jobs.plan.step_settings import step_settings_for

LAYOUT = dict(dp=16, tp=1, pp=1, vpp=1, cp=1, ep=8, zero=3, micro_batch=1, micro_batches=1)


@pytest.fixture(scope="module")
def case():
    inputs = PlanInputs(model="qwen3-30b-a3b", tokens=1e12, gpu="h100", gpus=16, tp=1, pp=1, ep=8, cp=1, vpp=1,
                        seq_len=4096, zero=3, micro_batch=1, global_batch=16, recompute="none", framework="megatron")
    spec, gpu = resolve_model("qwen3-30b-a3b"), resolve_gpu("h100")
    return spec, cluster_for(gpu), step_settings_for(inputs, spec, gpu, "none")


def test_the_step_grows_with_the_work(case):
    spec, cluster, settings = case
    # the element-wise and optimizer work slower by f (calibrate.apply's hbm_efficiency / f), then the GEMMs too
    hbm = [S.step_time(spec, cluster, replace(settings, hbm_efficiency=settings.hbm_efficiency / f), **LAYOUT).total
           for f in (0.8, 0.9, 1.0, 1.1, 1.2, 1.4, 2.0)]
    gemm = [S.step_time(spec, cluster, replace(settings, gemm_d_half=settings.gemm_d_half * f + 4096 * (f - 1)),
                        **LAYOUT).total for f in (0.8, 1.0, 1.2, 1.5, 2.0)]
    for steps in (hbm, gemm):
        assert all(b >= a - 1e-12 for a, b in zip(steps, steps[1:])), steps


def test_the_host_stretch_hides_data_parallel_traffic(case):
    spec, cluster, settings = case
    eager = S.step_time(spec, cluster, settings, **LAYOUT)
    graph = S.step_time(spec, cluster, replace(settings, moe_launch="graph"), **LAYOUT)  # no host term
    # the host term itself is unchanged (0.0853 s a step: 48 layers of the dispatcher's exposed host time)
    assert float(eager.moe_host) == pytest.approx(0.0853, abs=5e-4)
    assert float(graph.moe_host) == 0.0
    assert float(eager.compute - graph.compute) == pytest.approx(float(eager.moe_host), rel=1e-9)
    # the same 0.3665 s of ZeRO-3 traffic a step; behind the stretched compute less of it is exposed (0.1019 s when
    # the window was the GPU's work alone, 0.0511 s now), and never more than without the stretch
    assert float(eager.dp_traffic) == pytest.approx(0.3665, abs=5e-4)
    assert float(eager.dp_comm) == pytest.approx(0.0511, abs=5e-4)
    assert float(eager.dp_comm) < float(graph.dp_comm) + 1e-12
    assert eager.total == pytest.approx(0.5347, abs=5e-4)
