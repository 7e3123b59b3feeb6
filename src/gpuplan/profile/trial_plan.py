"""Trial settings, the model config at the measured depth, and the will-it-fit check (stdlib only).

The check runs before torch allocates anything: gpuplan.core.memory.training estimates the allocated
peak per rank of the trial as configured (the same estimate the measurement is later compared
with) and compares it with the memory the device has. Too big at the requested depth but not at
one layer: the error names the deepest ``--layers`` that fits. Too big even at one layer: the
error says so (embeddings, LM head and the loss of a wide-vocabulary model do not shrink with
depth).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from gpuplan.core.units import format_bytes
from gpuplan.errors import InputError

PRECISIONS = ("bf16", "fp32", "fp32-autocast")
OPTIMIZERS = ("adamw", "sgd")
RECOMPUTE = ("none", "selective", "full")
OPTIMIZER_IMPLS = ("foreach", "fused", "forloop")
DEVICES = ("auto", "cpu", "cuda")
PARALLELISMS = ("auto", "fsdp2", "ddp")
ATTENTIONS = ("sdpa", "eager")
USABLE_CUDA_FRACTION = 0.95
"""Share of the GPU's memory a trial may plan to use (the CUDA context and cuBLAS workspaces
take the rest; pytorch/pytorch#107667: ~300 MB context with lazy loading)."""
USABLE_CPU_FRACTION = 0.8
"""Share of MemAvailable a CPU trial may plan to use."""
PROCESS_BYTES = 0.5 * 2**30
"""Per rank: the Python process with torch and transformers loaded (measured ~0.43 GB peak RSS
for gpuplan measure, docs/measure.md)."""


@dataclass(frozen=True)
class TrialSettings:
    """What to run. ``layers`` overrides the depth (same width: measure huge models small)."""

    model: str
    layers: int | None = None
    micro_batch: int = 1
    seq_len: int = 1024
    steps: int = 10
    warmup: int = 3
    precision: str = "bf16"
    precision_stated: bool = True
    """False where the user left --precision out: a CPU without native bf16 then runs fp32
    (gpuplan.profile.cpu_precision)."""
    recompute: str = "none"
    optimizer: str = "adamw"
    device: str = "auto"
    parallelism: str = "auto"
    """Multi-process runs (torchrun): 'fsdp2' (default: fully_shard per decoder layer + root) or 'ddp'."""
    attention: str = "sdpa"
    lora_rank: int | None = None
    """LoRA (peft) of this rank on every linear of the decoder layers; the base frozen (None: full)."""
    optimizer_impl: str = "foreach"
    """torch.optim's implementation: foreach (its CUDA default), fused or forloop."""
    peak_tflops: float | None = None
    """Dense peak TFLOP/s for MFU when the device is not in the catalog (or to override it)."""
    seed: int = 0

    def validate(self) -> None:
        for name in ("micro_batch", "seq_len", "steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(name, value, "a positive integer")
        if isinstance(self.warmup, bool) or not isinstance(self.warmup, int) or self.warmup < 0:
            raise InputError("warmup", self.warmup, "an integer >= 0")
        if self.layers is not None and (not isinstance(self.layers, int) or self.layers < 1):
            raise InputError("layers", self.layers, "a positive integer")
        for name, allowed in (("precision", PRECISIONS), ("recompute", RECOMPUTE), ("optimizer", OPTIMIZERS),
                              ("device", DEVICES), ("parallelism", PARALLELISMS), ("attention", ATTENTIONS),
                              ("optimizer_impl", OPTIMIZER_IMPLS)):
            if getattr(self, name) not in allowed:
                raise InputError(name, getattr(self, name), f"one of {', '.join(allowed)}")
        if self.lora_rank is not None and (isinstance(self.lora_rank, bool) or not isinstance(self.lora_rank, int)
                                           or self.lora_rank < 1):
            raise InputError("lora_rank", self.lora_rank, "a positive integer")
        if self.peak_tflops is not None and not self.peak_tflops > 0:
            raise InputError("peak_tflops", self.peak_tflops, "a positive number of dense TFLOP/s")


def model_config(model: str) -> tuple[dict[str, Any], str]:
    """(HF config dict, model id) for a catalog name, a Hub id, a config.json or a folder holding one."""
    from gpuplan.adapters.resolve import model_config as resolve

    config, name, _ = resolve(model)
    return config, name


def _text_part(config: dict[str, Any]) -> dict[str, Any]:
    inner = config.get("text_config")
    return inner if isinstance(inner, dict) and inner else config


def layer_count(config: dict[str, Any]) -> int:
    part = _text_part(config)
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        if isinstance(part.get(key), int):
            return part[key]
    raise InputError("model", config.get("model_type"), "a config with num_hidden_layers")


def config_with_layers(config: dict[str, Any], layers: int | None) -> dict[str, Any]:
    """A copy of ``config`` with ``layers`` decoder layers (same width); per-layer lists such as
    ``layer_types`` repeat their pattern to the new depth (as gpuplan measure does)."""
    cfg = copy.deepcopy(config)
    if layers is None:
        return cfg
    part = _text_part(cfg)
    keys = [k for k in ("num_hidden_layers", "n_layer", "num_layers") if k in part]
    if not keys:
        raise InputError("layers", layers, "a model config with num_hidden_layers")
    for key in keys:
        part[key] = layers
    types = part.get("layer_types")
    if isinstance(types, list) and types and len(types) != layers:
        part["layer_types"] = (types * (-(-layers // len(types))))[:layers]
    return cfg


def estimated_peak_bytes(settings: TrialSettings, config: dict[str, Any], model_id: str, world_size: int,
                         parallelism: str) -> float:
    """gpuplan.core.memory.training's allocated peak per rank for this trial (bytes)."""
    from gpuplan.calibrate import predict as P
    from gpuplan.calibrate.measurement import Measurement

    recipe = {"bf16": "bf16", "fp32": "fp32", "fp32-autocast": "fsdp2" if parallelism == "fsdp2" else "amp"}
    m = Measurement(source="(trial)", kind="trial", model=model_id, seq_len=settings.seq_len, world_size=world_size,
                    hf_config=config, device="cpu", zero=3 if parallelism == "fsdp2" else 0,
                    micro_batch=settings.micro_batch, recipe=recipe[settings.precision],
                    recompute=settings.recompute, optimizer=settings.optimizer, framework="hf",
                    finetune="lora" if settings.lora_rank else "full", lora_rank=settings.lora_rank or 16,
                    attention=settings.attention, optimizer_impl=settings.optimizer_impl)
    return P.memory_parts(P.case_of(m)).peak()


def check_fits(settings: TrialSettings, config: dict[str, Any], model_id: str, world_size: int,
               parallelism: str, device: str, usable_bytes: float, ranks_sharing: int) -> float:
    """Raise InputError unless the trial's estimated peak fits ``usable_bytes`` (shared by
    ``ranks_sharing`` ranks, e.g. all ranks of a CPU host). Returns the estimate per rank."""
    full = layer_count(config)
    requested = settings.layers or full
    extra = PROCESS_BYTES if device == "cpu" else 0.0

    def need(layers: int) -> float:
        peak = estimated_peak_bytes(settings, config_with_layers(config, layers), model_id, world_size, parallelism)
        return (peak + extra) * ranks_sharing

    required = need(requested)
    if required <= usable_bytes:
        return required / ranks_sharing - extra
    shape = (f"micro-batch {settings.micro_batch} x {settings.seq_len} tokens, {settings.precision}, "
             f"{world_size} rank(s)")
    if need(1) > usable_bytes:
        raise InputError("model", model_id, f"does not fit the {device} even at 1 layer: ~{format_bytes(need(1))} "
                         f"needed ({shape}) of {format_bytes(usable_bytes)} usable; shorten --seq-len, lower "
                         "--micro-batch, use more ranks (FSDP) or a bigger device")
    low, high = 1, requested  # need(low) fits, need(high) does not
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if need(mid) <= usable_bytes else (low, mid)
    raise InputError("layers", requested, f"~{format_bytes(required)} needed at {requested} layers ({shape}) but "
                     f"{format_bytes(usable_bytes)} usable on the {device}; it fits up to --layers {low}")
