"""Checkpoints: size by recipe and optimizer, shards, write time, stalls, retention - by hand."""

import pytest

from gpuplan.adapters.resolve import resolve_model
from gpuplan.catalog import load_model
from gpuplan.core.economics import checkpoint as C
from gpuplan.core.memory import training as M

SEVEN_B = resolve_model(params="7B")


def size(recipe="mixed", optimizer="adamw", writers=1, spec=SEVEN_B):
    return C.checkpoint_size(spec, M.RECIPES[recipe], M.OPTIMIZERS[optimizer], writers)


def test_mixed_precision_adamw_is_14_bytes_per_param():
    # bf16 weights 2 + fp32 master 4 + Adam m, v 2 x 4 = 14 B/param; gradients are not saved.
    s = size()
    assert (s.weights, s.master, s.optimizer) == (14e9, 28e9, 56e9)
    assert s.total == 98e9
    assert s.bytes_per_param == 14


@pytest.mark.parametrize("recipe, optimizer, bytes_per_param", [
    ("article", "adamw", 10),     # the article: weights 2 + AdamW 8 (no master copy)
    ("megatron", "adamw", 14),    # 2 + 4 + 8; the fp32 main grads (4) are not saved
    ("bf16", "adamw", 6),         # 2 + 2 x 2
    ("fsdp2", "adamw", 12),       # fp32 sharded params 4 + 8
    ("mixed", "sgd", 10),         # 2 + 4 + one 4-byte momentum buffer
    ("mixed", "adam8bit", 2 + 4 + 2 * 1 + 2 * 4 / 2048),  # 8-bit states + one fp32 absmax per 2048
])
def test_bytes_per_param_reuse_the_memory_recipes(recipe, optimizer, bytes_per_param):
    assert size(recipe, optimizer).bytes_per_param == pytest.approx(bytes_per_param)


def test_llama3_405b_shards_fall_in_the_published_range():
    # 405,853,388,800 params x 14 B = 5.682 TB; over 16,384 writers = 346.8 MB per GPU, inside
    # Llama 3's "1 MB to 4 GB per GPU" (arXiv:2407.21783 Sec. 3.3.1)
    s = size(spec=load_model("llama-3.1-405b"), writers=16_384)
    assert s.total == pytest.approx(405_853_388_800 * 14)
    assert s.shard == pytest.approx(346.8e6, rel=1e-3)
    assert 1e6 <= s.shard <= 4e9


@pytest.mark.parametrize("gpus, zero, mp, writers", [(1113, 1, 1, 1113), (1113, 3, 8, 1113), (64, 0, 8, 8),
                                                     (64, 0, 1, 1), (4, 0, 8, 4)])
def test_writers_are_all_ranks_when_states_are_sharded(gpus, zero, mp, writers):
    assert C.checkpoint_writers(gpus, zero, mp) == writers


def test_write_time_and_stalls_by_hand():
    # 1,113 writers fill 140 nodes; 140 x 0.98 GB/s = 137.2 GB/s; 98 GB / 137.2 GB/s = 0.714 s
    nodes = C.writer_nodes(1113, 8, 140)
    bandwidth = C.write_bandwidth(nodes, 0.98e9)
    write = C.write_seconds(98e9, bandwidth)
    assert nodes == 140 and write == pytest.approx(0.7143, rel=1e-3)
    assert C.stall_seconds(write, 98e9 / 1113, False, 25e9, 600) == write
    # async: 88.05 MB shard / 25 GB/s = 3.52 ms; no overlap when the interval exceeds the write
    assert C.stall_seconds(write, 98e9 / 1113, True, 25e9, 600) == pytest.approx(98e9 / 1113 / 25e9)
    # a 0.5 s interval leaves 0.214 s of the previous write to wait for
    assert C.async_stall_seconds(98e9 / 1113, 25e9, write, 0.5) == pytest.approx(98e9 / 1113 / 25e9 + write - 0.5)


def test_writer_nodes_limited_by_writers_and_nodes():
    assert C.writer_nodes(8, 8, 140) == 1      # DDP with tp 8: one node writes
    assert C.writer_nodes(16_384, 8, 2048) == 2048


def test_retention():
    assert C.retention_bytes(98e9, C.DEFAULT_KEEP_CHECKPOINTS) == 980e9  # torchtitan keep_latest_k = 10
