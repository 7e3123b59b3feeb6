"""vLLM 0.19's per-graph CUDA-graph sample against PyTorch's caching-allocator rules (issue 38).

vLLM's profile (v1/worker/gpu_model_runner.py profile_cudagraph_memory, v0.19.0 lines 5862-5960)
captures the two largest sizes of each mode (cudagraph_dispatcher.get_capture_descs, lines
325-349: PIECEWISE first, then FULL, largest first: 512 then 496 tokens at 1,024 sequences) into
one temporary pool (5886-5890) on one stream (parallel_state.graph_capture), keeps every graph
until both modes are sampled (clear_all_graphs, 5938), and takes the second capture's
``torch.cuda.mem_get_info`` drop as the cost of every further graph. What the caching allocator
can add to that drop is checked here from its rules (torch 2.13's c10/core/AllocatorConfig.h
lines 17-25 and large_segment_size_ at 340, the constants earlier releases keep in
c10/cuda/CUDACachingAllocator.cpp; get_pool / get_free_block / should_split /
get_allocation_size there):
requests are rounded to 512 B; a request of at most 1 MiB (kSmallSize) is served only from the
small pool, whose segments are 2 MiB (kSmallBuffer); a larger one from the large pool, a new
segment being 20 MiB (kLargeBuffer) below 10 MiB (kMinLargeAlloc) and the request rounded to
2 MiB (kRoundLarge) above; get_free_block takes the smallest free block of the request's pool and
stream at least as large, and with max_split_size unset (vLLM 0.19 sets no
PYTORCH_CUDA_ALLOC_CONF; device_allocator/cumem.py only asserts expandable segments are off) any
larger free block qualifies and is split (should_split: remainder > 1 MiB in the large pool). So
a capture at 496 tokens finds every request served by a block its 512-token predecessor freed in
the same pool, unless a request changes pool class (crosses 1 MiB) between the two sizes."""

import math

import pytest

from gpuplan.core.serving import profile as P
from gpuplan.jobs.validation import serving_memory as V

MiB = 2**20
K_MIN_BLOCK = 512  # kMinBlockSize, c10/core/AllocatorConfig.h
K_SMALL_SIZE = MiB  # kSmallSize: largest request of the small pool
K_SMALL_BUFFER = 2 * MiB  # kSmallBuffer: a small-pool segment
K_LARGE_BUFFER = 20 * MiB  # kLargeBuffer: a new segment for a 1-10 MiB request
K_MIN_LARGE_ALLOC = 10 * MiB  # kMinLargeAlloc
K_ROUND_LARGE = 2 * MiB  # kRoundLarge


def rounded(size: int) -> int:
    """round_size: at least 512 B, a multiple of 512 B."""
    return max(K_MIN_BLOCK, math.ceil(size / K_MIN_BLOCK) * K_MIN_BLOCK)


def pool_class(size: int) -> str:
    """The pool (and new-segment size class) a request goes to: get_pool / get_allocation_size."""
    size = rounded(size)
    if size <= K_SMALL_SIZE:
        return "small"
    return "large, 20 MiB segment" if size < K_MIN_LARGE_ALLOC else "large, own segment"


def new_segment_bytes(size: int) -> int:
    """get_allocation_size: the segment cudaMalloc'd when no free block serves ``size``."""
    size = rounded(size)
    if size <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if size < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return math.ceil(size / K_ROUND_LARGE) * K_ROUND_LARGE


def layer_request_widths(spec, tp: int) -> dict[str, float]:
    """Elements per token of the batch-sized tensors one decoder layer's graph allocates, per TP
    rank: the hidden-size tensors (residual, norm output, o_proj and down_proj outputs), the fused
    QKV output, the attention output, gate_up and the activated product (MoE: the router logits;
    the routed experts' caches are views of the persistent workspace, profile.moe_workspace_bytes)."""
    a, h = spec.attention, spec.hidden_size
    widths = {"hidden": h, "attention out": a.num_heads * (a.v_head_dim or a.head_dim) / tp}
    if a.kv_lora_rank:
        widths["latent kv"] = a.kv_lora_rank + a.qk_rope_head_dim
    else:
        widths["qkv"] = (a.num_heads + 2 * a.num_kv_heads) * a.head_dim / tp
    inter = spec.mlp.intermediate_size if spec.moe is None else spec.moe.shared_intermediate_size
    if inter:
        widths["gate_up"], widths["product"] = 2 * inter / tp, inter / tp
    if spec.moe is not None:
        widths["router logits"] = spec.moe.num_experts
    return widths


@pytest.fixture(scope="module")
def logged_graph_rows():
    """(row id, spec, tp, activation bytes) of every log whose CUDA-graph estimate is scored, as
    the validation calls profile.graph_bytes for it (held out, fitted and excluded rows)."""
    rows, seen = [], {}
    original = P.graph_bytes

    def record(spec, seqs, tp, layers, act_bytes=2, *args, **kwargs):
        seen["call"] = (spec, tp, act_bytes)
        return original(spec, seqs, tp, layers, act_bytes, *args, **kwargs)

    P.graph_bytes = record
    try:
        for e in V.memory_logs():
            if "graphs_gib" in (e.get("logged") or {}):
                seen.clear()
                V.predicted_memory(e)
                rows.append((e["id"], *seen["call"]))
    finally:
        P.graph_bytes = original
    return rows


def test_the_allocator_rules_by_hand():
    assert rounded(1) == 512 and rounded(1025) == 1536
    assert pool_class(MiB) == "small" and new_segment_bytes(MiB) == 2 * MiB
    assert pool_class(MiB + 1) == "large, 20 MiB segment" and new_segment_bytes(MiB + 1) == 20 * MiB
    assert pool_class(10 * MiB) == "large, own segment" and new_segment_bytes(10 * MiB + 1) == 12 * MiB
    # a bf16 width of 1,025-1,057 elements would cross: 1,040 is 1,064,960 B at 512 tokens (large)
    # and 1,031,680 B at 496 (small pool, which the first capture's large blocks cannot serve)
    assert pool_class(512 * 1040 * 2) != "small" and pool_class(496 * 1040 * 2) == "small"


def test_llama_8b_tp2_requests_keep_their_class_from_512_to_496_tokens():
    """The excluded row (docs/inference.md, Allocator segments): at TP 2 Llama-3.1-8B's per-rank
    hidden / qkv / gate_up / product are 4 / 3 / 14 / 7 MiB at 512 tokens and 3.875 / 2.906 /
    13.56 / 6.78 MiB at 496, by hand (4096, 3072, 14336, 7168 bf16 elements a token): each keeps its
    pool, so no size alone opens the 20 MiB segment its 26 MiB piecewise sample shows."""
    widths = {"hidden": 4096, "qkv": (32 + 2 * 8) * 128 / 2, "gate_up": 2 * 14336 / 2, "product": 14336 / 2}
    at_512 = {k: 512 * w * 2 / MiB for k, w in widths.items()}
    at_496 = {k: 496 * w * 2 / MiB for k, w in widths.items()}
    assert at_512 == pytest.approx({"hidden": 4, "qkv": 3, "gate_up": 14, "product": 7})
    assert at_496 == pytest.approx({"hidden": 3.875, "qkv": 2.906, "gate_up": 13.5625, "product": 6.78125}, abs=1e-3)
    for k in widths:
        assert pool_class(int(at_512[k] * MiB)) == pool_class(int(at_496[k] * MiB))


def test_no_logged_shape_changes_pool_class_between_the_two_samples(logged_graph_rows):
    """Every scored log (36 vLLM 0.19 H100 rows with a logged graph size, as docs/accuracy.md scores them: 10
    fitted, 25 held out, 1 excluded): no batch-sized request of a layer changes pool
    between the 512- and 496-token captures, so the second capture is served from blocks the first
    freed and the allocator adds no segment by size: its per-graph sample (2-18 MiB, in 2 MiB
    steps) is the instantiated graphs' driver memory, which gpuplan prices per layer
    (profile.GRAPH_BYTES_PER_LAYER), and the TP rows' page swings are not the allocator's (their
    per-rank requests shrink with TP while their samples do not)."""
    assert len(logged_graph_rows) == 10 + 25 + 1 and "llmd019-llama-3.1-8b-tp2" in {r[0] for r in logged_graph_rows}
    crossings = []
    for row, spec, tp, act_bytes in logged_graph_rows:
        for name, width in layer_request_widths(spec, tp).items():
            first, second = int(512 * width * act_bytes), int(496 * width * act_bytes)
            small_then_large = (pool_class(first) == "small") != (pool_class(second) == "small")
            if small_then_large:
                crossings.append((row, name))
    assert crossings == []


def test_nearest_page_is_the_second_of_two_equal_graphs():
    """profile.per_graph_bytes takes the nearest whole 2 MiB page. That is what a sample gets when
    two graphs of x pages each are laid into fresh 2 MiB pages one after the other, the second
    capture paying ceil(2x) - ceil(x) pages (= round(x), halves rounding down), which the
    allocator rules above leave as the only memory the second capture adds. Checked on every layer
    count from 1 to 126 of a dense model."""
    from gpuplan.catalog import load_model

    spec = load_model("llama-3.1-8b")
    for layers in range(1, 127):
        x = layers * P.GRAPH_BYTES_PER_LAYER / P.GRAPH_SAMPLE_PAGE
        if abs(x - math.floor(x) - 0.5) < 1e-9:
            continue
        paged = (math.ceil(2 * x) - math.ceil(x)) * P.GRAPH_SAMPLE_PAGE
        assert P.per_graph_bytes(spec, layers) == max(paged, MiB), layers


def test_moe_routed_caches_in_the_first_capture_by_hand():
    """vLLM 0.19's modular MoE kernels take their caches from the WorkspaceManager
    (modular_kernel.py 1035-1066): the piecewise first capture holds only the hidden-size tensors of
    a MoE layer; MXFP4 experts on the Triton backend allocate their output [M, h] and
    intermediate_cache [M·k, I_e/tp padded to 64] in the call (gpt_oss_triton_kernels_moe.py 280,
    346). By hand, bf16, the first capture = 2 (warm-up + capture) x tokens x 2 B x elements + the
    capture stream's 32 MiB cuBLAS workspace: gpt-oss-20b tp 2 at 1,024 tokens, 3 x 2,880 +
    4 x 1,472 + 2,880 = 17,408 elements, 68 + 32 = 100 MiB (128 logged with its 6 MiB graph,
    106 modelled; 178 with the fused caches); Mixtral-8x7B tp 2 at 512, 3 x 4,096 = 12,288, 24 MiB
    (124 with the fused caches: + 2 x (3 x 7,168 + 4,096))."""
    from gpuplan.catalog import load_model
    from gpuplan.core.serving import releases as REL

    oss, mixtral, dense = load_model("gpt-oss-20b"), load_model("mixtral-8x7b"), load_model("llama-3.1-8b")
    assert P.first_capture_elements_per_token(oss, 2, "mxfp4") == 3 * 2880 + 4 * 1472 + 2880
    assert 2 * 1024 * 2 * P.first_capture_elements_per_token(oss, 2, "mxfp4") == 68 * MiB
    assert P.first_capture_elements_per_token(mixtral, 2, "workspace") == 3 * 4096
    assert P.first_capture_elements_per_token(mixtral, 2, "fused") == 3 * 4096 + 2 * (3 * 7168 + 4096)
    assert P.first_capture_elements_per_token(mixtral, 2, "fused") == P.activation_elements_per_token(mixtral, 2)
    for experts in ("fused", "workspace", "mxfp4"):
        assert P.first_capture_elements_per_token(dense, 1, experts) == P.activation_elements_per_token(dense, 1)
    rules_019, rules_010 = REL.vllm_rules((0, 19, 0), moe=True), REL.vllm_rules((0, 10, 1), moe=True)
    assert P.vllm_moe_experts(rules_019, "all") == "workspace" and P.vllm_moe_experts(rules_010, "all") == "fused"
    assert P.vllm_moe_experts(rules_019, "experts") == "mxfp4"
    full = P.graph_bytes(oss, 1024, 2, 24, blas_workspace=32 * MiB, moe_experts="mxfp4")
    assert full == pytest.approx((100 + 6) * MiB + 82 * 6 * MiB + 82 * 6 * MiB)
