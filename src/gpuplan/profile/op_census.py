"""What a training step executes, op by op: the census the step-time model is checked against.

A Hugging Face model (built from its config, no weights) runs one training step on the CPU
inside ``FakeTensorMode`` (shapes and dtypes, no storage), with a ``TorchDispatchMode`` under it
that records every ATen op the step dispatches: its class (GEMM, attention, memory-bound
elementwise or copy, view, optimizer, collective), the bytes its kernel reads and writes, the
FLOPs of a matmul, and the phase (forward, backward, optimizer step). Running the same step at two
depths separates what one decoder layer executes from what the rest of the model (embedding,
final norm, LM head, loss) executes: per layer = census(2 layers) - census(1 layer).

The counts are what the framework's own code dispatches (transformers' modeling files, peft's
LoRA layers, torch.optim's foreach / fused AdamW, torch.utils.checkpoint), so the closed-form op
lists of gpuplan.core.steptime are tested against them (tests/test_op_census.py). Two caveats:
the CPU dispatch picks CPU kernels where they differ (SDPA's CPU flash kernel stands for the CUDA
one: same tensors saved); where a CUDA step dispatches otherwise (dropout's fused kernel, SDPA's in-kernel
dropout, autocast's fp32 op list) the census takes CUDA's path (gpuplan.profile.cuda_dispatch). torch is
imported inside the functions only.

Units: bytes, FLOPs, counts; per micro-batch of ``micro_batch`` x ``seq_len`` tokens.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from dataclasses import dataclass, field

from gpuplan.errors import InputError

VIEW_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "unsqueeze", "squeeze",
    "slice", "select", "as_strided", "alias", "detach", "split", "split_with_sizes", "unbind", "chunk",
    "narrow", "_reshape_alias", "lift_fresh", "empty", "empty_like", "empty_strided", "new_empty",
    "new_empty_strided", "_local_scalar_dense", "sym_size", "sym_stride", "sym_numel", "is_same_size",
    "set_", "unflatten", "flatten", "view_as", "expand_as", "movedim", "diagonal", "_to_copy_view",
    "_has_compatible_shallow_copy_type", "resolve_conj", "resolve_neg", "_conj", "conj",
})
GEMM_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "_scaled_mm"})
ATTENTION_PREFIXES = ("_scaled_dot_product", "_flash_attention", "_efficient_attention", "_cudnn_attention")
SPARSE_READ_OPS = frozenset({"embedding", "nll_loss_forward", "nll_loss2d_forward", "index_select", "gather"})
SPARSE_WRITE_OPS = frozenset({"embedding_dense_backward", "nll_loss_backward", "nll_loss2d_backward",
                              "scatter_add", "index_add", "index_put", "_index_put_impl_"})
PHASES = ("forward", "backward", "optimizer")
CLASSES = ("gemm", "attention", "memory", "view", "optimizer")


@dataclass
class OpTally:
    """Totals of one (phase, class) cell."""

    ops: int = 0
    """ATen ops dispatched (each one host dispatch; 'view' ops launch no kernel)."""
    kernels: int = 0
    """Kernels the ops launch on a GPU (one per non-view op; a foreach op one per tensor chunk)."""
    bytes: float = 0.0
    """Bytes the kernels read and write (a matmul's operands and result once)."""
    flops: float = 0.0
    """Matmul FLOPs (2 per multiply-add); attention: the kernel's non-causal count."""


@dataclass
class Census:
    """One step: (phase, class) -> OpTally, and the names seen per cell (for reading)."""

    cells: dict = field(default_factory=lambda: defaultdict(OpTally))
    names: dict = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    ops: list = field(default_factory=list)
    """Every op in order: (phase, class, name, kernels, bytes, flops, shape, module class name)."""

    def add(self, phase: str, cls: str, name: str, kernels: int, nbytes: float, flops: float,
            shape: tuple | None = None, module: str = "model") -> None:
        self.ops.append((phase, cls, name, kernels, nbytes, flops, shape, module))
        cell = self.cells[(phase, cls)]
        cell.ops += 1
        cell.kernels += kernels
        cell.bytes += nbytes
        cell.flops += flops
        self.names[(phase, cls)][name] += 1

    def total(self, phase: str | None = None, cls: str | None = None) -> OpTally:
        out = OpTally()
        for (p, c), t in self.cells.items():
            if (phase is None or p == phase) and (cls is None or c == cls):
                out.ops += t.ops
                out.kernels += t.kernels
                out.bytes += t.bytes
                out.flops += t.flops
        return out

    def as_dict(self) -> dict:
        return {f"{p}.{c}": {"ops": t.ops, "kernels": t.kernels, "bytes": t.bytes, "flops": t.flops}
                for (p, c), t in sorted(self.cells.items())}


def _nbytes(t) -> float:
    return float(t.numel() * t.element_size())


def _tensors(obj):
    import torch

    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _tensors(x)


FOREACH_CHUNK_TENSORS = 110
"""Tensors one multi_tensor_apply launch takes at depth 1-2 (aten/src/ATen/native/cuda/
MultiTensorApply.cuh depth_to_max_tensors {110, 64, 48, 36, 30}; depth 4 (Adam) takes 36)."""
FOREACH_MAX_TENSORS_BY_DEPTH = {1: 110, 2: 64, 3: 48, 4: 36, 5: 30}


def _foreach_kernels(args) -> int:
    """Launches of a foreach op: one per chunk of tensors (depth = tensor lists it takes)."""
    lists = [a for a in args if isinstance(a, (list, tuple)) and a and hasattr(a[0], "numel")]
    if not lists:
        return 1
    per_launch = FOREACH_MAX_TENSORS_BY_DEPTH.get(len(lists), 30)
    return max(1, -(-len(lists[0]) // per_launch))


def classify(name: str, args, out, phase: str) -> tuple[str, int, float, float, tuple | None]:
    """(class, kernels, bytes, flops, shape) of one ATen op as a GPU would run it; shape: a
    matmul's (batch, m, k, n, operand bytes), attention's (b, heads, s_q, d, s_k), else None."""
    base = name.split(".")[0]
    if base in VIEW_OPS:
        return "view", 0, 0.0, 0.0, None
    ins = list(_tensors(args))
    outs = list(_tensors(out))
    if not outs and base.endswith("_"):  # in-place foreach ops return None: they write their first list
        outs = list(_tensors(args[0]))
    read = sum(_nbytes(t) for t in ins)
    write = sum(_nbytes(t) for t in outs)
    if base == "_grouped_mm":  # MoE experts: one grouped GEMM over every expert's rows (torch._grouped_mm)
        a, b = ins[0], ins[1]
        n = b.shape[-1]
        groups = b.shape[0] if b.dim() == 3 else (outs[0].shape[0] if outs and outs[0].dim() == 3 else 1)
        k = a.shape[-1] if b.dim() == 3 else a.shape[-1]
        rows = a.shape[0] if b.dim() == 3 else a.shape[0]
        return "gemm", 1, read + write, 2.0 * rows * k * n, (groups, rows / max(groups, 1), k, n, a.element_size())
    if base in GEMM_OPS:
        a, b = (ins[-2], ins[-1])
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
        batch = a.shape[0] if a.dim() == 3 else 1
        return "gemm", 1, read + write, 2.0 * batch * m * k * n, (batch, m, k, n, a.element_size())
    if base.startswith(ATTENTION_PREFIXES):
        q, k = ins[0], ins[1]
        flops = 4.0 * q.shape[0] * q.shape[1] * q.shape[2] * k.shape[2] * q.shape[3]
        return ("attention", 1, read + write, flops * (2.5 if "backward" in base else 1.0),
                tuple(q.shape) + (k.shape[2],))
    if base.startswith("_foreach") or base.startswith("_fused_adam"):
        return "optimizer", _foreach_kernels(args), read + write, 0.0, None
    if base in SPARSE_READ_OPS:  # reads the rows it gathers, not the whole table
        return "memory", 1, 2.0 * write + sum(_nbytes(t) for t in ins if t.dtype.is_floating_point is False), 0.0, None
    if base in SPARSE_WRITE_OPS:  # zero-fills the output, then scatters into it
        small = sum(_nbytes(t) for t in ins if t.numel() * 4 < max(t2.numel() for t2 in outs) or not outs)
        return "memory", 2, write + small, 0.0, None
    if phase == "optimizer":
        return "optimizer", 1, read + write, 0.0, None
    return "memory", 1, read + write, 0.0, None


class _Recorder:
    """A TorchDispatchMode that tallies every op into a Census under the current phase, with the
    module that ran it: in the forward the innermost module whose forward is running (module
    hooks), in the backward the module whose forward created the autograd node being run."""

    def __init__(self, torch):
        from torch.utils._python_dispatch import TorchDispatchMode

        census = Census()
        recorder = self
        self.stack: list[str] = []
        self.node_module: dict = {}

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                name = str(func.overloadpacket.__name__) if hasattr(func, "overloadpacket") else str(func)
                if getattr(func, "namespace", "aten") != "aten":  # prim.device and the like: no kernel
                    cls, kernels, nbytes, flops, shape = "view", 0, 0.0, 0.0, None
                else:
                    cls, kernels, nbytes, flops, shape = classify(name, args, out, recorder.phase)
                census.add(recorder.phase, cls, name, kernels, nbytes, flops, shape, recorder.module_of(torch, out))
                return out

        self.census = census
        self.phase = "forward"
        self.mode = Mode()

    def module_of(self, torch, out) -> str:
        if self.phase == "forward":
            return self.stack[-1] if self.stack else "model"
        if self.phase == "backward":
            node = torch._C._current_autograd_node()
            return self.node_module.get(node, "model") if node is not None else "model"
        return self.phase

    def function_mode(self):
        """A TorchFunctionMode (above autograd, where outputs carry their grad_fn) that maps each
        autograd node the forward creates to the module running."""
        from torch.overrides import TorchFunctionMode

        recorder = self

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                if recorder.phase == "forward":
                    module = recorder.stack[-1] if recorder.stack else "model"
                    for t in _tensors(out):
                        if t.grad_fn is not None:
                            recorder.node_module.setdefault(t.grad_fn, module)
                return out

        return Mode()

    def hook(self, model) -> list:
        """Module pre/post hooks that keep the stack of running module class names."""
        def pre(module, args):
            self.stack.append(type(module).__name__)

        def post(module, args, out):
            if self.stack:
                self.stack.pop()

        handles = []
        for module in model.modules():
            handles.append(module.register_forward_pre_hook(pre))
            handles.append(module.register_forward_hook(post))
        return handles


@dataclass(frozen=True)
class CensusSettings:
    """The step to take a census of (the trial runner's vocabulary: gpuplan.profile.trial_plan)."""

    micro_batch: int = 1
    seq_len: int = 1024
    precision: str = "bf16"
    """'bf16' (bf16 params, grads, AdamW states) or 'fp32-autocast' (fp32 params + bf16 autocast)."""
    recompute: str = "none"
    """'none', 'full' (HF gradient checkpointing per layer) or 'selective' (op-level SAC)."""
    attention: str = "sdpa"
    optimizer_impl: str = "foreach"
    """'foreach', 'fused' or 'forloop' (torch.optim.AdamW's three implementations)."""
    lora_rank: int | None = None
    """LoRA via peft on every linear of the decoder layers (adapters fp32, base frozen)."""


def take_census(hf_config: dict, layers: int, settings: CensusSettings) -> Census:
    """One training step of ``hf_config`` at ``layers`` decoder layers, op by op."""
    torch, transformers = _backends()
    import transformers.masking_utils as masking_utils
    from torch._subclasses.fake_tensor import FakeTensorMode

    from gpuplan.profile.cuda_dispatch import cuda_autocast_policy, cuda_dropout_dispatch
    from gpuplan.profile.measure import _build_config
    from gpuplan.profile.recompute import apply_selective_recompute

    _, text_cfg, _ = _build_config(transformers, hf_config, layers)
    fp32 = settings.precision == "fp32-autocast"
    param_dtype = torch.float32 if fp32 else torch.bfloat16
    with contextlib.ExitStack() as stack:
        orig_find = masking_utils.find_packed_sequence_indices  # trap 2 of docs/measure.md
        masking_utils.find_packed_sequence_indices = lambda *a, **k: None
        stack.callback(setattr, masking_utils, "find_packed_sequence_indices", orig_find)
        model = _meta_model(torch, transformers, text_cfg, settings, param_dtype)
        stack.enter_context(cuda_dropout_dispatch(torch))
        if fp32:
            stack.enter_context(cuda_autocast_policy(torch))
        stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
        model.to_empty(device="cpu")  # trap 1: peft's adapter .to() fails on fake tensors; build on meta
        if hasattr(model, "tie_weights"):
            model.tie_weights()
        model.train()
        if settings.recompute == "full":
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            if settings.lora_rank:
                model.enable_input_require_grads()
        if settings.recompute == "selective":
            apply_selective_recompute(model, layers)
        opt = _optimizer(torch, model, settings.optimizer_impl)
        ids = torch.randint(0, text_cfg.vocab_size, (settings.micro_batch, settings.seq_len))
        cast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if fp32 else contextlib.nullcontext
        _step(model, opt, ids, cast)  # the first step creates the optimizer states
        recorder = _Recorder(torch)
        handles = recorder.hook(model)
        with recorder.mode, recorder.function_mode():
            _step(model, opt, ids, cast, recorder)
        for handle in handles:
            handle.remove()
    return recorder.census


def _meta_model(torch, transformers, text_cfg, settings: CensusSettings, param_dtype):
    """The model on the meta device (with its LoRA adapters when asked)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(param_dtype)
    try:
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(text_cfg, attn_implementation=settings.attention,
                                                                  dtype=param_dtype)
    finally:
        torch.set_default_dtype(old)
    return _with_lora(model, settings.lora_rank) if settings.lora_rank else model


def _step(model, opt, ids, cast, recorder=None) -> None:
    def phase(name):
        if recorder is not None:
            recorder.phase = name

    phase("forward")
    with cast():
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
    phase("backward")
    loss.backward()
    phase("optimizer")
    opt.step()
    opt.zero_grad(set_to_none=True)


def _optimizer(torch, model, impl: str):
    params = [p for p in model.parameters() if p.requires_grad]
    if impl not in ("foreach", "fused", "forloop"):
        raise InputError("optimizer_impl", impl, "foreach, fused or forloop")
    return torch.optim.AdamW(params, lr=1e-4, foreach=impl == "foreach", fused=impl == "fused" or None)


def _with_lora(model, rank: int):
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as exc:
        raise InputError("lora_rank", rank, "peft installed (pip install peft) for a LoRA census") from exc
    # every linear of the decoder layers, as gpuplan counts LoRA (peft's "all-linear" leaves the LM head out)
    return get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", bias="none", r=rank, lora_alpha=2 * rank,
                                            lora_dropout=0.0, target_modules="all-linear"))


def _backends():
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise InputError("census", "torch", "needs the profile extra: pip install 'gpuplan[profile]'") from exc
    return torch, transformers
