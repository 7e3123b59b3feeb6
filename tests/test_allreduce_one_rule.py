"""vLLM 0.19's TP all-reduce: the step timing (kernels.custom_allreduce_limit) and the memory report
(releases.graph_allreduce_path) read one rule, releases.own_allreduce_max_bytes. Exact sizes."""

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving.releases import graph_allreduce_path, own_allreduce_max_bytes, parse_release

MiB = 2**20


@pytest.mark.parametrize("tp, expected", [(2, 64 * MiB), (4, 32 * MiB - 16), (8, 64 * MiB - 16)])
def test_limits_by_hand(tp, expected):
    # the largest of: FlashInfer fusion (64 / 2 / 0.5 MiB: up to 4,096 / 128 / 32 tokens of 8,192, inclusive),
    # custom min(8 MiB, 64 / 32 / 0.25 MiB) and symmetric memory (64 / 32 / 64 MiB), both strict '<'
    # (one 16-byte step less): tp 2 the fusion's 64 MiB, tp 4 and 8 symmetric memory
    assert own_allreduce_max_bytes(8192, tp) == expected


@pytest.mark.parametrize("tp", [2, 4, 8])
@pytest.mark.parametrize("hidden", [4096, 5120, 8192])
def test_timing_follows_the_memory_reports_paths(tp, hidden):
    h100, release = load_accelerator("h100-sxm"), parse_release("vllm==0.19")
    limit = KR.custom_allreduce_limit(release, tp, h100, hidden=hidden)
    for tokens in [1, 64, 512, 1024, 2048, 4096, 4095, 4097, 8191, 8192, 8193, 16384]:
        own = graph_allreduce_path(hidden, tp, tokens) != "nccl"
        assert own == (tokens * hidden * 2 <= limit), (tp, hidden, tokens)


@pytest.mark.parametrize("release, gpu", [("vllm==0.18", "h100-sxm"), ("vllm==0.19", "a100-sxm4-80gb"),
                                          ("sglang==0.5.6", "h100-sxm")])
def test_other_releases_and_parts_keep_8_mib(release, gpu):
    limit = KR.custom_allreduce_limit(parse_release(release), 8, load_accelerator(gpu), hidden=8192)
    assert limit == 8 * MiB


def test_a_given_workspace_wins():
    limit = KR.custom_allreduce_limit(parse_release("vllm==0.19"), 8, load_accelerator("h100-sxm"), 4 * MiB,
                                      hidden=8192)
    assert limit == 4 * MiB
