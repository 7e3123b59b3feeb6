"""The description of one framework measurement and its result: the run (what to build and
train), the per-depth points, the extrapolated measurement, and the catalog model's shape.

Sizes are bytes of *allocated* tensor memory on rank 0. No torch import here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gpuplan.errors import InputError

GIB = 2**30
FRAMEWORKS = ("torchtitan", "megatron", "peft")
RECOMPUTE = ("none", "selective", "full")
LOSSES = ("ce", "chunked")
OPTIMIZER_IMPLS = ("foreach", "fused")
FLOAT8 = ("none", "rowwise", "tensorwise", "tensorwise+fp8-allgather")
RESHARD = ("default", "always", "never")
ATTENTIONS = ("sdpa", "local")
LORA_TARGETS = ("all-linear", "q,v")
MISSING_PACKAGE = "not installed: pip install -e '.[frameworks]'"


@dataclass(frozen=True)
class FrameworkRun:
    """One training configuration to measure with a framework's own code (rank 0 of the job).

    ``depths`` are decoder layers *per pipeline stage* (rank 0's stage); the full depth is the
    catalog model's ``num_hidden_layers / pp``. ``recompute``: "selective" is torchtitan's
    op-level SAC or Megatron's ``core_attn`` recompute; for PEFT "full" is HF gradient
    checkpointing. torchtitan has no real pipeline here: ``pp > 1`` emulates one PP stage's FSDP
    state (``microbatches`` sequential microbatches, no reshard, one grad sync).
    ``lora_rank = 0`` means a full fine-tune (PEFT only).
    """

    framework: str
    model: str = "llama-3.1-8b"
    depths: tuple[int, int] = (2, 4)
    seq_len: int = 2048
    micro_batch: int = 1
    dp: int = 1
    tp: int = 1
    pp: int = 1
    microbatches: int = 1
    recompute: str = "none"
    loss: str = "ce"  # torchtitan: "ce" or "chunked" (ChunkedLossWrapper)
    optimizer_impl: str = "foreach"
    float8: str = "none"  # torchtitan only
    reshard: str = "default"  # torchtitan fsdp_reshard_after_forward
    distributed_optimizer: bool = True  # megatron only
    attention: str = "sdpa"  # megatron: "local" keeps its unfused DotProductAttention
    lora_rank: int = 16  # peft only; 0 = full fine-tune
    lora_targets: str = "all-linear"
    autocast: bool = False  # peft: forward under torch.autocast(bf16) as HF Trainer(bf16=True)

    def __post_init__(self) -> None:
        _one_of("framework", self.framework, FRAMEWORKS)
        for name in ("seq_len", "micro_batch", "dp", "tp", "pp", "microbatches"):
            _positive_int(name, getattr(self, name))
        d = self.depths
        if not (isinstance(d, tuple) and len(d) == 2 and all(_is_pos_int(x) for x in d) and d[0] < d[1]):
            raise InputError("depths", d, "two increasing positive layer counts, e.g. (2, 4)")
        _one_of("recompute", self.recompute, RECOMPUTE)
        _one_of("loss", self.loss, LOSSES)
        _one_of("optimizer_impl", self.optimizer_impl, OPTIMIZER_IMPLS)
        _one_of("float8", self.float8, FLOAT8)
        _one_of("reshard", self.reshard, RESHARD)
        _one_of("attention", self.attention, ATTENTIONS)
        _one_of("lora_targets", self.lora_targets, LORA_TARGETS)
        if isinstance(self.lora_rank, bool) or not isinstance(self.lora_rank, int) or self.lora_rank < 0:
            raise InputError("lora_rank", self.lora_rank, "a non-negative integer (0 = full fine-tune)")

    @property
    def world_size(self) -> int:
        return self.dp * self.tp * self.pp

    def changed_fields(self) -> dict:
        """The fields that differ from the defaults (framework always included)."""
        out = {"framework": self.framework}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name != "framework" and value != f.default:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    def as_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


@dataclass(frozen=True)
class DepthPoint:
    """Rank 0's tracked memory at one depth (max over two training steps)."""

    layers: int
    peak_bytes: int
    peak_phase: str
    at_peak: dict[str, int]  # gpuplan categories (param, buffer, grad, activation, temp, optimizer_state)
    max_by_category: dict[str, int]  # each category's own maximum over the steps
    raw_at_peak: dict[str, int]  # the tracker's own labels at the peak
    phase_peaks: dict[str, dict[str, int]]  # phase -> {"total", categories} at that phase's own peak


@dataclass(frozen=True)
class FrameworkMeasurement:
    """Two reduced-depth measurements and their linear extrapolation to the full depth (bytes)."""

    run: FrameworkRun
    points: tuple[DepthPoint, DepthPoint]
    full_layers: int  # layers of rank 0's stage at full depth
    # Each phase's peak is a line through the two depths; the largest at full depth wins:
    # full_depth_peak_bytes = phase_peaks[phase]["total"] at depths[0] + (full_layers - depths[0]) * slope
    full_depth_peak_phase: str
    slope_bytes_per_layer: float  # of that phase's peak
    full_depth_peak_bytes: int
    full_depth_at_peak: dict[str, int]  # that phase's categories, extrapolated the same way
    activation_bytes_per_layer: float  # slope of the activation category's maximum
    activation_per_layer_sbh: float  # the same in units of seq_len * micro_batch * hidden bytes
    notes: tuple[str, ...]  # where the measured program differs from the framework's default
    patches: tuple[str, ...]  # every monkeypatch applied, with its reason
    versions: dict[str, str]
    wall_seconds: float

    @property
    def full_depth_peak_gib(self) -> float:
        return self.full_depth_peak_bytes / GIB

    def as_record(self) -> dict:
        """Plain data (for YAML): config, each depth, the extrapolation, notes, patches."""
        return {
            "id": run_id(self.run),
            "config": self.run.as_dict(),
            "depths": [{"layers": p.layers, "peak_bytes": p.peak_bytes, "peak_phase": p.peak_phase,
                        "at_peak": dict(p.at_peak), "phase_peak_bytes": {k: v["total"] for k, v in p.phase_peaks.items()},
                        "activation_max_bytes": p.max_by_category["activation"]} for p in self.points],
            "full_depth": {"layers": self.full_layers, "peak_phase": self.full_depth_peak_phase,
                           "slope_bytes_per_layer": self.slope_bytes_per_layer,
                           "peak_bytes": self.full_depth_peak_bytes,
                           "peak_gib": round(self.full_depth_peak_gib, 3),
                           "at_peak": dict(self.full_depth_at_peak)},
            "activation_bytes_per_layer": self.activation_bytes_per_layer,
            "activation_per_layer_sbh": round(self.activation_per_layer_sbh, 4),
            "notes": list(self.notes),
            "patches": list(self.patches),
            "wall_seconds": self.wall_seconds,
        }


def run_id(run: FrameworkRun) -> str:
    """A readable id from the fields that differ from the defaults."""
    parts = []
    for key, value in run.changed_fields().items():
        if key in ("framework", "model"):
            parts.append(str(value))
        elif isinstance(value, list):
            parts.append(f"{key}{'-'.join(map(str, value))}")
        else:
            parts.append(f"{key}={value}")
    return "_".join(parts)


# --------------------------------------------------------------------------------------------
# validation helpers


def _is_pos_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


def _positive_int(name: str, value) -> int:
    if not _is_pos_int(value):
        raise InputError(name, value, "a positive integer")
    return value


def _one_of(name: str, value, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InputError(name, value, f"one of {', '.join(allowed)}")
    return value


def require(condition: bool, name: str, value, expected: str) -> None:
    """Raise InputError(name, value, expected) unless ``condition``."""
    if not condition:
        raise InputError(name, value, expected)


# --------------------------------------------------------------------------------------------
# model shape from the catalog


@dataclass(frozen=True)
class ModelShape:
    hf_config: dict
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    layers: int
    rope_theta: float
    norm_eps: float
    max_positions: int
    tie_embeddings: bool
    llama3_rope_scaling: dict | None


def model_shape(model_id: str, llama_only: bool) -> ModelShape:
    """The catalog model's shape; ``llama_only`` refuses what a Llama-style decoder cannot build."""
    from gpuplan.catalog import model_entries
    from gpuplan.errors import unknown_name_error

    entries = model_entries()
    if model_id not in entries:
        raise unknown_name_error("model", model_id, entries)
    cfg = dict(entries[model_id]["config"])
    if llama_only:
        require(cfg.get("model_type") == "llama" and not cfg.get("attention_bias") and not cfg.get("mlp_bias"),
                "model", model_id, "a Llama-architecture catalog model (model_type llama, no biases)")
    heads = cfg["num_attention_heads"]
    scaling = cfg.get("rope_scaling") or None
    if scaling is not None and scaling.get("rope_type", scaling.get("type")) != "llama3":
        scaling = None if not llama_only else _refuse_scaling(model_id, scaling)
    return ModelShape(
        hf_config=cfg, hidden=cfg["hidden_size"], ffn=cfg["intermediate_size"], heads=heads,
        kv_heads=cfg.get("num_key_value_heads") or heads,
        head_dim=cfg.get("head_dim") or cfg["hidden_size"] // heads, vocab=cfg["vocab_size"],
        layers=cfg["num_hidden_layers"], rope_theta=float(cfg.get("rope_theta", 10000.0)),
        norm_eps=float(cfg.get("rms_norm_eps", 1e-5)),
        max_positions=int(cfg.get("max_position_embeddings", 4096)),
        tie_embeddings=bool(cfg.get("tie_word_embeddings", False)), llama3_rope_scaling=scaling)


def _refuse_scaling(model_id: str, scaling: dict):
    raise InputError("model", model_id, f"a model without rope scaling {scaling!r} (only llama3 scaling is built)")


