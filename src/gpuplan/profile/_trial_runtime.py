"""The torch side of a trial run (imported lazily by gpuplan.profile.trial).

Distributed runs use the ordinary launcher: ``torchrun`` sets RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR/PORT; the process group is initialised from them (NCCL on CUDA, gloo on CPU).
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass

from gpuplan.errors import InputError

_MISSING = "needs the profile extra: pip install 'gpuplan[profile]'"


def import_backends():
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise InputError("profile", "torch", _MISSING) from exc
    return torch, transformers


@dataclass
class Runtime:
    torch: object
    device: object
    device_type: str
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    backend: str | None
    owns_group: bool

    def sync(self) -> None:
        if self.device_type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def close(self) -> None:
        if self.owns_group:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()


def start(torch, requested: str) -> Runtime:
    """Pick the device (CUDA when present, else CPU) and join torchrun's process group, if any."""
    import torch.distributed as dist

    cuda = torch.cuda.is_available()
    if requested == "cuda" and not cuda:
        build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}, no visible GPU"
        raise InputError("device", "cuda", f"CUDA is not available (torch {torch.__version__}: {build}); "
                         "use --device cpu")
    device_type = "cuda" if requested == "cuda" or (requested == "auto" and cuda) else "cpu"
    world, rank, local_rank, local_world = launcher_ranks(os.environ)
    device = torch.device(device_type, local_rank) if device_type == "cuda" else torch.device("cpu")
    if device_type == "cuda":
        torch.cuda.set_device(device)
    backend, owns = None, False
    if world > 1:
        backend = "nccl" if device_type == "cuda" else "gloo"
        if not dist.is_initialized():
            dist.init_process_group(backend)
            owns = True
    return Runtime(torch, device, device_type, rank, world, local_rank, local_world, backend, owns)


LAUNCHER = "set by torchrun; unset it for one process"


def launcher_ranks(env) -> tuple[int, int, int, int]:
    """(WORLD_SIZE, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE) from torchrun's variables (one process when
    unset), checked: whole numbers, 0 <= RANK < WORLD_SIZE, 0 <= LOCAL_RANK < LOCAL_WORLD_SIZE <=
    WORLD_SIZE, and RANK, MASTER_ADDR and MASTER_PORT given when WORLD_SIZE > 1 (before: int('abc') and torch's rendezvous or
    arange errors left as internal errors, RANK=5 of WORLD_SIZE=1 ran as rank 5)."""
    def whole(name: str, default: int, low: int, high: int) -> int:
        text = env.get(name)
        if text is None:
            return default
        try:
            value = int(text.strip())
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise InputError(name, text, f"must be a whole number from {low} to {high} ({LAUNCHER})")
        return value

    world = whole("WORLD_SIZE", 1, 1, 10_000_000)
    for name in ("RANK", "MASTER_ADDR", "MASTER_PORT") if world > 1 else ():  # torch's env:// rendezvous reads them
        if not (env.get(name) or "").strip():
            raise InputError(name, None, f"WORLD_SIZE is {world}: {name} must be set too ({LAUNCHER})")
    rank = whole("RANK", 0, 0, world - 1)
    local_world = whole("LOCAL_WORLD_SIZE", world, 1, world)
    return world, rank, whole("LOCAL_RANK", 0, 0, local_world - 1), local_world


def device_memory(rt: Runtime) -> tuple[float, str]:
    """(bytes a trial may plan to use on this device, what was read)."""
    from gpuplan.profile.trial_plan import USABLE_CPU_FRACTION, USABLE_CUDA_FRACTION

    if rt.device_type == "cuda":
        total = rt.torch.cuda.get_device_properties(rt.device).total_memory
        return total * USABLE_CUDA_FRACTION, f"{USABLE_CUDA_FRACTION:.0%} of total_memory {total}"
    available = _mem_available()
    return available * USABLE_CPU_FRACTION, f"{USABLE_CPU_FRACTION:.0%} of MemAvailable {available:.0f}"


def _mem_available() -> float:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def cpu_microbenchmarks(torch, dtype) -> dict:
    """Large-GEMM FLOP/s in the run's dtype and memory-copy bytes/s on this CPU (best of
    repeats, ~0.5 s): the CPU stand-in's peak and bandwidth (gpuplan.calibrate.predict)."""
    n = 1024
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    gemm = _best_seconds(lambda: torch.mm(a, b), budget=0.3)
    src = torch.empty(8 * 2**20, dtype=torch.float32).normal_()  # 32 MiB, past the caches
    dst = torch.empty_like(src)
    copy = _best_seconds(lambda: dst.copy_(src), budget=0.2)
    return {"matmul_flops_per_s": 2.0 * n**3 / gemm, "matmul_shape": [n, n, n], "matmul_dtype": str(dtype),
            "copy_bytes_per_s": 2.0 * src.numel() * 4 / copy, "copy_bytes": src.numel() * 4,
            "threads": torch.get_num_threads()}


def _best_seconds(fn, budget: float) -> float:
    fn()  # warm-up
    best, spent = float("inf"), 0.0
    while spent < budget:
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best, spent = min(best, dt), spent + dt
    return best


def build_model(rt: Runtime, transformers, hf_config: dict, attention: str, param_dtype, recompute: str, seed: int):
    """Random-init causal LM from the config (no weights downloaded), on the trial's device."""
    from gpuplan.profile.measure import _build_config, causal_lm

    torch = rt.torch
    _, text_cfg, _ = _build_config(transformers, hf_config, None)
    torch.manual_seed(seed)  # identical weights on every rank
    try:
        with torch.device(rt.device):
            model = causal_lm(transformers, text_cfg, attention, param_dtype)
    except ValueError as exc:
        if "attn" in str(exc) or "attention" in str(exc):
            from gpuplan.adapters.config_fields import kernel_refusal

            raise kernel_refusal(attention, exc) from exc
        raise InputError("model", hf_config.get("model_type"), f"a model type with a causal-LM class ({exc})") from exc
    model.train()
    if recompute == "full":  # HF gradient checkpointing of every decoder layer, non-reentrant
        if hasattr(model, "activation_checkpointing_enable"):
            model.activation_checkpointing_enable()
        else:  # transformers < 5
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model, text_cfg


def adapt(model, lora_rank: int | None, recompute: str, n_layers: int):
    """LoRA adapters (peft on every linear but the LM head, "all-linear", as gpuplan counts them;
    alpha = 2 r, no dropout; adapters fp32, the base frozen) and torchtitan's
    op-level selective recompute (gpuplan.profile.recompute), as the run asks."""
    if lora_rank:
        try:
            from peft import LoraConfig, get_peft_model
        except ImportError as exc:
            raise InputError("lora_rank", lora_rank, "peft installed (pip install peft) to train LoRA adapters") from exc
        model = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", bias="none", r=lora_rank,
                                                 lora_alpha=2 * lora_rank, lora_dropout=0.0,
                                                 target_modules="all-linear"))
        if recompute == "full":
            model.enable_input_require_grads()
    if recompute == "selective":
        from gpuplan.profile.recompute import apply_selective_recompute

        apply_selective_recompute(model, n_layers)
    return model


def parallelize(rt: Runtime, model, parallelism: str, precision: str):
    """FSDP2 (fully_shard per decoder layer, then the root) or DDP; unchanged at world size 1."""
    torch = rt.torch
    if parallelism == "ddp":
        ids = [rt.device.index] if rt.device_type == "cuda" else None
        return torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
    if parallelism != "fsdp2":
        return model
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    from gpuplan.profile.fake_distributed import decoder_layers

    mesh = init_device_mesh(rt.device_type, (rt.world_size,))
    mp = (MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
          if precision == "fp32-autocast" else MixedPrecisionPolicy())
    n_layers = model.config.get_text_config().num_hidden_layers
    layers = decoder_layers(model, n_layers)
    if len(layers) != n_layers:
        raise InputError("parallelism", "fsdp2", f"a model whose {n_layers} decoder layers can be found; use ddp")
    for layer in layers:
        fully_shard(layer, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    return model


def make_optimizer(torch, model, name: str, impl: str = "foreach"):
    """The optimizer over the trained parameters. foreach (PyTorch's CUDA default) is forced on the
    CPU too so the memory matches a GPU run; fused / forloop as asked."""
    params = [p for p in model.parameters() if p.requires_grad]
    kw = {"foreach": impl == "foreach", "fused": True if impl == "fused" else None}
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, **kw)
    return torch.optim.SGD(params, lr=1e-4, momentum=0.9, **kw)


def autocast(rt: Runtime, precision: str, parallelism: str):
    if precision == "fp32-autocast" and parallelism != "fsdp2":  # FSDP2 casts through its MP policy
        return rt.torch.autocast(rt.device_type, dtype=rt.torch.bfloat16)
    return contextlib.nullcontext()


def train_step(model, optimizer, input_ids, cast, tracker=None) -> float:
    """One optimizer step; ``tracker.phase`` follows forward / backward / optimizer step."""
    def phase(name):
        if tracker is not None:
            tracker.phase = name

    phase("forward")
    with cast:
        out = model(input_ids=input_ids, labels=input_ids, use_cache=False)
    loss = out.loss
    phase("backward")
    loss.backward()
    del out
    phase("optimizer_step")
    optimizer.step()
    phase("zero_grad")
    optimizer.zero_grad(set_to_none=True)
    return float(loss.detach())


def tracked_step(rt: Runtime, model, optimizer, input_ids, cast_factory, parallelism: str) -> dict:
    """One more (untimed) step under a MemTracker on real tensors: the CPU memory peak."""
    from gpuplan.profile import _trackers
    from gpuplan.profile.measure import _CATEGORY_OF, MODTRACKER_REENTRY, _categorise

    if parallelism == "fsdp2":
        tracker = _trackers.FastFSDPMemTracker(model, optimizer)
        tracker.track_inputs((input_ids,))
    else:
        tracker = _trackers.FastMemTracker()
        _trackers.skip_frozen_grad_hooks(tracker, model)  # LoRA's frozen base
        tracker.track_external(model, optimizer, input_ids)
    tracker.category_of = {m: _CATEGORY_OF[m.name] for m in tracker._ref_class}
    # ModTracker's 'module hierarchy tracking maybe be messed up' (a module entered again inside itself: a shared
    # rotary or norm) touches per-module attribution only, which is not read here; kept off the terminal as
    # profile.measure keeps it (wave 19: a CPU trial's refusal printed it above its one line)
    import warnings

    with warnings.catch_warnings(), tracker:
        warnings.filterwarnings("ignore", message=MODTRACKER_REENTRY, category=UserWarning)
        train_step(model, optimizer, input_ids, cast_factory(), tracker)
    snap: dict = {}
    for dev in tracker.get_tracker_snapshot("peak").values():
        for key, value in dev.items():
            snap[key] = snap.get(key, 0) + value
    at_peak, _ = _categorise(snap)
    return {"peak_bytes": sum(at_peak.values()), "at_peak": at_peak, "peak_phase": tracker.peak_phase}


def reduce_max(rt: Runtime, values: list[float]) -> list[float]:
    """Element-wise maximum over ranks (the slowest rank sets the step time)."""
    if rt.world_size == 1:
        return list(values)
    import torch.distributed as dist

    t = rt.torch.tensor(values, dtype=rt.torch.float64, device=rt.device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def gather(rt: Runtime, value: float) -> list[float]:
    if rt.world_size == 1:
        return [value]
    import torch.distributed as dist

    t = rt.torch.tensor([value], dtype=rt.torch.float64, device=rt.device)
    out = [rt.torch.zeros_like(t) for _ in range(rt.world_size)]
    dist.all_gather(out, t)
    return [float(x.item()) for x in out]
