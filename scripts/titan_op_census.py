#!/usr/bin/env python3
"""Check core/time/titan_ops.py's eager op list against torchtitan's own code under fake tensors.

Runs one Llama TransformerBlock of torchtitan at a given commit (default 9dec370, the Dec-2024
H100 benchmark's tree: torchtitan/models/llama/model.py + torchtitan/models/norms.py, read from a
torchtitan git directory with ``git show``, nothing copied into this repository) forward and
backward under FakeTensorMode with gpuplan.profile.op_census's recorder, and prints the
memory-bound ops (name, bytes per token) and their totals beside titan_ops' hand count for the
same dimensions. norms.py imports Triton for its FusedRMSNorm (not used: llama3_8b.toml sets
norm_type = "rmsnorm"); a stand-in module lets the import succeed on a CPU-only torch.

Two caveats: the census classifier (gpuplan.profile.op_census.classify) counts
``view_as_complex`` / ``view_as_real`` as copies; on a GPU they are views (no kernel), so they
are listed apart and left out of the totals. It also counts a copy of an expanded tensor
(repeat_kv) as reading the expanded size; titan_ops counts the source once.

    python scripts/titan_op_census.py [--torchtitan-git /work/.mirror/pytorch+torchtitan/repo]
    python scripts/titan_op_census.py --inductor   # torch.compile's kernels instead (~30 s)

With ``--inductor`` the block is compiled as torchtitan's apply_compile does
(``torch.compile(block, fullgraph=True)``) on the CPU backend with real tensors, and the fused
kernels and ATen fallbacks of Inductor's generated forward and backward are listed (the check of
titan_ops.compiled_layer_classes' kernel list; a C++ compiler is needed).

Needs torch (the profile extra). A few seconds on one CPU core.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import types
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

GPU_VIEWS = ("view_as_complex", "view_as_real")
FILES = ("torchtitan/models/llama/model.py", "torchtitan/models/norms.py")
DIMS = {"dim": 256, "n_heads": 4, "n_kv_heads": 2, "multiple_of": 64}  # head_dim 64, SwiGLU 704
BATCH, SEQ = 2, 64


def _stand_ins(torch) -> None:
    """Modules norms.py imports at the top that a CPU-only torch lacks (Triton; torchtitan.utils)."""
    class _Anything(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            if name == "jit":
                return lambda fn=None, **kw: fn if fn is not None else (lambda f: f)
            if name in ("autotune", "heuristics"):
                return lambda *a, **kw: (lambda f: f)
            return lambda *a, **kw: None

    triton = _Anything("triton")
    triton.language = _Anything("triton.language")
    sys.modules.setdefault("triton", triton)
    sys.modules.setdefault("triton.language", triton.language)
    utils = types.ModuleType("torchtitan.utils")
    utils.device_module = torch.cuda
    sys.modules["torchtitan.utils"] = utils


def _checkout(git_dir: str, commit: str, into: Path) -> None:
    for rel in FILES:
        text = subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{rel}"], check=True,
                              capture_output=True, text=True).stdout
        path = into / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for pkg in ("torchtitan", "torchtitan/models", "torchtitan/models/llama"):
        (into / pkg / "__init__.py").write_text("")


def census(git_dir: str, commit: str):
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from gpuplan.profile.op_census import _Recorder

    titan = _load_titan(git_dir, commit)
    args = titan.ModelArgs(**DIMS, vocab_size=1000, max_seq_len=SEQ, norm_type="rmsnorm")
    with FakeTensorMode(allow_non_fake_inputs=True):
        old = torch.get_default_dtype()
        torch.set_default_dtype(torch.bfloat16)  # bf16 parameters (FSDP2's param_dtype)
        try:
            block = titan.TransformerBlock(0, args)
        finally:
            torch.set_default_dtype(old)
        freqs = titan.precompute_freqs_cis(args.dim // args.n_heads, SEQ * 2)[:SEQ]
        x = torch.randn(BATCH, SEQ, args.dim, dtype=torch.bfloat16, requires_grad=True)
        grad = torch.randn(BATCH, SEQ, args.dim, dtype=torch.bfloat16)
        recorder = _Recorder(torch)
        with recorder.mode:
            out = block(x, freqs)
            recorder.phase = "backward"
            out.backward(grad)
    hidden = block.feed_forward.w1.out_features
    return recorder.census, hidden


def inductor_kernels(git_dir: str, commit: str) -> list[dict]:
    """torch.compile(block, fullgraph=True) as torchtitan's apply_compile, on the CPU backend with
    real tensors: per generated graph (forward, backward) the fused kernels Inductor emits and the
    ATen fallbacks it calls (the RoPE's complex multiply), read from its generated code."""
    import re

    import torch
    from torch._inductor.utils import run_and_get_code

    titan = _load_titan(git_dir, commit)
    args = titan.ModelArgs(**DIMS, vocab_size=1000, max_seq_len=SEQ, norm_type="rmsnorm")
    torch.set_default_dtype(torch.bfloat16)
    try:
        block = titan.TransformerBlock(0, args)
    finally:
        torch.set_default_dtype(torch.float32)
    freqs = titan.precompute_freqs_cis(args.dim // args.n_heads, SEQ * 2)[:SEQ]
    x = torch.randn(BATCH, SEQ, args.dim, dtype=torch.bfloat16, requires_grad=True)
    compiled = torch.compile(block, fullgraph=True)
    _, codes = run_and_get_code(lambda: compiled(x, freqs).backward(torch.ones(BATCH, SEQ, args.dim,
                                                                                 dtype=torch.bfloat16)))
    graphs = []
    for code in codes:
        body = code[code.index("def call("):]
        graphs.append({"fused": re.findall(r"^\s+(cpp_fused_\w+|triton_\w+)\(", body, re.M),
                       "fallbacks": re.findall(r"torch\.ops\.aten\.(mul|clone)\.\w+\(", body)})
    return graphs


def _load_titan(git_dir: str, commit: str):
    """torchtitan's llama model module at ``commit`` (Triton stood in while norms.py imports)."""
    import torch
    import torch._dynamo  # noqa: F401
    import torch.distributed._tensor  # noqa: F401

    tmp = tempfile.mkdtemp()
    _checkout(git_dir, commit, Path(tmp))
    sys.path.insert(0, tmp)
    _stand_ins(torch)
    try:
        from torchtitan.models.llama import model as titan
    finally:
        for name in ("triton", "triton.language"):
            if type(sys.modules.get(name)).__name__ == "_Anything":
                del sys.modules[name]
    return titan


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torchtitan-git", default="/work/.mirror/pytorch+torchtitan/repo")
    parser.add_argument("--commit", default="9dec370")
    parser.add_argument("--inductor", action="store_true",
                        help="also compile the block with Inductor (CPU backend, ~30 s) and list its kernels")
    opts = parser.parse_args()
    if opts.inductor:
        for phase, graph in zip(("forward", "backward"), inductor_kernels(opts.torchtitan_git, opts.commit)):
            print(f"Inductor {phase}: {len(graph['fused'])} fused kernels, ATen fallbacks {graph['fallbacks']}")
            for name in graph["fused"]:
                print(f"  {name}")
        return 0
    from gpuplan.core.model.spec import AttentionSpec, MLPSpec, ModelSpec
    from gpuplan.core.time import titan_ops as T

    result, hidden = census(opts.torchtitan_git, opts.commit)
    tokens = BATCH * SEQ
    head_dim = DIMS["dim"] // DIMS["n_heads"]
    spec = ModelSpec("census", hidden_size=DIMS["dim"], num_layers=1, vocab_size=1000,
                     attention=AttentionSpec(DIMS["n_heads"], DIMS["n_kv_heads"], head_dim), mlp=MLPSpec(hidden))
    classes = T.eager_layer_classes(spec, "python")
    model = {"forward": (sum(c.forward_kernels for c in classes), sum(c.forward_bytes for c in classes)),
             "backward": (sum(c.backward_kernels for c in classes), sum(c.backward_bytes for c in classes))}
    for phase in ("forward", "backward"):
        by_name = defaultdict(lambda: [0, 0.0])
        for p, cls, name, kernels, nbytes, _flops, _shape, _module in result.ops:
            if p == phase and cls == "memory":
                by_name[name][0] += kernels
                by_name[name][1] += nbytes / tokens
        print(f"{phase}: memory-bound ops of one block, bytes per token")
        for name, (kernels, nbytes) in sorted(by_name.items(), key=lambda kv: -kv[1][1]):
            print(f"  {name:32s} {kernels:3d} kernels {nbytes:10.0f} B")
        total_k = sum(k for n, (k, _) in by_name.items() if n not in GPU_VIEWS)
        total_b = sum(b for n, (_, b) in by_name.items() if n not in GPU_VIEWS)
        print(f"  census without {', '.join(GPU_VIEWS)}: {total_k} kernels {total_b:.0f} B; titan_ops {model[phase][0]:.0f} kernels "
              f"{model[phase][1]:.0f} B ({model[phase][1] / total_b - 1:+.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
