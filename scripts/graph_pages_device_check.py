#!/usr/bin/env python3
"""Device check for issue 38's TP rows (prepared, not run: no GPU in the session that wrote it; ~1 min, one H100).

vLLM 0.19 takes the free-memory drop of each mode's second graph capture (496 tokens) as the cost of every
further graph (profile_cudagraph_memory, gpu_model_runner.py v0.19.0 5893-5930). Reading the code leaves two
causes for the TP rows' samples sitting a page off their TP 1 siblings (docs/inference.md, 'Tensor
parallelism, read from the code'); this script measures both with PyTorch alone (no vLLM needed):

1. ``pages``: whether instantiated graphs take their device memory from one driver heap in 2 MiB pages, so
   that identical graphs of x pages each take ceil(k x) - ceil((k - 1) x) pages, k = 1, 2, ...: the sample
   then depends on where the heap stands when the profile starts, which the communicators' set-up at TP > 1
   changes, not only on the graph. Captures GRAPHS identical graphs of N in-place kernel nodes
   (x.add_(1): no allocation) for each N in NODE_COUNTS and prints each graph's drop in MiB.
2. ``lazy``: whether the first GEMM at M = 496 loads a cuBLAS kernel M = 8,192 and 512 did not (CUDA
   loads a module on first launch: lazy loading, the Linux default from CUDA 12.2; PyTorch sets
   CUDA_MODULE_LOADING=LAZY, pytorch PR 86509), for each rank's four GEMMs (rank_gemms) of Qwen2.5-7B
   and Llama-3.1-8B at TP 1, 2 and 4, each configuration in a fresh process (loaded modules stay loaded
   in a process). Prints the drop outside PyTorch's allocator (free-memory drop less reserved growth).

    python scripts/graph_pages_device_check.py [pages|lazy]

Reads and writes nothing; without a CUDA device it says so and exits 2.
"""

import subprocess
import sys

MiB = 2**20
GRAPHS = 12
NODE_COUNTS = (200, 400, 800, 1600)
TOKENS = (8192, 512, 496)
"""The profile run's max_num_batched_tokens, then the two sampled sizes, in vLLM 0.19's order."""
MODELS = {"qwen2.5-7b": (3584, 28, 4, 128, 18944), "llama-3.1-8b": (4096, 32, 8, 128, 14336)}
"""hidden, query heads, KV heads, head dim, MLP intermediate (the checkpoints' config.json)."""


def rank_gemms(model: str, tp: int) -> list[tuple[str, int, int]]:
    """(name, N, K) of one TP rank's four linear layers (vLLM's QKVParallelLinear, RowParallelLinear o_proj,
    MergedColumnParallelLinear gate_up, RowParallelLinear down): output and input widths per rank."""
    hidden, heads, kv_heads, head_dim, inter = MODELS[model]
    return [("qkv", (heads + 2 * kv_heads) * head_dim // tp, hidden), ("o_proj", hidden, heads * head_dim // tp),
            ("gate_up", 2 * inter // tp, hidden), ("down", hidden, inter // tp)]


def _drop_outside_torch(torch, run) -> float:
    """MiB of device memory ``run`` takes outside PyTorch's caching allocator."""
    torch.cuda.synchronize()
    free, reserved = torch.cuda.mem_get_info()[0], torch.cuda.memory_reserved()
    run()
    torch.cuda.synchronize()
    return ((free - torch.cuda.mem_get_info()[0]) - (torch.cuda.memory_reserved() - reserved)) / MiB


def pages(torch) -> None:
    x = torch.zeros(1, device="cuda")
    x.add_(1)
    pool, kept = torch.cuda.graph_pool_handle(), []
    for nodes in NODE_COUNTS:
        drops = []
        for _ in range(GRAPHS):
            graph = torch.cuda.CUDAGraph()

            def capture():
                with torch.cuda.graph(graph, pool=pool):
                    for _ in range(nodes):
                        x.add_(1)

            drops.append(_drop_outside_torch(torch, capture))
            kept.append(graph)
        print(f"pages: {nodes} nodes a graph, drop per graph MiB: {' '.join(f'{d:g}' for d in drops)}")


def lazy_one(torch, model: str, tp: int) -> None:
    warm = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    warm @ warm  # the stream's cuBLAS workspace, before anything is measured
    for name, n, k in rank_gemms(model, tp):
        a = torch.randn(max(TOKENS), k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        drops = [_drop_outside_torch(torch, lambda m=m: torch.nn.functional.linear(a[:m], w)) for m in TOKENS]
        print(f"lazy: {model} tp {tp} {name} N {n} K {k}: MiB outside torch at M = "
              + ", ".join(f"{m}: {d:g}" for m, d in zip(TOKENS, drops)))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    what = argv[0] if argv else "both"
    if what not in ("pages", "lazy", "both", "lazy-one"):
        print("what: got %r; need pages, lazy or both" % what)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("device: this check needs a CUDA GPU (torch.cuda.is_available() is False)")
        return 2
    if what == "lazy-one":
        lazy_one(torch, argv[1], int(argv[2]))
        return 0
    if what in ("pages", "both"):
        pages(torch)
    if what in ("lazy", "both"):
        for model in MODELS:
            for tp in (1, 2, 4):
                subprocess.run([sys.executable, __file__, "lazy-one", model, str(tp)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
