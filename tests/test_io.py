"""Data loading: token rates, bytes per second, CPU cores, and the storage verdict, by hand."""

import pytest

from gpuplan.catalog.storage import storage_kinds, storage_spec
from gpuplan.core.economics import io as IO


@pytest.mark.parametrize("vocab, expected", [(32_000, 2), (50_257, 2), (65_499, 2), (65_500, 4), (128_256, 4)])
def test_token_id_bytes_follows_megatrons_rule(vocab, expected):
    # Megatron-LM indexed_dataset.py DType.optimal_dtype: uint16 if cardinality < 65500 else int32
    assert IO.token_id_bytes(vocab) == expected


def test_required_tokens_per_second():
    # 4,194,304-token global batch every 2.0 s -> 2,097,152 tokens/s
    assert IO.required_tokens_per_s(4_194_304, 2.0) == 2_097_152


@pytest.mark.parametrize("gpus, per_node, nodes", [(1113, 8, 140), (16_384, 8, 2048), (8, 8, 1), (3, 8, 1), (72, 4, 18)])
def test_nodes_count_partly_used_nodes(gpus, per_node, nodes):
    assert IO.nodes_for(gpus, per_node) == nodes  # 1113 / 8 = 139.1 -> 140


def test_pretokenised_need_and_supply_by_hand():
    # 1e6 tokens/s over 10 nodes = 1e5 tokens/s per node; uint16 ids: 2e5 B/s per node.
    # Storage 1e9 B/s per node supplies 1e9 / 2 = 5e8 tokens/s: 5,000x the need.
    d = IO.data_loading(1e6, 10, 2, 1e9, tokenize_on_the_fly=False, tokens_per_s_per_core=1e6, cpu_cores_per_node=112)
    assert d.tokens_per_s_per_node == 1e5
    assert d.read_bytes_per_s_per_node == 2e5
    assert d.cores_per_node == 0
    assert d.headroom == pytest.approx(5000)
    assert d.bound_by == "gpu"


def test_on_the_fly_tokenisation_needs_cores_by_hand():
    # 1e5 tokens/s per node at 1e6 tokens/s per core -> 0.1 core; 4 B of text per token -> 4e5 B/s
    d = IO.data_loading(1e6, 10, 4.0, 1e9, tokenize_on_the_fly=True, tokens_per_s_per_core=1e6, cpu_cores_per_node=112)
    assert d.cores_per_node == pytest.approx(0.1)
    assert d.read_bytes_per_s_per_node == pytest.approx(4e5)
    # supply = min(1e9 / 4 = 2.5e8 storage, 112 x 1e6 = 1.12e8 CPU) = 1.12e8 tokens/s: 1,120x
    assert d.headroom == pytest.approx(1120)


def test_storage_bound_step_by_hand():
    # A tiny model on fast GPUs: 2e9 tokens/s on one node, int32 ids -> 8e9 B/s needed; storage
    # gives 1e9 B/s = 2.5e8 tokens/s (headroom 0.125). A 4M-token batch then takes
    # 4,194,304 / 2.5e8 = 0.01678 s instead of 4,194,304 / 2e9 = 0.0021 s.
    d = IO.data_loading(2e9, 1, 4, 1e9, tokenize_on_the_fly=False, tokens_per_s_per_core=1e6, cpu_cores_per_node=112)
    assert d.headroom == pytest.approx(0.125)
    assert d.bound_by == "storage"
    assert d.data_bound_step_seconds(4_194_304, 1) == pytest.approx(4_194_304 / 2.5e8)


def test_cpu_bound_when_tokenising_with_few_cores():
    # 1e7 tokens/s per node to tokenise with 4 cores x 1e6 = 4e6 tokens/s; storage plentiful
    d = IO.data_loading(1e7, 1, 4.0, 40e9, tokenize_on_the_fly=True, tokens_per_s_per_core=1e6, cpu_cores_per_node=4)
    assert d.bound_by == "cpu"
    assert d.headroom == pytest.approx(0.4)
    assert d.cores_per_node == pytest.approx(10)


def test_parallel_fs_per_node_rate_is_llama3_provisioning():
    # Llama 3 Sec. 3.3.1: 2 TB/s sustained, 7 TB/s peak for 2,048 nodes -> 0.98 / 3.42 GB/s per node,
    # below the 40 GB/s node link, so the shared rate binds.
    fs = storage_spec("parallel_fs")
    assert fs.read_per_node() == pytest.approx(2e12 / 2048, rel=0.005)
    assert fs.write_per_node(optimistic=True) == pytest.approx(7e12 / 2048, rel=0.005)
    assert fs.node_read == 40e9


def test_local_nvme_is_node_local():
    nvme = storage_spec("local_nvme")
    assert nvme.shared_per_node is None
    assert nvme.read_per_node() == pytest.approx(8 * 7.0e9)  # 8 drives x 7.0 GB/s Gen4 x4


@pytest.mark.parametrize("kind", storage_kinds())
def test_every_storage_tier_names_its_sources(kind):
    spec = storage_spec(kind)
    assert spec.sources and all(len(s) > 20 for s in spec.sources)
    assert spec.node_read > 0 and spec.node_write > 0
    assert spec.confidence in ("low", "medium", "high")
