"""GPU step-time probes: the kernel-level figures issue 15's open items need, measured on one GPU
and set beside what the step model (core/time/step.py) assumes for the same work.

    python scripts/gpu_step_probes.py                       # on a CUDA machine: ~1 min on an H100/H200
    python scripts/gpu_step_probes.py --dry-run --out /tmp/probes   # CPU, tiny shapes, < 30 s

The open items of docs/step.md ("Not yet modelled") that one GPU can settle:

* ``gemm``: one large GEMM in BF16 and FP8 (tensorwise, ``torch._scaled_mm``): the achieved
  fraction of peak against the MAMF fraction the model uses (MAMF_FRACTION / MAMF_FP8_FRACTION).
* ``experts``: a MoE layer's expert GEMMs (forward fc1 gate+up and fc2, one GEMM per local
  expert, as Transformer Engine's GroupedLinear issues them) at the shapes of the published rows
  the model misses most (Qwen3-30B-A3B on 16 H100 at ep 16: 8 experts x 4,096 tokens; on 8 B200 at
  ep 8, micro-batch 1: 16 x 2,048; Qwen3-235B-A22B at ep 32: 4 x 8,192), BF16 and FP8 with the
  activations quantised per call (amax, scale, cast: tensorwise current scaling). The question:
  are small-expert FP8 GEMMs on Hopper slower than BF16 ones, as the published FP8-CS rows imply?
* ``launch``: host microseconds per eager op (a 1-element add, and a small linear under autograd):
  the per-op host cost a host-launch model for layers without CUDA graphs would need.
* ``kernel``: GPU microseconds per tiny kernel replayed from a CUDA graph (no host in the way):
  the fixed cost per kernel that per-expert quantisation and GEMM launches would add on the GPU.
* ``attention``: causal SDPA forward and backward at head dim 128 and 64 (same width): the head-dim
  question GPT-OSS 120B raises (docs/step.md, "Attention efficiency by head dimension").
* ``elementwise``: PyTorch's bf16 add at 4M, 16M and 64M elements and RMSNorm's broadcast weight
  multiply, against core.time.memory_kernels (7.84 us + bytes / (0.89 x HBM), from TileOPs' H200
  figures): the eager step model's two memory-bound constants on this part.
* ``sdpa``: causal SDPA forward + backward at head dim 128 over 512 ... 8,192 tokens per sequence
  (same tokens), against core.time.attention's cuDNN table: its shape over the length.
* ``host``: one Hugging Face Llama decoder layer's forward at a tiny width (the host issues it),
  against core.time.host's carry-over of the op profile's CPU seconds.

Each probe runs 3 warm-up and 10 timed repetitions (CUDA events) and records the median. Nothing
is fitted here: the output ($OUT/step-probes.json and .md, else ./gpu-step-probes/) is the
measurement; a session commits it to docs/step.md and the reference data. ``--dry-run``
(automatic without CUDA) runs the same code on the CPU with tiny shapes to prove the script, and
its "measured" column is CPU time, not a GPU figure. Units: seconds unless a column says otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpuplan.catalog import load_accelerator
from gpuplan.core.time import step as S
from gpuplan.errors import InputError

FP8_MAX = 448.0  # largest finite float8_e4m3fn value (OCP FP8 spec, E4M3)
# forward activation cast of tensorwise current scaling per element: amax read (2 B) + read (2 B) +
# fp8 write (1 B), the forward third of core/time/step.py's FP8_CAST_BYTES_PER_ELEMENT accounting
FP8_FORWARD_CAST_BYTES = 5.0


@dataclass(frozen=True)
class ExpertShape:
    name: str
    experts: int
    tokens: int
    """Tokens each local expert receives per micro-batch (tokens x ep x top-k / experts)."""
    hidden: int
    intermediate: int


EXPERT_SHAPES = (
    ExpertShape("qwen3-30b-a3b, 16 H100, ep 16, mbs 1", 8, 4096, 2048, 768),
    ExpertShape("qwen3-30b-a3b, 8 B200, ep 8, mbs 1", 16, 2048, 2048, 768),
    ExpertShape("qwen3-235b-a22b, ep 32, mbs 1", 4, 8192, 4096, 1536),
)
TINY_EXPERTS = (ExpertShape("tiny", 2, 64, 64, 32),)


@dataclass
class ProbeResult:
    probe: str
    case: str
    dtype: str
    measured_s: float | None
    predicted_s: float | None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.measured_s is None or not self.predicted_s:
            return None
        return self.measured_s / self.predicted_s


def gemm_fraction(gpu, smallest_dim: float, dtype: str) -> float:
    """The step model's GEMM efficiency (core.time.step.gemm_efficiency: MAMF x d / (d + d_half), the FP8
    MAMF fraction for FP8)."""
    return S.gemm_efficiency(gpu, smallest_dim, S.StepSettings().gemm_d_half, low_precision=dtype == "fp8")


def predicted_gemm_s(gpu, m: int, k: int, n: int, dtype: str) -> float:
    """Seconds the step model gives one m x k x n GEMM."""
    return 2.0 * m * k * n / (gpu.peak(dtype) * gemm_fraction(gpu, min(m, k, n), dtype))


def predicted_experts_s(gpu, shape: ExpertShape, dtype: str) -> float:
    """Forward expert GEMMs of one layer (gated fc1 h -> 2i, fc2 i -> h, per local expert), and for
    FP8 the activation casts through HBM (core.time.step: hbm_efficiency)."""
    t, h, i = shape.tokens, shape.hidden, shape.intermediate
    flops = shape.experts * (2.0 * t * h * 2 * i + 2.0 * t * i * h)
    seconds = flops / (gpu.peak(dtype) * gemm_fraction(gpu, min(t, h, i), dtype))
    if dtype == "fp8":
        cast_bytes = FP8_FORWARD_CAST_BYTES * shape.experts * t * (h + i)
        seconds += cast_bytes / (gpu.memory_bandwidth * S.StepSettings().hbm_efficiency)
    return seconds


def predicted_attention_s(gpu, heads: int, dim: int, seq: int, backward: bool) -> float:
    """Causal flash attention (core/time/attention_core.py): executed score + context FLOPs
    4 x s x (s+1)/2 x d x heads at the part's attention efficiency (SDPA runs FlashAttention-2
    kernels: the un-tuned figure), backward 2.5x the forward."""
    flops = 4.0 * seq * (seq + 1) / 2 * dim * heads
    fwd = flops / (gpu.peak("bf16") * S.attention_efficiency(gpu))
    return fwd * (1 + 2.5) if backward else fwd


def _timer(torch, device: str):
    """fn -> median seconds of 10 timed calls after 3 warm-up calls (CUDA events on a GPU)."""
    def run(fn, reps: int = 10) -> float:
        for _ in range(3):
            fn()
        times = []
        for _ in range(reps):
            if device == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / 1e3)
            else:
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
        return statistics.median(times)
    return run


def _quantise(torch, x):
    """Tensorwise current scaling: (fp8 tensor, dequantisation scale)."""
    amax = x.abs().amax().float().clamp(min=1e-12)
    scale = FP8_MAX / amax
    return (x.float() * scale).to(torch.float8_e4m3fn), (1.0 / scale)


def _fp8_matmul(torch, xq, x_inv, wq, w_inv):
    return torch._scaled_mm(xq, wq.t(), scale_a=x_inv, scale_b=w_inv, out_dtype=torch.bfloat16)


def gemm_probes(torch, device, gpu, timer, size: int) -> list[ProbeResult]:
    a = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    b = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    out = [ProbeResult("gemm", f"{size}^3", "bf16", timer(lambda: a @ b.t()), predicted_gemm_s(gpu, size, size, size, "bf16"))]
    aq, a_inv = _quantise(torch, a)
    bq, b_inv = _quantise(torch, b)
    out.append(ProbeResult("gemm", f"{size}^3", "fp8", timer(lambda: _fp8_matmul(torch, aq, a_inv, bq, b_inv)),
                           predicted_gemm_s(gpu, size, size, size, "fp8"), "operands quantised once, outside the timing"))
    return out


def expert_probes(torch, device, gpu, timer, shapes) -> list[ProbeResult]:
    out = []
    for shape in shapes:
        t, h, i, e = shape.tokens, shape.hidden, shape.intermediate, shape.experts
        xs = [torch.randn(t, h, device=device, dtype=torch.bfloat16) for _ in range(e)]
        w1 = [torch.randn(2 * i, h, device=device, dtype=torch.bfloat16) * 0.02 for _ in range(e)]
        w2 = [torch.randn(h, i, device=device, dtype=torch.bfloat16) * 0.02 for _ in range(e)]

        def bf16(xs=xs, w1=w1, w2=w2, i=i):
            for x, a, b in zip(xs, w1, w2):
                y = x @ a.t()
                (y[:, :i] * y[:, i:]) @ b.t()
        w1q, w2q = [_quantise(torch, w) for w in w1], [_quantise(torch, w) for w in w2]

        def fp8(xs=xs, w1q=w1q, w2q=w2q, i=i):
            for x, (aq, a_inv), (bq, b_inv) in zip(xs, w1q, w2q):
                y = _fp8_matmul(torch, *_quantise(torch, x), aq, a_inv)
                _fp8_matmul(torch, *_quantise(torch, y[:, :i] * y[:, i:]), bq, b_inv)
        note = "forward, one GEMM per expert in a loop; FP8 activations quantised per call, weights once"
        out.append(ProbeResult("experts", shape.name, "bf16", timer(bf16), predicted_experts_s(gpu, shape, "bf16"), note))
        out.append(ProbeResult("experts", shape.name, "fp8", timer(fp8), predicted_experts_s(gpu, shape, "fp8"), note))
    return out


def launch_probes(torch, device, count: int) -> list[ProbeResult]:
    """Host seconds per eager op: the loop's CPU time before the final synchronisation / ops."""
    x = torch.ones(1, device=device)
    lin = torch.nn.Linear(64, 64, device=device)
    small = torch.randn(16, 64, device=device, requires_grad=True)
    out = []
    for case, op in (("add (1 element)", lambda: x.add_(1.0)), ("linear 16x64 under autograd", lambda: lin(small))):
        for _ in range(50):
            op()
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(count):
            op()
        host = (time.perf_counter() - t0) / count
        if device == "cuda":
            torch.cuda.synchronize()
        out.append(ProbeResult("launch", case, "fp32", host, None,
                               "host seconds per op; the step model has no host term (docs/step.md)"))
    return out


def kernel_probe(torch, device: str, count: int) -> list[ProbeResult]:
    """GPU seconds per tiny kernel with no host in the way: ``count`` 1-element adds captured in
    one CUDA graph and replayed (the fixed cost a per-expert, per-quantisation kernel count would
    be charged at; the step model has none)."""
    note = "GPU seconds per kernel, CUDA-graph replay; no step-model term"
    if device != "cuda":
        return [ProbeResult("kernel", f"{count} graphed 1-element adds", "fp32", None, None,
                            "not measured: CUDA graphs need a GPU")]
    x = torch.ones(1, device=device)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            x.add_(1.0)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(count):
            x.add_(1.0)
    seconds = _timer(torch, device)(graph.replay) / count
    return [ProbeResult("kernel", f"{count} graphed 1-element adds", "fp32", seconds, None, note)]


def attention_probes(torch, device, gpu, timer, seq: int, width: int) -> list[ProbeResult]:
    import torch.nn.functional as F

    out = []
    for dim in (128, 64):
        heads = width // dim
        q, k, v = (torch.randn(1, heads, seq, dim, device=device, dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        grad = torch.randn(1, heads, seq, dim, device=device, dtype=torch.bfloat16)
        case = f"s {seq}, {heads} heads x {dim}"
        out.append(ProbeResult("attention", case + ", forward", "bf16",
                               timer(lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
                               predicted_attention_s(gpu, heads, dim, seq, backward=False)))
        out.append(ProbeResult("attention", case + ", forward + backward", "bf16",
                               timer(lambda q=q, k=k, v=v, g=grad:
                                     F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)),
                               predicted_attention_s(gpu, heads, dim, seq, backward=True)))
    return out


def elementwise_probes(torch, device, gpu, timer, dry: bool) -> list[ProbeResult]:
    """PyTorch's element-wise kernels (bf16 add of two tensors, and a row-vector broadcast multiply
    as RMSNorm's weight runs) at three sizes, against core.time.memory_kernels (7.84 us + bytes /
    (0.89 x HBM)): settles the two constants on this part."""
    from gpuplan.core.time.memory_kernels import memory_bound_seconds

    out = []
    for n in ((2**12, 2**14, 2**16) if dry else (2**22, 2**24, 2**26)):
        x, y = (torch.randn(n, device=device, dtype=torch.bfloat16) for _ in range(2))
        pred = memory_bound_seconds(3 * 2 * n, 1, gpu.memory_bandwidth)
        out.append(ProbeResult("elementwise", f"add, {n:,} bf16 elements", "bf16", timer(lambda x=x, y=y: x + y), pred))
    rows = 4096 if not dry else 64
    x = torch.randn(rows, (2**24 if not dry else 2**14) // rows, device=device, dtype=torch.bfloat16)
    w = torch.randn(x.shape[1], device=device, dtype=torch.bfloat16)
    pred = memory_bound_seconds(2 * 2 * x.numel() + 2 * w.numel(), 1, gpu.memory_bandwidth)
    out.append(ProbeResult("elementwise", f"weight x hidden (broadcast), {x.numel():,} elements", "bf16",
                           timer(lambda: w * x), pred))
    return out


def sdpa_length_probes(torch, device, gpu, timer, dry: bool) -> list[ProbeResult]:
    """Causal SDPA forward + backward at head dim 128 over sequence lengths (same tokens), against
    core.time.attention's cuDNN table: settles its shape over the length on this part."""
    import torch.nn.functional as F

    from gpuplan.adapters.resolve import resolve_model
    from gpuplan.core.time.attention import sdpa_seconds_per_token

    spec = resolve_model("llama-3.1-8b")  # 32 heads x 128
    out = []
    for seq in ((32, 64) if dry else (512, 1024, 2048, 8192)):
        batch = max(1, (8192 if not dry else 64) // seq)
        heads = 32 if not dry else 4
        q, k, v = (torch.randn(batch, heads, seq, 128, device=device, dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        g = torch.randn(batch, heads, seq, 128, device=device, dtype=torch.bfloat16)
        f, b = sdpa_seconds_per_token(spec, seq, gpu=gpu, peak=gpu.peak("bf16"), fallback_efficiency=0.3)
        pred = batch * seq * (f + b) * heads / spec.attention.num_heads
        out.append(ProbeResult("sdpa", f"s {seq} x {batch}, {heads} heads x 128, forward + backward", "bf16",
                               timer(lambda q=q, k=k, v=v, g=g: F.scaled_dot_product_attention(
                                   q, k, v, is_causal=True).backward(g)), pred))
    return out


def hf_layer_host_probe(torch, device) -> list[ProbeResult]:
    """Host seconds of one Hugging Face Llama decoder layer's forward (a tiny width: the kernels
    are short, the host issues them): what core.time.host predicts from the op profile."""
    import time as _time

    import transformers

    from gpuplan.catalog.op_profiles import eager_ops_for

    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                   num_key_value_heads=2, num_hidden_layers=2, vocab_size=256)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa",
                                                          dtype=torch.bfloat16).to(device)
    ids = torch.randint(0, 256, (1, 8), device=device)
    layer = model.model.layers[0]
    hidden = model.model.embed_tokens(ids)
    pos = model.model.rotary_emb(hidden, torch.arange(8, device=device)[None])
    for _ in range(20):
        layer(hidden, position_embeddings=pos)
    t0 = _time.perf_counter()
    for _ in range(200):
        layer(hidden, position_embeddings=pos)
    host = (_time.perf_counter() - t0) / 200
    from gpuplan.core.time.host import cpu_seconds_per_op, reference_scale

    ops = eager_ops_for("llama", "bf16", "full", "flash")
    features = {"1": 1.0}
    kernels = ops.cell_total("layer", "forward", "kernels", features)
    dispatched = ops.cell_total("layer", "forward", "ops", features)
    pred = reference_scale().seconds(dispatched * cpu_seconds_per_op("forward", False), kernels)
    return [ProbeResult("host", "Llama decoder layer forward (transformers, tiny width)", "bf16", host, pred,
                        "host seconds; gpuplan: dispatched ops x CPU cost per op, carried by the two launch probes")]


def _us(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e6:,.4g} µs"


def markdown(results: list[ProbeResult], header: str) -> str:
    lines = [f"# GPU step-time probes: {header}", "", "Generated by scripts/gpu_step_probes.py (docs/step.md).", "",
             "| probe | case | dtype | measured | gpuplan | measured / gpuplan | note |", "|---|---|---|---|---|---|---|"]
    for r in results:
        ratio = "n/a" if r.ratio is None else f"{r.ratio:.3g}"
        lines.append(f"| {r.probe} | {r.case} | {r.dtype} | {_us(r.measured_s)} | {_us(r.predicted_s)} | {ratio} | {r.note} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny shapes (automatic without CUDA)")
    p.add_argument("--device", choices=("auto", "cuda"), default="auto")
    p.add_argument("--gpu", default=None, help="catalog GPU for the predictions (default: detected; dry run h100-sxm)")
    p.add_argument("--out", default=None, help="output folder (default $OUT, else ./gpu-step-probes)")
    args = p.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("gpu_step_probes: needs torch (pip install torch)", file=sys.stderr)
        return 2
    cuda = torch.cuda.is_available()
    if args.device == "cuda" and not cuda:
        print(f"gpu_step_probes: --device cuda, but torch {torch.__version__} sees no CUDA GPU", file=sys.stderr)
        return 2
    dry = args.dry_run or not cuda
    device = "cpu" if dry else "cuda"
    gpu_id = args.gpu
    if gpu_id is None and not dry:
        from gpuplan.profile.device_match import catalog_gpu_for

        props = torch.cuda.get_device_properties(0)
        gpu_id = catalog_gpu_for(props.name, props.total_memory)
    try:
        gpu = load_accelerator(gpu_id or "h100-sxm")
    except InputError as exc:  # an unknown --gpu: one line, status 2
        print(f"gpu_step_probes: --gpu {gpu_id!r}: {exc}", file=sys.stderr)
        return 2
    timer = _timer(torch, device)
    results = (gemm_probes(torch, device, gpu, timer, 64 if dry else 8192)
               + expert_probes(torch, device, gpu, timer, TINY_EXPERTS if dry else EXPERT_SHAPES)
               + launch_probes(torch, device, 200 if dry else 5000)
               + kernel_probe(torch, device, 1000)
               + attention_probes(torch, device, gpu, timer, 64 if dry else 4096, 256 if dry else 4096)
               + elementwise_probes(torch, device, gpu, timer, dry)
               + sdpa_length_probes(torch, device, gpu, timer, dry)
               + hf_layer_host_probe(torch, device))
    name = "CPU dry run (measured = CPU seconds, not a GPU figure)" if dry else torch.cuda.get_device_name(0)
    header = f"{name}; predictions for {gpu.id}; torch {torch.__version__}"
    out = Path(args.out or os.environ.get("OUT") or "gpu-step-probes")
    out.mkdir(parents=True, exist_ok=True)
    payload = {"device": name, "catalog_gpu": gpu.id, "dry_run": dry, "torch": torch.__version__,
               "results": [{**asdict(r), "ratio": r.ratio} for r in results]}
    for path, text in ((out / "step-probes.json", json.dumps(payload, indent=1)), (out / "step-probes.md", markdown(results, header))):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    print(markdown(results, header))
    return 0


if __name__ == "__main__":
    sys.exit(main())
