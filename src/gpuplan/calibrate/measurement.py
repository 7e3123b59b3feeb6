"""One measured training run, from a trial file or a training log, in the terms gpuplan predicts.

A :class:`Measurement` carries what was run (model, accelerator, layout, precision, sequence)
and what was measured (seconds per optimizer step, peak memory per GPU). Trial files carry all
of it; logs carry the measured numbers, and the run's description comes from the flags of
``gpuplan calibrate`` (:class:`LogContext`). Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuplan.core.frameworks import DEFAULT_FRAMEWORK
from gpuplan.errors import InputError

# trial precision -> (memory recipe, compute dtype of the matmuls). FSDP2 with fp32 parameters
# and a bf16 MixedPrecisionPolicy is the 'fsdp2' recipe; plain torch.autocast is 'amp'.
_PRECISION_RECIPES = {"bf16": ("bf16", "bf16"), "fp32": ("fp32", "fp32"), "fp32-autocast": ("amp", "bf16")}
# the memory model knows these optimizers; Adam keeps the same states as AdamW
_OPTIMIZERS = {"adamw": "adamw", "adam": "adamw", "sgd": "sgd"}


@dataclass(frozen=True)
class Measurement:
    """A measured run: its description (model, layout, precision) and its measured numbers."""

    source: str
    kind: str
    """'trial' (gpuplan profile), 'torchtitan', 'megatron', 'hf-trainer' or 'table'."""
    model: str
    """Catalog id or config.json path (used when ``hf_config`` is None)."""
    seq_len: int
    world_size: int = 1
    hf_config: dict | None = None
    """The exact HF config measured (trials: with the reduced depth)."""
    gpu: str | None = None
    """Hardware-catalog id; None for CPU trials and uncatalogued GPUs."""
    device: str = "cuda"
    cpu_matmul_flops: float | None = None
    """CPU trials: measured large-GEMM FLOP/s in the run's dtype (stands in for the peak)."""
    cpu_copy_bandwidth: float | None = None
    """CPU trials: measured memory copy bytes/s (stands in for HBM bandwidth)."""
    tp: int = 1
    pp: int = 1
    ep: int = 1
    zero: int = 0
    micro_batch: int = 1
    global_batch: int | None = None
    """Sequences per optimizer step; None = micro_batch x dp."""
    recipe: str = "bf16"
    implementation: str = "hf"
    dtype: str = "bf16"
    recompute: str = "none"
    optimizer: str = "adamw"
    step_time_s: float | None = None
    step_time_stdev_s: float | None = None
    peak_memory_bytes: float | None = None
    memory_kind: str | None = None
    """'allocated' (torch.cuda.max_memory_allocated / Megatron 'max allocated'), 'tracked' (CPU
    MemTracker: allocated tensor bytes) or 'reserved' (allocator reserve, e.g. torchtitan)."""
    memory_after_iteration: int | None = None
    """Megatron logs: the N of the memory line's '(after N iterations)'. 1: the peak of the first iteration, whose
    forward and backward ran before the optimizer's first step created its moments (calibrate.predict.memory_parts)."""
    samples: int = 0
    """Timed steps (trials) or log records used."""
    framework: str = ""
    """Whose code ran the step: 'hf' for trials (an eager transformers step: timed by core.time's op
    classes); for logs and tables calibrate's --framework (train's profile: calibrate.train_step); '' (a
    Measurement built before session 25): gpuplan's generic model."""
    options: tuple[tuple[str, Any], ...] = ()
    """Logs: the step options given to calibrate (calibrate.step_options.LOG_STEP_OPTIONS: --cp, --vpp, --tp-overlap,
    ...), as train parses them."""
    finetune: str = "full"
    lora_rank: int = 16
    attention: str = "sdpa"
    optimizer_impl: str = "foreach"
    environment: dict = field(default_factory=dict)
    """Where it ran: device, GPU name, catalog id, torch / transformers / peft versions (trials)."""
    notes: tuple[str, ...] = field(default=())
    unchecked: str = ""
    """What the checks of a log could not check, one line (calibrate.model_match.check_log_trained_model: a log
    that prints neither TFLOP/s nor MFU); the calibration's notes carry it. Empty: everything was checked."""

    @property
    def cp(self) -> int:
        """Context-parallel degree: --cp given to calibrate (a log's option), else 1."""
        return dict(self.options).get("cp") or 1

    @property
    def dp(self) -> int:
        return max(1, self.world_size // (self.tp * self.pp * self.cp))

    @property
    def label(self) -> str:
        where = self.gpu or self.device
        return f"{self.source} ({self.kind}, {self.model}, {self.world_size} x {where})"


def measurement_from_trial(data: dict, source: str) -> Measurement:
    """A validated trial file (see gpuplan.profile.measurement_file) as a Measurement."""
    env, config, results = data["environment"], data["config"], data["results"]
    s = config["settings"]
    recipe, dtype = _PRECISION_RECIPES.get(s["precision"], (None, None))
    if recipe is None:
        raise InputError("file", source, f"unknown precision {s['precision']!r} in config.settings")
    parallelism = s["parallelism"]
    if parallelism == "fsdp2" and recipe == "amp":
        recipe = "fsdp2"
    bench = env.get("cpu_microbenchmarks") or {}
    memory = results["memory"]
    world = int(env["world_size"])
    return Measurement(
        source=source, kind="trial", model=str(config["model"]), seq_len=int(s["seq_len"]), world_size=world,
        hf_config=config.get("hf_config"), gpu=env.get("catalog_gpu"), device=str(env["device_type"]),
        cpu_matmul_flops=bench.get("matmul_flops_per_s"), cpu_copy_bandwidth=bench.get("copy_bytes_per_s"),
        zero=3 if parallelism == "fsdp2" else 0, micro_batch=int(s["micro_batch"]),
        global_batch=int(s["micro_batch"]) * world, recipe=recipe, implementation="hf", dtype=dtype,
        recompute=str(s["recompute"]), optimizer=_OPTIMIZERS.get(str(s.get("optimizer", "adamw")), "adamw"),
        step_time_s=float(results["step_time_s"]["median"]),
        step_time_stdev_s=results["step_time_s"].get("stdev"),
        peak_memory_bytes=memory.get("peak_allocated_bytes"),
        memory_kind="allocated" if env["device_type"] == "cuda" else "tracked",
        samples=int(s.get("steps", 0)), framework="hf",
        finetune="lora" if s.get("lora_rank") else "full", lora_rank=int(s.get("lora_rank") or 16),
        attention=str(s.get("attention") or "sdpa"),  # null in a file: the trial's default
        optimizer_impl=str(s.get("optimizer_impl") or ("foreach" if s.get("foreach", True) else "forloop")),
        environment=trial_environment(env),
    )


ENVIRONMENT_KEYS = ("device_type", "device_name", "catalog_gpu", "torch", "transformers", "peft", "python",
                    "cuda", "driver")


def trial_environment(env: dict) -> dict:
    """The parts of a trial's environment a calibration records (what it is valid for)."""
    return {k: env[k] for k in ENVIRONMENT_KEYS if env.get(k) is not None}


@dataclass(frozen=True)
class LogContext:
    """What a training log does not say about its run (the flags of ``gpuplan calibrate``)."""

    model: str | None = None
    gpu: str | None = None
    gpus: int | None = None
    tp: int = 1
    pp: int = 1
    ep: int = 1
    zero: int | None = None
    micro_batch: int = 1
    global_batch: int | None = None
    seq_len: int | None = None
    recipe: str | None = None
    recompute: str = "none"
    dtype: str = "bf16"
    framework: str = ""
    """--framework: whose step train times the log with (calibrate.train_step); '' not given: the log format's
    (LOG_FRAMEWORKS)."""
    options: tuple[tuple[str, Any], ...] = ()
    """The step options given (calibrate.step_options.LOG_STEP_OPTIONS), (name, value) pairs."""

    @property
    def cp(self) -> int:
        """--cp given, else 1."""
        return dict(self.options).get("cp") or 1


# Per log format: the framework that writes it, whose step train times the log with when --framework is not given
# (a torchtitan log ran torchtitan, a Megatron log Megatron; a table states none: train's default). A Trainer log
# keeps the generic fused step it was timed with before session 25: its run's parallelism (DDP, FSDP or DeepSpeed
# under accelerate) and kernels are not in the log, and --framework hf (transformers' eager modules, data
# parallelism only) is the trial loop's; give --framework to say which.
LOG_FRAMEWORKS: dict[str, str] = {"torchtitan": "torchtitan", "megatron": "megatron", "hf-trainer": "generic"}


def log_framework(context_framework: str, fmt: str) -> str:
    """The framework a log of format ``fmt`` is timed under: the one given, else the format's, else train's default."""
    return context_framework or LOG_FRAMEWORKS.get(fmt, DEFAULT_FRAMEWORK)


# Per log format: (memory recipe, activation implementation, ZeRO stage) when not given. Since session 26 a log's memory
# and step are predicted as train builds them for the flags (calibrate.train_step.train_case: the framework's recipe
# and implementation unless --recipe / --implementation are given); the ZeRO stage here is still the layout's.
LOG_DEFAULTS: dict[str, tuple[str, str, int]] = {
    "torchtitan": ("fsdp2", "torchtitan", 3),  # torchtitan default: FSDP2 with fp32 params + bf16 MP
    "megatron": ("megatron", "megatron", 0),  # Megatron-LM without --use-distributed-optimizer
    "hf-trainer": ("amp", "hf", 0),  # Trainer with bf16=True: fp32 params + autocast, DDP
    "table": ("bf16", "hf", 0),
}


def require(context: LogContext, name: str, source: str, fmt: str) -> Any:
    value = getattr(context, name)
    if value is None:
        flag = "--" + name.replace("_", "-")
        raise InputError(flag, None, f"needed for {source} ({fmt} log): the log does not say it")
    return value
