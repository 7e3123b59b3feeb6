"""The context-parallel K/V ring as Transformer Engine's AttnFuncWithCPAndKVP2P runs it
(core.time.context_parallel; context_parallel.py@v2.7): 3 (cp - 1) K/V-sized transfers a layer and
micro-batch (forward cp - 1; backward K/V at step 0, K/V + dK/dV at the middle steps, dK/dV at the last),
cp - 1 more per re-run forward, each hidden behind one of the cp equal ring steps' attention; and the ring's
own kernels (megatron_ops.cp_class) charged beside the fitted elementwise factor."""

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.time import context_parallel as CP
from gpuplan.core.comm.step_comm import step_communication
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time.step import StepSettings, microbatch_compute_time


def test_transfers_per_layer_by_hand():
    assert CP.ring_transfers_per_layer(1) == 0
    assert CP.ring_transfers_per_layer(2) == 3  # forward 1; backward K/V, then dK/dV
    assert CP.ring_transfers_per_layer(8) == 21  # forward 7; backward 1 + 6 x 2 + 1
    assert CP.ring_transfers_per_layer(2, reruns=1.0) == 4  # full recompute re-runs the forward ring


def test_step_by_step_exposure_by_hand():
    """Attention 3.5 s a layer: forward 1, backward 2.5 (FLASH_BACKWARD_RATIO), over cp equal steps."""
    # cp 2, a 1 s send: forward step 0.5 s -> 0.5 exposed; backward steps 1.25 s hide both 1 s sends
    assert CP.ring_exposed_per_layer(1.0, 3.5, 2) == pytest.approx(0.5)
    # the aggregate window (3 s of sends behind 3.5 s of attention) would have hidden all of it
    assert CP.ring_exposed_per_layer(1.0, 3.5, 2, reruns=1.0) == pytest.approx(1.0)  # the re-run forward too
    # cp 4, attention 14 s (steps 1 s forward, 2.5 s backward): 1 s sends hide, 2 s sends leave forward
    # 3 x (2 - 1) and the two double-size middle backward steps 2 x (4 - 2.5)
    assert CP.ring_exposed_per_layer(1.0, 14.0, 4) == 0.0
    assert CP.ring_exposed_per_layer(2.0, 14.0, 4) == pytest.approx(3.0 + 3.0)
    assert CP.ring_exposed_per_layer(5.0, 14.0, 1) == 0.0  # no ring at cp 1


def test_which_recompute_reruns_the_ring():
    assert CP.attention_reruns(StepSettings(), 16) == 0.0
    assert CP.attention_reruns(StepSettings(recompute="full"), 16) == 1.0
    assert CP.attention_reruns(StepSettings(recompute="full", recompute_layers=2), 16, vpp=2) == pytest.approx(0.25)
    assert CP.attention_reruns(StepSettings(recompute="selective"), 16) == 1.0  # Megatron's default core_attn
    assert CP.attention_reruns(StepSettings(recompute="selective", recompute_modules=("mlp",)), 16) == 0.0
    assert CP.attention_reruns(StepSettings(recompute="selective", selective="op-sac"), 16) == 0.0  # SDPA saved


def test_ring_kernels_at_the_405b_layout_by_hand(monkeypatch):
    """Llama 3.1 405B (q 128 x 128 = 16,384, k = v = 8 x 128 = 1,024 a token), cp 2: forward 4 (k + v) +
    4q + 4.5q = 147,456 B, backward 4 (q + k + v) + 4.5 (q + k + v) = 156,672 B a token, / tp 4 = 76,032 B;
    4 + 6 kernels at 7.84 us. A micro-batch of 4,096 local tokens on a GB200 (8 TB/s at 0.89):
    0.0784 ms + 4,096 x 76,032 B / 7.12 TB/s = 0.0784 + 0.0437 = 0.1221 ms a layer, 16 layers a stage:
    1.954 ms a micro-batch more than without them (32 micro-batches: 62.5 ms of the rows' ~5.3 s step)."""
    spec, gpu = load_model("llama-3.1-405b"), load_accelerator("gb200")
    per_layer = CP.ring_kernels(spec, 2, 4096, gpu.memory_bandwidth, 4) * 4096
    assert per_layer == pytest.approx(10 * 7.84e-6 + 4096 * 76_032 / (8e12 * 0.89), rel=1e-9)
    assert per_layer == pytest.approx(0.1221e-3, rel=1e-3)
    assert CP.ring_kernels(spec, 1, 4096, gpu.memory_bandwidth, 4) == 0.0
    cluster, settings = cluster_for(gpu), StepSettings(seq_len=8192)
    with_ring = microbatch_compute_time(spec, cluster, settings, 4, 2, 1, 16, False).total
    monkeypatch.setattr(CP, "ring_kernels", lambda *args: 0.0)
    without = microbatch_compute_time(spec, cluster, settings, 4, 2, 1, 16, False).total
    assert with_ring - without == pytest.approx(16 * per_layer, rel=1e-9)


def test_405b_128_gpu_layout_ring_is_hidden():
    """Llama 3.1 405B at tp 4, pp 8, cp 2, dp 2, 32 micro-batches of 8,192 tokens, 16 layers a stage (the
    NeMo / Megatron-Bridge 128-GPU rows): 4,096 local tokens x 8 KV heads x (128 + 128) x 2 B / tp 4 =
    4,194,304 B a send, 32 x 16 x 3 = 1,536 sends; on NVLink (tp x cp = 8 ranks) one send is ~11 us
    while a forward ring step of attention takes ~0.18 ms: nothing exposed."""
    spec, gpu = load_model("llama-3.1-405b"), load_accelerator("gb200")
    cluster = cluster_for(gpu)
    settings = StepSettings(seq_len=8192)
    times = microbatch_compute_time(spec, cluster, settings, 4, 2, 1, 16, False)
    costs = step_communication(spec, cluster, settings, dp=2, tp=4, pp=8, vpp=8, cp=2, ep=1, zero=1, micro_batch=1,
                               micro_batches=32, shard_group=None, layers=16, trained_params=12.7e9,
                               t_attn_mb=times.attention, t_bwd_gemm_mb=times.backward_gemm, compute=5.0)
    (ring,) = [c for c in costs if c.parallelism == "CP"]
    assert ring.bytes_per_call == 4_194_304
    assert ring.calls == 1536
    one_send = ring.total / ring.calls
    forward_step = times.attention / 16 / 3.5 / 2
    assert one_send < 0.1 * forward_step
    assert ring.exposed == 0.0
