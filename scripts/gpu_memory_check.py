"""GPU memory check: real allocated and reserved peaks of a small training matrix (issue 14, item 6).

    python scripts/gpu_memory_check.py                 # on a CUDA machine: ~6 min on one H100/H200
    python scripts/gpu_memory_check.py --dry-run --out /tmp/dry.yaml   # CPU, tiny shapes, < 60 s

For each configuration of a fixed matrix (Llama-3.2-1B / 3.2-3B / 3.1-8B shapes with random
weights; bf16 and amp; recompute none / selective / full; SDPA or flash-attn 2; LoRA; torch.compile;
float8; expandable segments on and off) one process builds the model, runs warm-up and timed
training steps (AdamW, foreach) through gpuplan's trial runner (gpuplan.profile._trial_runtime:
build_model, make_optimizer, autocast, train_step, tracked_step) and records:

* torch.cuda.max_memory_allocated / max_memory_reserved over the timed steps (peaks reset after the
  warm-up steps) and over the whole run (model build and warm-up included);
* fragmentation-relevant torch.cuda.memory_stats() fields (inactive_split_bytes peak, active and
  requested bytes peaks, segment counts, num_alloc_retries, num_ooms) and PYTORCH_CUDA_ALLOC_CONF;
* the CUDA context: device memory used (NVML, else nvidia-smi) before CUDA is initialised in the
  process, after initialisation, and after the steps, against torch's reserved bytes;
* step time, GPU name, driver and CUDA versions, torch / transformers / peft / torchao / flash-attn
  versions;
* gpuplan's own estimate of the allocated peak where gpuplan models the configuration.

Each configuration runs in its own process (a fresh interpreter on CUDA, a fork of a parent that
has imported torch but never initialised CUDA in the dry run), so an out-of-memory error or a crash
is recorded as that configuration's result and the rest still run. The whole run keeps to
``--budget-s`` (default 540): a configuration whose estimated time would pass the budget is skipped
and recorded as skipped. Results are merged (key: GPU name + config id; other GPUs' rows are kept)
into src/gpuplan/catalog/reference/gpu_memory_measurements.yaml, and copied to $OUT when set.

``--dry-run`` (automatic when torch sees no CUDA device, unless ``--device cuda`` is given, which then
exits with status 2 and one line on stderr) runs the same per-configuration code on the CPU with
tiny shapes (2 layers, hidden 64, seq 64, 1 warm-up + 1 timed step), measures the allocated peak
with gpuplan's MemTracker (one more untimed step), records CUDA-only fields as null with the reason,
and writes only to ``--out`` (never to the package's reference file). See docs/gpu-check.md.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib.metadata
import importlib.util
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))  # this tree's gpuplan, installed or not

REFERENCE = ROOT / "src" / "gpuplan" / "catalog" / "reference" / "gpu_memory_measurements.yaml"
OUT_NAME = "gpu_memory_measurements.yaml"
SUMMARY_NAME = "gpu_memory_check_summary.txt"
DEFAULT_BUDGET_S = 540.0
DRY_GPU_NAME = "cpu-dry-run"
ALLOC_CONF_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
GiB = 2**30

STEPS = {"cuda": {"warmup": 2, "steps": 3}, "dry": {"warmup": 1, "steps": 1}}
DRY_SHAPE = {"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 256, "num_attention_heads": 4,
             "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 2048}
DRY_SEQ_LEN, DRY_MICRO_BATCH = 64, 1
DRY_SECONDS = 3.0  # budget estimate per configuration in the dry run (fork: no interpreter start)
LORA = {"r": 16, "lora_alpha": 32, "lora_dropout": 0.0,
        "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}
SELECTIVE_DETAIL = (
    "op-level selective activation checkpointing as torchtitan's 'op' mode: every decoder layer wrapped in "
    "non-reentrant torch.utils.checkpoint with a torch.utils.checkpoint.create_selective_checkpoint_contexts "
    "policy that saves (MUST_SAVE) the outputs of aten.mm (except every second mm, counted separately in forward "
    "and recompute), of the SDPA / flash-attn kernels and of aten.max, and recomputes (PREFER_RECOMPUTE) "
    "everything else (norms, RoPE, SiLU, products); HF transformers itself only has full-layer checkpointing")
FULL_DETAIL = "HF gradient checkpointing of every decoder layer (non-reentrant), as gpuplan profile --recompute full"
UNITS = ("bytes for *_bytes, seconds for *_s / *_seconds; allocated = torch.cuda.max_memory_allocated "
         "(bytes in live tensors, rounded to the allocator's 512-byte blocks), reserved = "
         "torch.cuda.max_memory_reserved (segments the caching allocator holds from cudaMalloc); the CUDA "
         "context and library workspaces are outside both (cuda.* fields)")


# --------------------------------------------------------------------------------------------------
# the matrix


@dataclass(frozen=True)
class Config:
    """One measured configuration. ``gpu_seconds``: estimated wall seconds on one H100/H200,
    process start, imports, CUDA init, model build and 5 steps included (used for the budget)."""

    model: str
    seq_len: int
    micro_batch: int
    layers: int
    precision: str = "bf16"  # bf16: bf16 params, grads, AdamW states; amp: fp32 params + bf16 autocast
    recompute: str = "none"  # none | selective | full
    attention: str = "sdpa"  # sdpa | flash_attention_2
    lora: bool = False
    compile: bool = False
    fp8: bool = False
    expandable_segments: bool = False
    gpu_seconds: float = 15.0

    @property
    def id(self) -> str:
        extra = "".join(f"_{name}" for name, on in (("lora", self.lora), ("compile", self.compile),
                                                     ("fp8", self.fp8), ("expseg", self.expandable_segments)) if on)
        return (f"{self.model}_L{self.layers}_s{self.seq_len}_b{self.micro_batch}_{self.precision}"
                f"_{self.recompute}_{self.attention}{extra}")


def _c(model: str, seq: int, mb: int, layers: int, secs: float, **kw) -> Config:
    return Config(model=model, seq_len=seq, micro_batch=mb, layers=layers, gpu_seconds=secs, **kw)


B1, B3, B8 = "llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b"
MATRIX: tuple[Config, ...] = (
    _c(B1, 2048, 2, 16, 15),
    _c(B1, 2048, 2, 16, 15, expandable_segments=True),
    _c(B1, 2048, 2, 16, 15, recompute="selective"),
    _c(B1, 2048, 2, 16, 15, recompute="full"),
    _c(B1, 2048, 2, 16, 16, precision="amp"),
    _c(B1, 2048, 2, 16, 15, attention="flash_attention_2"),
    _c(B1, 2048, 2, 16, 16, lora=True),
    _c(B1, 2048, 2, 16, 25, fp8=True),
    _c(B3, 4096, 1, 28, 18),
    _c(B3, 4096, 1, 28, 18, recompute="selective"),
    _c(B3, 4096, 1, 28, 18, recompute="full"),
    _c(B3, 2048, 1, 28, 20, precision="amp"),
    _c(B8, 4096, 1, 16, 20),  # 8B width, 16 of its 32 layers (fits an 80 GB H100)
    _c(B8, 4096, 1, 16, 20, expandable_segments=True),
    _c(B8, 4096, 1, 16, 20, recompute="selective"),
    _c(B8, 4096, 1, 32, 30, recompute="full"),  # full depth
    _c(B8, 4096, 1, 32, 25, lora=True),  # full depth, frozen bf16 base
    _c(B1, 2048, 2, 16, 75, compile=True),  # last: the most expensive (inductor compiles one layer)
)


def matrix_ids() -> list[str]:
    return [c.id for c in MATRIX]


def hf_config_for(cfg: Config, dry: bool) -> dict:
    """The HF config measured: the catalog model at ``cfg.layers`` layers, or the tiny dry shape."""
    from gpuplan.profile.trial_plan import config_with_layers, model_config

    config, _ = model_config(cfg.model)
    if dry:
        config = copy.deepcopy(config)
        config.update(DRY_SHAPE)
        return config
    return config_with_layers(config, cfg.layers)


def unsupported_reason(cfg: Config, dry: bool) -> str | None:
    """Why this configuration cannot run with the installed libraries / device (None: it can)."""
    if cfg.lora and importlib.util.find_spec("peft") is None:
        return "peft is not importable (pip install peft)"
    if cfg.fp8 and importlib.util.find_spec("torchao") is None:
        return "torchao is not importable (float8 training needs torchao.float8)"
    if cfg.attention == "flash_attention_2":
        if importlib.util.find_spec("flash_attn") is None:
            return "flash_attn is not importable (flash-attn 2 not installed)"
        if dry:
            return "flash-attn 2 kernels need CUDA (dry run on the CPU)"
    return None


# --------------------------------------------------------------------------------------------------
# device-level readings that do not initialise CUDA in this process


def _visible_index() -> int:
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


def nvml_reading() -> dict:
    """{'used_bytes', 'name', 'driver', 'how'} of the visible GPU from NVML, else nvidia-smi; values
    None with 'how' saying why. Never initialises CUDA."""
    index = _visible_index()
    with contextlib.suppress(Exception):
        import pynvml

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = pynvml.nvmlDeviceGetName(handle)
            driver = pynvml.nvmlSystemGetDriverVersion()
            used = int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)
            cuda_driver = None
            with contextlib.suppress(Exception):
                v = int(pynvml.nvmlSystemGetCudaDriverVersion())
                cuda_driver = f"{v // 1000}.{v % 1000 // 10}"
        finally:
            pynvml.nvmlShutdown()
        decode = (lambda v: v.decode() if isinstance(v, bytes) else str(v))
        return {"used_bytes": used, "name": decode(name), "driver": decode(driver), "driver_cuda": cuda_driver,
                "how": "NVML (pynvml)"}
    smi = shutil.which("nvidia-smi")
    if smi:
        with contextlib.suppress(Exception):
            out = subprocess.run([smi, f"--id={index}", "--query-gpu=memory.used,name,driver_version",
                                  "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20,
                                 check=True).stdout.strip().splitlines()[0]
            used, name, driver = (p.strip() for p in out.split(",", 2))
            return {"used_bytes": int(float(used) * 2**20), "name": name, "driver": driver, "driver_cuda": None,
                    "how": "nvidia-smi (MiB resolution)"}
    return {"used_bytes": None, "name": None, "driver": None, "driver_cuda": None,
            "how": "neither pynvml nor nvidia-smi answered"}


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def library_versions() -> dict:
    import torch

    return {"python": platform.python_version(), "torch": torch.__version__, "torch_cuda": torch.version.cuda,
            "cudnn": (torch.backends.cudnn.version() if torch.version.cuda else None),
            "transformers": _version("transformers"), "peft": _version("peft"), "torchao": _version("torchao"),
            "flash_attn": _version("flash-attn") or _version("flash_attn"), "triton": _version("triton"),
            "gpuplan": _gpuplan_version()}


def _gpuplan_version() -> str:
    import gpuplan

    return getattr(gpuplan, "__version__", "unknown")


def _cpu_name() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "cpu"


# --------------------------------------------------------------------------------------------------
# one configuration (runs in its own process)


def _first_line(exc: BaseException, limit: int = 300) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {(text[0] if text else '')[:limit]}"


def _is_oom(exc: BaseException) -> bool:
    import torch

    oom = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    if oom is not None and isinstance(oom, type) and isinstance(exc, oom):
        return True
    text = str(exc)
    return "out of memory" in text.lower() or "can't allocate memory" in text


def _decoder_layer_list(model, n_layers: int):
    from gpuplan.profile.recompute import decoder_layer_list

    return decoder_layer_list(model, n_layers)


def apply_selective_recompute(model, n_layers: int) -> None:
    """torchtitan's op-level SAC on every decoder layer (gpuplan.profile.recompute, as profile runs it)."""
    from gpuplan.profile.recompute import apply_selective_recompute as apply

    apply(model, n_layers)


def apply_compile(model, n_layers: int, backend: str) -> None:
    """torch.compile per decoder layer (as torchtitan): one graph reused by every layer."""
    import torch

    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, max(getattr(torch._dynamo.config, name), 4 * n_layers))
    for layer in _decoder_layer_list(model, n_layers):
        layer.compile(backend=backend)


def apply_fp8(model) -> int:
    """torchao float8 training (tensorwise dynamic scaling) on every linear but the LM head whose
    dimensions are multiples of 16; returns how many linears were converted."""
    import torch
    from torchao.float8 import convert_to_float8_training

    def keep(module, fqn: str) -> bool:
        return (isinstance(module, torch.nn.Linear) and "lm_head" not in fqn
                and module.in_features % 16 == 0 and module.out_features % 16 == 0)

    before = sum(isinstance(m, torch.nn.Linear) for m in model.modules())
    convert_to_float8_training(model, module_filter_fn=keep)
    return before - sum(type(m) is torch.nn.Linear for m in model.modules())


def apply_lora(model):
    from peft import LoraConfig, get_peft_model

    return get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", bias="none", **LORA))


class _NoHook:
    def remove(self) -> None:
        pass


def tracked_step(R, rt, model, optimizer, input_ids, cast) -> dict:
    """gpuplan's CPU memory step (R.tracked_step). MemTracker puts a gradient hook on every parameter,
    which a frozen one (LoRA's base) refuses: mark frozen parameters as already hooked."""
    frozen = [p for p in model.parameters() if not p.requires_grad]
    if not frozen:
        return R.tracked_step(rt, model, optimizer, input_ids, cast, "none")
    from gpuplan.profile import _trackers

    base = _trackers.FastMemTracker

    class FrozenSafeMemTracker(base):
        def __init__(self) -> None:
            super().__init__()
            for p in frozen:
                self._param_to_grad_hook_handles[p] = (_NoHook(), _NoHook())

    _trackers.FastMemTracker = FrozenSafeMemTracker
    try:
        return R.tracked_step(rt, model, optimizer, input_ids, cast, "none")
    finally:
        _trackers.FastMemTracker = base


_STAT_KEYS = {"active_bytes_peak": "active_bytes.all.peak", "requested_bytes_peak": "requested_bytes.all.peak",
              "inactive_split_bytes_peak": "inactive_split_bytes.all.peak", "segments_peak": "segment.all.peak",
              "num_alloc_retries": "num_alloc_retries", "num_ooms": "num_ooms",
              "num_device_alloc": "num_device_alloc", "num_device_free": "num_device_free"}


def _cuda_memory(torch, device) -> dict:
    stats = torch.cuda.memory_stats(device)
    return {"allocated_bytes": int(torch.cuda.max_memory_allocated(device)),
            "reserved_bytes": int(torch.cuda.max_memory_reserved(device)),
            **{k: (int(stats[v]) if v in stats else None) for k, v in _STAT_KEYS.items()}}


def run_config(job: dict) -> dict:
    """Measure one configuration in this process; returns the result row (never raises for an OOM
    or a failure of the configuration itself)."""
    cfg = Config(**job["config"])
    device_type = job["device"]
    cuda = device_type == "cuda"
    result: dict = {"status": "error", "reason": None, "phase": "start"}
    inherited_conf = {k: os.environ.get(k) for k in ALLOC_CONF_VARS}
    if cuda:  # the allocator reads them when CUDA initialises in this process (PYTORCH_ALLOC_CONF: torch >= 2.9)
        for name in ALLOC_CONF_VARS:
            os.environ[name] = f"expandable_segments:{'True' if cfg.expandable_segments else 'False'}"
    used_before = nvml_reading() if cuda else None
    wall0 = time.perf_counter()

    import torch
    import transformers

    from gpuplan.profile import _trial_runtime as R

    memory: dict = {}
    null_reasons: dict = {}
    cuda_info: dict = {}
    timing: dict = {}
    shape: dict = {}
    notes: list[str] = []
    rt = None
    try:
        rt = R.start(torch, "cuda" if cuda else "cpu")
        if cuda:
            free, total = torch.cuda.mem_get_info(rt.device)
            used_init = nvml_reading()
            cuda_info = {"device_used_before_init_bytes": used_before["used_bytes"],
                         "device_used_after_init_bytes": used_init["used_bytes"],
                         "mem_get_info_after_init": {"free_bytes": int(free), "total_bytes": int(total)},
                         "how": used_before["how"]}
            if used_before["used_bytes"] is not None and used_init["used_bytes"] is not None:
                cuda_info["context_bytes"] = used_init["used_bytes"] - used_before["used_bytes"]
            else:
                cuda_info["context_bytes"] = int(total - free)
                cuda_info["context_note"] = ("no NVML/nvidia-smi reading before init: total - free after init "
                                             "(includes other processes on the device)")
        result["phase"] = "build"
        precision_arg = "fp32-autocast" if cfg.precision == "amp" else "bf16"
        param_dtype = torch.float32 if cfg.precision == "amp" else torch.bfloat16
        model, text_cfg = R.build_model(rt, transformers, job["hf_config"], cfg.attention, param_dtype,
                                        "full" if cfg.recompute == "full" else "none", seed=0)
        n_layers = text_cfg.num_hidden_layers
        if cfg.fp8:
            notes.append(f"float8 (torchao, tensorwise dynamic scaling) on {apply_fp8(model)} linears; "
                         "eager (not compiled): the casts are not fused")
        if cfg.lora:
            model = apply_lora(model)
            notes.append("LoRA via peft: base frozen in bf16, adapters in peft's default dtype (fp32 with "
                         "autocast_adapter_dtype)")
        if cfg.recompute == "selective":
            apply_selective_recompute(model, n_layers)
        if cfg.compile:
            backend = job["compile_backend"]
            apply_compile(model, n_layers, backend)
            notes.append(f"torch.compile per decoder layer, backend {backend}; the first warm-up step compiles")
        optimizer = R.make_optimizer(torch, model, "adamw")
        num_params = sum(p.numel() for p in model.parameters())
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        shape = {k: getattr(text_cfg, k, None) for k in ("hidden_size", "intermediate_size", "num_attention_heads",
                                                          "num_key_value_heads", "num_hidden_layers", "vocab_size")}
        shape.update(num_params=num_params, trainable_params=trainable, param_dtype=str(param_dtype).split(".")[-1])
        generator = torch.Generator(device="cpu").manual_seed(0)
        input_ids = torch.randint(0, text_cfg.vocab_size, (job["micro_batch"], job["seq_len"]),
                                  generator=generator).to(rt.device)

        def cast():
            return R.autocast(rt, precision_arg, "none")

        warmup, steps = job["warmup"], job["steps"]
        times, losses = [], []
        result["phase"] = "warmup"
        for i in range(warmup + steps):
            if i == warmup:
                result["phase"] = "timed"
                if cuda:
                    run = _cuda_memory(torch, rt.device)
                    memory["build_and_warmup_peak_allocated_bytes"] = run["allocated_bytes"]
                    memory["build_and_warmup_peak_reserved_bytes"] = run["reserved_bytes"]
                    torch.cuda.reset_peak_memory_stats(rt.device)
            rt.sync()
            t0 = time.perf_counter()
            losses.append(R.train_step(model, optimizer, input_ids, cast()))
            rt.sync()
            if i >= warmup:
                times.append(time.perf_counter() - t0)
        median = statistics.median(times)
        tokens = job["micro_batch"] * job["seq_len"]
        timing = {"step_time_s": median, "per_step_s": times, "tokens_per_s": tokens / median,
                  "warmup_steps": warmup, "timed_steps": steps, "loss_first": losses[0], "loss_last": losses[-1]}
        if cuda:
            peaks = _cuda_memory(torch, rt.device)
            used_after = nvml_reading()["used_bytes"]
            reserved_now = int(torch.cuda.memory_reserved(rt.device))
            memory.update(peak_allocated_bytes=peaks.pop("allocated_bytes"),
                          peak_reserved_bytes=peaks.pop("reserved_bytes"), **peaks)
            memory["reserved_over_allocated"] = (memory["peak_reserved_bytes"] / memory["peak_allocated_bytes"]
                                                 if memory["peak_allocated_bytes"] else None)
            memory["method"] = ("torch.cuda.max_memory_allocated / max_memory_reserved over the timed steps "
                                "(torch.cuda.reset_peak_memory_stats after the warm-up steps); counters "
                                "(num_alloc_retries, num_ooms, num_device_*) over the whole process")
            cuda_info["device_used_after_steps_bytes"] = used_after
            cuda_info["reserved_after_steps_bytes"] = reserved_now
            if used_after is not None and used_before["used_bytes"] is not None:
                cuda_info["non_pytorch_bytes_after_steps"] = used_after - used_before["used_bytes"] - reserved_now
                cuda_info["non_pytorch_note"] = ("device memory this process uses beyond torch's reserved "
                                                 "segments: CUDA context, loaded kernel modules, cuBLAS/cuDNN handles "
                                                 "and any library memory not taken through torch's allocator")
        else:
            result["phase"] = "tracked"
            try:
                tracked = tracked_step(R, rt, model, optimizer, input_ids, cast)
                memory.update(peak_allocated_bytes=int(tracked["peak_bytes"]), peak_phase=tracked["peak_phase"],
                              at_peak={k: int(v) for k, v in tracked["at_peak"].items()})
                memory["method"] = ("CPU: MemTracker (gpuplan.profile._trackers via _trial_runtime.tracked_step) "
                                    "on the real tensors of one more untimed steady-state step: allocated tensor "
                                    "bytes")
            except Exception as exc:  # noqa: BLE001 (recorded: the configuration itself ran)
                memory["peak_allocated_bytes"] = None
                null_reasons["peak_allocated_bytes"] = f"MemTracker failed on this configuration: {_first_line(exc)}"
            memory.update(peak_reserved_bytes=None, reserved_over_allocated=None,
                          **dict.fromkeys(_STAT_KEYS))
            why = "CUDA-only (torch.cuda caching allocator); dry run on the CPU"
            null_reasons.update({k: why for k in ("peak_reserved_bytes", "reserved_over_allocated", *_STAT_KEYS)})
            null_reasons["cuda"] = "CUDA-only (no CUDA context on the CPU); dry run"
        memory["process_max_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        result.update(status="ok", phase="done")
    except Exception as exc:  # noqa: BLE001 (the configuration's failure is its result)
        result["reason"] = _first_line(exc)
        result["status"] = "oom" if _is_oom(exc) else "error"
        if cuda and torch.cuda.is_initialized():
            with contextlib.suppress(Exception):
                at = _cuda_memory(torch, rt.device if rt else 0)
                memory["at_failure_peak_allocated_bytes"] = at["allocated_bytes"]
                memory["at_failure_peak_reserved_bytes"] = at["reserved_bytes"]
                memory["num_alloc_retries"], memory["num_ooms"] = at["num_alloc_retries"], at["num_ooms"]
        traceback.print_exc()
    env = {"device_type": device_type, **library_versions()}
    if cuda and torch.cuda.is_initialized():
        with contextlib.suppress(Exception):
            props = torch.cuda.get_device_properties(rt.device)
            env.update(gpu_name=torch.cuda.get_device_name(rt.device), gpu_memory_bytes=int(props.total_memory),
                       compute_capability=f"{props.major}.{props.minor}", driver=used_before.get("driver"),
                       driver_cuda=used_before.get("driver_cuda"),
                       allocator_backend=torch.cuda.get_allocator_backend())
    else:
        env.update(gpu_name=None, cpu_name=_cpu_name(), cpu_threads=torch.get_num_threads())
    if cuda:
        env["PYTORCH_CUDA_ALLOC_CONF"] = os.environ.get("PYTORCH_CUDA_ALLOC_CONF")
        env["inherited_alloc_conf"] = inherited_conf  # what the calling environment had (replaced)
        with contextlib.suppress(Exception):
            env["allocator_settings"] = str(torch._C._accelerator_getAllocatorSettings())
    else:
        env["PYTORCH_CUDA_ALLOC_CONF"] = None
        null_reasons["PYTORCH_CUDA_ALLOC_CONF"] = "CUDA-only; expandable_segments has no effect on the CPU"
    result.update(memory=memory, cuda=(cuda_info or None), timing=timing or None, shape=shape or None,
                  environment=env, notes=notes, null_reasons=null_reasons,
                  process_wall_s=round(time.perf_counter() - wall0, 3))
    return result


# --------------------------------------------------------------------------------------------------
# isolation: one process per configuration


def _tail(path: Path, lines: int = 6) -> str:
    with contextlib.suppress(OSError):
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        return " | ".join(line.strip() for line in text[-lines:])[-600:]
    return ""


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def run_isolated(job: dict, isolation: str, timeout_s: float, workdir: Path) -> dict:
    """Run ``run_config(job)`` in a child process (fork or a fresh interpreter); a crash, a kill or a
    timeout becomes a result with that status."""
    cid = job["id"]
    result_path, log_path = workdir / f"{cid}.result.json", workdir / f"{cid}.log"
    start = time.perf_counter()
    if isolation == "fork":
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child
            code = 1
            try:
                os.setpgid(0, 0)
                fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                # the inherited sys.stdout/stderr may not write to fds 1/2 (e.g. under pytest's capture)
                sys.stdout = open(1, "w", buffering=1, closefd=False, encoding="utf-8", errors="replace")  # noqa: SIM115
                sys.stderr = open(2, "w", buffering=1, closefd=False, encoding="utf-8", errors="replace")  # noqa: SIM115
                res = run_config(job)
                result_path.write_text(json.dumps(res), encoding="utf-8")
                code = 0
            except BaseException:  # noqa: BLE001 (reported through the log; never return into the parent's code)
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        status, timed_out = None, False
        deadline = start + timeout_s
        while status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
            elif time.perf_counter() > deadline:
                timed_out = True
                _kill_group(pid)
                _, status = os.waitpid(pid, 0)
            else:
                time.sleep(0.05)
        exit_desc = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}")
    else:
        job_path = workdir / f"{cid}.job.json"
        job_path.write_text(json.dumps(job), encoding="utf-8")
        with open(log_path, "w", encoding="utf-8") as log:
            proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", str(job_path),
                                     str(result_path)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            timed_out = False
            try:
                code = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc.pid)
                code = proc.wait()
        exit_desc = f"signal {-code}" if code < 0 else f"exit {code}"
    wall = time.perf_counter() - start
    if result_path.exists() and not timed_out:
        res = json.loads(result_path.read_text(encoding="utf-8"))
    else:
        tail = _tail(log_path)
        if timed_out:
            res = {"status": "timeout", "reason": f"killed after the per-config limit of {timeout_s:.0f} s"}
        else:
            oom = "out of memory" in tail.lower() or exit_desc == "signal 9"
            res = {"status": "oom" if oom else "crashed",
                   "reason": f"process ended without a result ({exit_desc})" + (f": {tail}" if tail else "")}
    res["wall_s"] = round(wall, 2)
    res["isolation"] = isolation
    return res


# --------------------------------------------------------------------------------------------------
# estimate, rows, merge, files


def gpuplan_estimate(cfg: Config, hf_config: dict, seq_len: int, micro_batch: int) -> dict:
    """gpuplan.core.memory.training's allocated peak for this configuration, where gpuplan models it."""
    if cfg.lora or cfg.fp8:
        return {"allocated_bytes": None, "note": "not estimated: gpuplan profile's estimate has no LoRA / float8 path"}
    try:
        from gpuplan.profile.trial_plan import TrialSettings, estimated_peak_bytes

        settings = TrialSettings(model=cfg.model, seq_len=seq_len, micro_batch=micro_batch,
                                 precision="fp32-autocast" if cfg.precision == "amp" else "bf16",
                                 recompute=cfg.recompute)
        value = int(estimated_peak_bytes(settings, hf_config, cfg.model, 1, "none"))
    except Exception as exc:  # noqa: BLE001 (an estimate is optional)
        return {"allocated_bytes": None, "note": f"not estimated: {_first_line(exc)}"}
    note = "gpuplan.profile.trial_plan.estimated_peak_bytes (gpuplan.core.memory.training, allocated, no context/cache)"
    if cfg.recompute == "selective":
        note += "; gpuplan's 'selective' is Korthikanti's (drop attention s^2 terms), not the op-level SAC measured"
    if cfg.compile:
        note += "; torch.compile is not modelled"
    return {"allocated_bytes": value, "note": note}


def config_fields(cfg: Config, dry: bool, job: dict | None) -> dict:
    out = {k: v for k, v in asdict(cfg).items() if k != "gpu_seconds"}
    out["estimated_gpu_seconds"] = cfg.gpu_seconds
    out["recompute_detail"] = {"selective": SELECTIVE_DETAIL, "full": FULL_DETAIL}.get(cfg.recompute, "none")
    out["optimizer"] = "adamw (torch.optim.AdamW, foreach=True)"
    out["alloc_conf"] = f"expandable_segments:{'True' if cfg.expandable_segments else 'False'}"
    if job is not None:
        out.update(measured_seq_len=job["seq_len"], measured_micro_batch=job["micro_batch"],
                   measured_layers=job["hf_config"].get("num_hidden_layers"))
    if dry:
        out["dry_shape"] = dict(DRY_SHAPE, seq_len=DRY_SEQ_LEN, micro_batch=DRY_MICRO_BATCH)
    return out


def merge_rows(existing: list[dict], new: list[dict]) -> list[dict]:
    """Rows keyed by (gpu, id): a new row replaces the old one with the same key, except that a
    skipped / unsupported / timed-out row does not replace an 'ok' measurement; rows of other GPUs and
    other ids are kept in their order, new keys are appended."""
    def key(row: dict) -> tuple:
        return (row.get("gpu"), row.get("id"))

    weak = {"skipped", "unsupported", "timeout"}
    merged = {key(r): r for r in existing if isinstance(r, dict)}
    for row in new:
        old = merged.get(key(row))
        if old is not None and old.get("status") == "ok" and row.get("status") in weak:
            continue
        merged[key(row)] = row
    return list(merged.values())


def read_document(path: Path) -> dict:
    import yaml

    if not path.exists():
        return {}
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return doc if isinstance(doc, dict) else {}


def build_document(existing: dict, rows: list[dict], dry: bool) -> dict:
    return {
        "generated_by": "scripts/gpu_memory_check.py" + (" --dry-run (CPU, tiny shapes)" if dry else ""),
        "dry_run": dry,
        "units": UNITS,
        "key": "gpu + id (merged: other GPUs' rows are kept; see merge_rows)",
        "matrix": matrix_ids(),
        "measurements": merge_rows(existing.get("measurements") or [], rows),
    }


def write_yaml_atomic(path: Path, doc: dict) -> None:
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yaml.safe_dump(doc, handle, sort_keys=False, width=120, allow_unicode=True)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def summary_line(row: dict) -> str:
    status, mem, timing = row["status"], row.get("memory") or {}, row.get("timing") or {}
    if status != "ok":
        return f"{row['id']}: {status.upper()} ({row.get('reason')}) [{row.get('wall_s', 0)} s]"
    alloc, res = mem.get("peak_allocated_bytes"), mem.get("peak_reserved_bytes")
    parts = [f"alloc {alloc / GiB:.3f} GiB" if alloc is not None else "alloc n/a"]
    if res is not None:
        parts.append(f"reserved {res / GiB:.3f} GiB ({mem['reserved_over_allocated']:.3f}x)")
    ctx = (row.get("cuda") or {}).get("context_bytes")
    if ctx is not None:
        parts.append(f"context {ctx / 2**20:.0f} MiB")
    parts.append(f"step {timing['step_time_s']:.4f} s")
    return f"{row['id']}: ok {', '.join(parts)} [{row.get('wall_s', 0)} s]"


# --------------------------------------------------------------------------------------------------
# main


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Measure real allocated/reserved memory peaks of a training matrix "
                                            "(see docs/gpu-check.md).")
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                   help="auto: CUDA when present, else the dry run; cuda: fail (exit 2) without CUDA; cpu: dry run")
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny shapes, every configuration the libraries allow")
    p.add_argument("--out", help="YAML to merge into (default: the package's reference file; required to differ "
                                 "from it in the dry run, default there: a file in the temp folder)")
    p.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S, help="overall time budget in seconds")
    p.add_argument("--only", action="append", default=[],
                   help="run only config ids containing this text (repeatable)")
    p.add_argument("--isolation", choices=("auto", "fork", "spawn"), default="auto",
                   help="per-config process: spawn = fresh interpreter (auto on CUDA), fork = fork of this "
                        "process, which never initialises CUDA (auto in the dry run)")
    p.add_argument("--list", action="store_true", help="print the matrix (id, estimated GPU seconds) and exit")
    p.add_argument("--worker", nargs=2, metavar=("JOB", "RESULT"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _worker(job_path: str, result_path: str) -> int:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    res = run_config(job)
    Path(result_path).write_text(json.dumps(res), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.worker:
        return _worker(*args.worker)
    if args.list:
        for cfg in MATRIX:
            print(f"{cfg.id}\t{cfg.gpu_seconds:.0f} s")
        print(f"total\t{sum(c.gpu_seconds for c in MATRIX):.0f} s")
        return 0
    # torch.cuda.is_available() through NVML: this process never initialises CUDA (fork-safe).
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    try:
        import torch
    except ImportError:
        print("gpu_memory_check: needs torch (and transformers): pip install -e '.[profile]'", file=sys.stderr)
        return 2
    has_cuda = torch.cuda.is_available()
    if args.device == "cuda" and not has_cuda:
        build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}, no visible GPU"
        print(f"gpu_memory_check: --device cuda but CUDA is not available (torch {torch.__version__}: {build}); "
              "use --dry-run", file=sys.stderr)
        return 2
    dry = args.dry_run or args.device == "cpu" or not has_cuda
    if dry:
        out = Path(args.out) if args.out else Path(tempfile.gettempdir()) / "gpu_memory_check_dry_run.yaml"
        if out.resolve() == REFERENCE.resolve():
            print(f"gpu_memory_check: the dry run never writes the reference file {REFERENCE}; give another --out",
                  file=sys.stderr)
            return 2
    else:
        out = Path(args.out) if args.out else REFERENCE
    isolation = args.isolation if args.isolation != "auto" else ("fork" if dry else "spawn")
    configs = [c for c in MATRIX if not args.only or any(s in c.id for s in args.only)]
    if not configs:
        print(f"gpu_memory_check: no config id contains {args.only}; see --list", file=sys.stderr)
        return 2
    if isolation == "fork":  # imported once here, inherited by every child
        import torch.distributed._tools.mem_tracker
        import transformers  # noqa: F401
        from transformers.models.llama import modeling_llama  # noqa: F401

        import gpuplan.profile._trackers
        import gpuplan.profile._trial_runtime  # noqa: F401
        if torch.cuda.is_initialized():
            isolation = "spawn"
    device_type = "cpu" if dry else "cuda"
    nvml = None if dry else nvml_reading()
    gpu = DRY_GPU_NAME if dry else (nvml["name"] or "unknown CUDA GPU")
    steps = STEPS["dry" if dry else "cuda"]
    print(f"gpu_memory_check: {'DRY RUN on the CPU' if dry else gpu}, {len(configs)} configs, budget "
          f"{args.budget_s:.0f} s, isolation {isolation}, writing {out}", flush=True)
    t_start = time.perf_counter()
    rows: list[dict] = []
    spent_actual = spent_estimated = 0.0
    with tempfile.TemporaryDirectory(prefix="gpu_memory_check.") as tmp:
        for cfg in configs:
            hf_config = hf_config_for(cfg, dry)
            seq, mb = (DRY_SEQ_LEN, DRY_MICRO_BATCH) if dry else (cfg.seq_len, cfg.micro_batch)
            job = {"id": cfg.id, "config": asdict(cfg), "dry_run": dry, "device": device_type, "hf_config": hf_config,
                   "seq_len": seq, "micro_batch": mb, "compile_backend": "aot_eager" if dry else "inductor", **steps}
            row = {"gpu": gpu, "id": cfg.id, "dry_run": dry,
                   "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "config": config_fields(cfg, dry, job)}
            # the estimates scaled by how much longer the configs run so far took (never scaled down)
            scale = max(1.0, spent_actual / spent_estimated) if spent_estimated else 1.0
            estimate_s = (DRY_SECONDS if dry else cfg.gpu_seconds) * scale
            elapsed = time.perf_counter() - t_start
            why = unsupported_reason(cfg, dry)
            if why is not None:
                row.update(status="unsupported", reason=why)
            elif elapsed + estimate_s > args.budget_s:
                row.update(status="skipped", reason=f"time budget: {elapsed:.0f} s spent + ~{estimate_s:.0f} s "
                                                    f"estimated (x{scale:.2f} from the runs so far) > --budget-s "
                                                    f"{args.budget_s:.0f}")
            else:
                timeout = min(max(60.0, 4 * estimate_s), args.budget_s - elapsed)
                res = run_isolated(job, isolation, timeout, Path(tmp))
                spent_actual += res["wall_s"]
                spent_estimated += DRY_SECONDS if dry else cfg.gpu_seconds
                row.update(status=res.pop("status"), reason=res.pop("reason", None), **res)
                row["estimate"] = gpuplan_estimate(cfg, hf_config, seq, mb)
            if cfg.compile:
                row["config"]["compile_backend"] = job["compile_backend"] + (
                    " (dry run: inductor's C++ build of one layer takes ~33 s cold on 2 CPU cores)" if dry else "")
            rows.append(row)
            print(summary_line(row), flush=True)
    if not dry and nvml is not None:
        for row in rows:
            row.setdefault("environment", {}).setdefault("driver", nvml["driver"])
    doc = build_document(read_document(out), rows, dry)
    write_yaml_atomic(out, doc)
    counts: dict = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    total = time.perf_counter() - t_start
    summary = (f"gpu_memory_check: {len(rows)} configs in {total:.1f} s "
               f"({', '.join(f'{v} {k}' for k, v in counts.items())}); wrote {out}")
    print(summary, flush=True)
    out_dir = os.environ.get("OUT")
    if out_dir:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, Path(out_dir) / OUT_NAME)
        lines = [summary_line(r) for r in rows] + [summary]
        (Path(out_dir) / SUMMARY_NAME).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"gpu_memory_check: copied to {out_dir}/{OUT_NAME} and {SUMMARY_NAME}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
