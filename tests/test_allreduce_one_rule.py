"""vLLM 0.19's TP all-reduce: the step timing (kernels.custom_allreduce_limit) and the memory report
(releases.graph_allreduce_path) read one rule, releases.own_allreduce_max_bytes. Exact sizes."""

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.serving import kernels as KR
from gpuplan.catalog import load_model
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import setup as SU
from gpuplan.core.serving.releases import (allreduce_dtype, graph_allreduce_path, own_allreduce_max_bytes,
                                           parse_release, reads_019_allreduce)
from gpuplan.core.serving.weights import FORMATS, param_groups

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


# --- one predicate, one dtype rule (review w8 r1 item 1) ---------------------------------------------------------


def _own_by_path(hidden, tp, tokens, dtype_bytes, bf16, fused=True):
    return graph_allreduce_path(hidden, tp, tokens, dtype_bytes, bf16, fused) != "nccl"


@pytest.mark.parametrize("tp", [2, 4, 8])
@pytest.mark.parametrize("fmt", ["bf16", "fp16", "fp32", "fp8"])
@pytest.mark.parametrize("pp", [1, 2])
def test_timing_follows_the_paths_for_every_format_and_pp(tp, fmt, pp):
    # the dtype the memory report derives (releases.allreduce_dtype) goes to the timing's limit; pp > 1 drops the fusion
    fmt_obj = FORMATS[fmt]
    dtype_bytes, bf16 = allreduce_dtype(fmt_obj.compute_dtype, fmt_obj.name)
    limit = KR.custom_allreduce_limit(parse_release("vllm==0.19"), tp, load_accelerator("h100-sxm"), hidden=8192,
                                      dtype_bytes=dtype_bytes, bf16=bf16, pp=pp)
    for tokens in [1, 16, 32, 33, 128, 129, 512, 1024, 2048, 4095, 4096, 4097, 8192]:
        own = _own_by_path(8192, tp, tokens, dtype_bytes, bf16, pp == 1)
        assert own == (tokens * 8192 * dtype_bytes <= limit), (tp, fmt, pp, tokens)


def test_fp16_limits_by_hand():
    # fp16: no symmetric memory (bf16 only). tp 8: the fusion's 0.5 MiB (32 tokens x 8,192 x 2 B, inclusive) beats the
    # custom kernel's min(8, 0.25) MiB; tp 4: custom 8 MiB - 16 B beats the fusion's 2 MiB; tp 2: the fusion's 64 MiB
    h100, release = load_accelerator("h100-sxm"), parse_release("vllm==0.19")
    assert allreduce_dtype("fp16", "fp16") == (2, False) and allreduce_dtype("bf16", "bf16") == (2, True)
    assert allreduce_dtype("fp32", "fp32") == (4, False)
    fp16 = dict(hidden=8192, dtype_bytes=2, bf16=False)
    assert KR.custom_allreduce_limit(release, 8, h100, **fp16) == MiB // 2
    assert KR.custom_allreduce_limit(release, 4, h100, **fp16) == 8 * MiB - 16
    assert KR.custom_allreduce_limit(release, 2, h100, **fp16) == 64 * MiB
    # pp 2 (the fusion off): tp 2 fp16 falls to the custom kernel's 8 MiB - 16 B; bf16 keeps symmetric
    # memory's 64 MiB - 16 B
    assert KR.custom_allreduce_limit(release, 2, h100, **fp16, pp=2) == 8 * MiB - 16
    assert KR.custom_allreduce_limit(release, 2, h100, hidden=8192, pp=2) == 64 * MiB - 16


@pytest.mark.parametrize("release, gpu, tp, p2p", [("vllm==0.19", "h100-pcie", 2, True),  # PCIe-only: NVLink tables
                                                   ("vllm==0.19", "h100-sxm", 8, False),  # no P2P: NCCL
                                                   ("vllm==0.29", "h100-sxm", 8, True),  # the default: not read
                                                   ("vllm==0.20", "h100-sxm", 4, True),
                                                   ("vllm==0.18", "h100-sxm", 2, True)])
def test_one_predicate_for_timing_and_memory(release, gpu, tp, p2p):
    rel, part = parse_release(release), load_accelerator(gpu)
    assert not reads_019_allreduce(rel, part, p2p)
    # the timing keeps the release's own rule, as 0.18 does (8 MiB; 0 without P2P)
    limit = KR.custom_allreduce_limit(rel, tp, part, p2p=p2p, hidden=8192)
    assert limit == KR.custom_allreduce_limit(parse_release("vllm==0.18"), tp, part, p2p=p2p, hidden=8192)
    assert limit == (8 * MiB if p2p else 0.0)
    assert reads_019_allreduce(parse_release("vllm==0.19.1"), load_accelerator("h200-sxm"), True)


def test_vllm_029_prefill_time_is_018s():
    # Llama-3.1-70B, 8 x H100, 3,840-token prompt: 3,840 x 8,192 x 2 B = 60 MiB messages go through NCCL on 0.29
    # as on 0.18 (8 MiB own limit); 0.19 takes them in its own kernels (symmetric memory, below 64 MiB)
    spec, h100 = load_model("llama-3.1-70b"), load_accelerator("h100-sxm")
    seconds = {}
    for release in ["vllm==0.18", "vllm==0.19", "vllm==0.29"]:
        setup = SU.ServingSetup(FORMATS["bf16"], 2, runtime=SU.Runtime(version=parse_release(release).version))
        seconds[release] = R.prefill_step(spec, param_groups(spec), setup, tp=8, pp=1, prompt=3840,
                                          **R.gpu_keywords(h100, setup)).comm_s
    assert seconds["vllm==0.29"] == pytest.approx(seconds["vllm==0.18"], rel=1e-12)
    # 50.2 vs 60.3 ms of all-reduces (at 4f73e64)
    assert seconds["vllm==0.19"] < 0.9 * seconds["vllm==0.18"]
