"""TP beyond the key/value heads (issue 37 point 4, StarCoderBase): Megatron-Core 0.16 runs tp a multiple of the
K/V heads (transformer_config.py@core_v0.16.0 L939-946) by sub-sharding the QKV activation (attention.py@core_v0.16.0
L1264-1278, L1397-1416); torchtitan views each rank's K/V shard as whole heads (attention.py@b5bcd76 L697-705) and
cannot. Numbers worked by hand for StarCoder (40 x 6,144, 48 heads of 128, one K/V head) at the run's tp 4."""

from types import SimpleNamespace

import pytest

from gpuplan.adapters.resolve import resolve_gpu
from gpuplan.catalog import load_model
from gpuplan.core.comm.qkv_gather import qkv_gather_bytes, qkv_gather_cost
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.memory.model_states import stage_params
from gpuplan.core.model.spec import attention_params
from gpuplan.core.parallel import ParallelLayout, check_kv_heads, check_layout, kv_heads_below_tp
from gpuplan.errors import InputError
from gpuplan.planner.framework_rules import rules_for

STARCODER = load_model("starcoder")


def test_the_frameworks_that_sub_shard():
    assert rules_for("megatron").kv_subsharding and rules_for("generic").kv_subsharding
    assert not any(rules_for(f).kv_subsharding for f in ("torchtitan", "deepspeed", "hf"))


def test_tp_a_multiple_of_the_kv_heads_runs_only_where_the_framework_sub_shards():
    check_kv_heads(STARCODER, 4, kv_subsharding=True, framework="megatron")  # the run's tp 4: 4 % 1 == 0
    with pytest.raises(InputError) as exc:
        check_kv_heads(STARCODER, 4, kv_subsharding=False, framework="torchtitan")
    assert str(exc.value).startswith("tp: got 4; must divide the 1 key/value heads under --framework torchtitan")
    gqa = load_model("llama-3.1-8b")  # 8 K/V heads: 16 is a multiple (runs), 12 is neither multiple nor divisor
    check_kv_heads(gqa, 16, kv_subsharding=True)
    with pytest.raises(InputError, match="must divide or be a multiple of the 8 key/value heads"):
        check_kv_heads(gqa, 12, kv_subsharding=True)
    with pytest.raises(InputError, match="key/value heads"):  # the layout check's default stays the divisor
        check_layout(STARCODER, ParallelLayout(tp=4))
    check_layout(STARCODER, ParallelLayout(tp=4), kv_subsharding=True)
    assert kv_heads_below_tp(STARCODER, 4) and not kv_heads_below_tp(STARCODER, 1)
    assert not kv_heads_below_tp(gqa, 8)


def test_the_weights_stay_split_evenly():
    """Megatron-Core's linear_qkv is one column-parallel linear of q + 2 kv = 6,144 + 256 = 6,400 outputs: per
    rank at tp 4, (6,144 x 6,400 + 6,400) / 4 = 9,832,000 QKV parameters; the output projection (6,144 x 6,144
    + 6,144) / 4 = 9,438,720; 19,270,720 attention parameters a layer (no replicated K/V)."""
    assert attention_params(STARCODER.attention, STARCODER.hidden_size) / 4 == 19_270_720
    one = stage_params(STARCODER, ParallelLayout(tp=1, pp=4), 1)
    four = stage_params(STARCODER, ParallelLayout(tp=4, pp=4), 1)
    # a middle stage: 10 layers; only the two LayerNorms a layer (2 x 12,288) stay whole on each rank
    norms = 10 * 2 * 2 * 6_144
    assert four.dense == pytest.approx((one.dense - norms) / 4 + norms, rel=1e-12)


def test_the_gathered_buffer_by_hand():
    """8,192 tokens x 6,400 (48 query heads + K + V, 128 each) x 2 bytes = 104,857,600 bytes a gather."""
    assert qkv_gather_bytes(STARCODER, 8_192) == 104_857_600


def test_the_gather_on_a100_nvlink_within_the_ring_bounds():
    """Per step on one GPU of a 10-layer stage, 16 micro-batches: an all-gather forward and a reduce-scatter
    backward a layer (320 calls), the forward's again under full recompute (480). A ring moves 3/4 of the
    104.9 MB buffer through each GPU's 300 GB/s NVLink direction (A100: 600 GB/s both ways): at least 262 us a
    call; NCCL's achieved bus bandwidth on A100 is above half the line, so at most 524 us."""
    cluster = cluster_for(resolve_gpu("a100-sxm4-80gb"))
    none = qkv_gather_cost(STARCODER, cluster, SimpleNamespace(recompute="none"), 4, 16, 10, 8_192)
    full = qkv_gather_cost(STARCODER, cluster, SimpleNamespace(recompute="full"), 4, 16, 10, 8_192)
    assert none.calls == 320 and full.calls == 480
    low = 104_857_600 * 0.75 / 300e9
    assert 320 * low <= none.total <= 320 * 2 * low
    assert none.exposed == none.total  # blocking autograd collectives outside TE's linears: nothing hidden
    assert qkv_gather_cost(STARCODER, cluster, SimpleNamespace(recompute="none"), 1, 16, 10, 8_192).total == 0


def test_door_megatron_runs_the_run_layout_and_torchtitan_refuses(run_cli):
    args = ("train", "starcoder", "--gpu", "a100-sxm4-80gb", "--gpus", "512", "--tokens", "1e12", "--seq-len",
            "8192", "--global-batch", "512", "--tp", "4", "--micro-batch", "1")
    code, out, err = run_cli(*args, "--pp", "4", "--vpp", "1", "--zero", "1", "--framework", "megatron")
    assert code == 0 and "dp32 tp4 pp4 ZeRO-1 mb1" in out, err
    code, out, err = run_cli(*args, "--framework", "torchtitan")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("error: tp: got 4; must divide the 1 key/value heads under --framework torchtitan"), err
