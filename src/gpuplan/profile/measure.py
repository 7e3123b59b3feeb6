"""Measure the training memory of a Hugging Face model on a CPU, without a GPU and without weights.

The model is built from its config dict inside ``FakeTensorMode`` (tensors carry shape, dtype
and device but no storage), then two real training steps run through it (the first creates
the optimizer states, the second is the steady state): forward with ``labels = input_ids``
(HF computes the loss), backward, an optimizer step, ``zero_grad``. A memory tracker
from ``torch.distributed._tools`` sees every tensor that op dispatch creates or frees and
attributes it to a category (parameters, gradients, activations, ...). Fake-tensor accounting
equals what the CPU allocator really hands out for the same program, and CPU SDPA saves the
same tensors as CUDA flash attention, so the numbers stand for the GPU run of the same step
(allocated bytes; allocator caching/fragmentation and the CUDA context are not included).

torch and transformers are imported inside the functions only: ``import gpuplan.profile``
stays light. See docs/measure.md for the traps this module defends against.
"""

from __future__ import annotations

import contextlib
import gc
import platform
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from gpuplan.adapters.config_fields import kernel_refusal, static_rope, transformers_quiet
from gpuplan.errors import InputError
from gpuplan.profile.fake_distributed import enter_fake_process_group, shard

MODTRACKER_REENTRY = "The module hierarchy tracking maybe be messed up"  # torch ModTracker's re-entry warning, as spelt

PRECISIONS = ("bf16", "fp32-autocast")
OPTIMIZERS = ("adamw", "adam", "sgd")
RECOMPUTE = ("none", "full")
ATTENTIONS = ("sdpa", "eager")
PHASES = ("forward", "backward", "optimizer_step")
CATEGORIES = ("param", "buffer", "grad", "activation", "temp", "optimizer_state")

# Tracker reference types (enum member names of _MemRefType / _FSDPRefType) -> our categories.
# Model inputs (input_ids, which also serve as labels) count as activation memory.
_CATEGORY_OF = {
    "PARAM": "param", "SHARDED_PARAM": "param", "UNSHARDED_PARAM": "param", "BUFFER": "buffer",
    "GRAD": "grad", "SHARDED_GRAD": "grad", "UNSHARDED_GRAD": "grad",
    "ACT": "activation", "OTH": "activation", "INP": "activation",
    "TEMP": "temp", "ALL_GATHER": "temp", "REDUCE_SCATTER": "temp", "OPT": "optimizer_state",
}

# Settings that legitimately differ between two depths of the same measurement.
_DEPTH_KEYS = ("num_layers", "num_params")

_MISSING_BACKEND = "needs the profile extra: pip install 'gpuplan[profile]'"


@dataclass(frozen=True)
class MemoryMeasurement:
    """Tracked (allocated) memory of training steps on one rank, in bytes (max over steps 1-2)."""

    peak_bytes: int  # global peak of tracked memory on one rank
    peak_phase: str  # "forward" | "backward" | "optimizer_step"
    at_peak: dict[str, int]  # bytes by category at the peak moment
    max_by_category: dict[str, int]  # each category's own maximum over the step
    activation_bytes_end_of_forward: int  # activations held after forward+loss, before backward
    settings: dict  # what was measured (model summary, sizes, recipe, ...)
    versions: dict  # torch, transformers, python
    wall_seconds: float
    # Extra detail (not needed by most callers):
    # phase -> {"total": bytes, <category>: bytes} at that phase's own peak; used by
    # extrapolate_to_depth so that a peak that moves between phases extrapolates correctly.
    phase_peaks: dict[str, dict[str, int]] = field(default_factory=dict)
    # phase -> each category's own maximum within that phase.
    phase_max_by_category: dict[str, dict[str, int]] = field(default_factory=dict)
    # the tracker's own categories at the peak (e.g. FSDP "Sharded Param", "All Gather").
    raw_at_peak: dict[str, int] = field(default_factory=dict)

    @property
    def peak_gib(self) -> float:
        return self.peak_bytes / 2**30


# --------------------------------------------------------------------------------------------
# validation


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(name, value, "a positive integer")
    return value


def _one_of(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InputError(name, value, f"one of {', '.join(allowed)}")
    return value


def _validate(hf_config, micro_batch, seq_len, precision, optimizer, foreach, recompute,
              attention, world_size, num_layers) -> None:
    if not isinstance(hf_config, Mapping) or not isinstance(hf_config.get("model_type"), str):
        raise InputError("hf_config", type(hf_config).__name__ if not isinstance(hf_config, Mapping)
                         else hf_config.get("model_type"),
                         "a Hugging Face config dict with a 'model_type' string")
    _positive_int("micro_batch", micro_batch)
    _positive_int("seq_len", seq_len)
    _positive_int("world_size", world_size)
    if num_layers is not None:
        _positive_int("num_layers", num_layers)
    _one_of("precision", precision, PRECISIONS)
    _one_of("optimizer", optimizer, OPTIMIZERS)
    _one_of("recompute", recompute, RECOMPUTE)
    _one_of("attention", attention, ATTENTIONS)
    if not isinstance(foreach, bool):
        raise InputError("foreach", foreach, "true or false")


def _import_backends():
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise InputError("measure", "torch", _MISSING_BACKEND) from exc
    return torch, transformers


# --------------------------------------------------------------------------------------------
# model construction helpers


def causal_lm(transformers, text_cfg, attention: str, dtype):
    """A random-init causal LM of ``text_cfg`` (measure's and the trial's), transformers' lines silenced and the loss
    its loss_function falls back to for a class it cannot name (GPT-2) set without its stderr line."""
    with transformers_quiet(transformers):
        model = transformers.AutoModelForCausalLM.from_config(text_cfg, attn_implementation=attention, dtype=dtype)
    model.loss_type = model.loss_type or "ForCausalLM"
    return model


def _build_config(transformers, hf_config: Mapping, num_layers: int | None):
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    from gpuplan.adapters.config_fields import check_transformers_defaults, transformers_refusal

    # a classification head's labels, unread by a causal LM: num_labels 1e9 built 1e9 names (hostile w30: a hang)
    cfg = {k: v for k, v in hf_config.items() if k not in ("num_labels", "id2label", "label2id")}
    model_type, version = cfg.pop("model_type"), transformers.__version__
    if model_type not in CONFIG_MAPPING:
        raise InputError("hf_config.model_type", model_type, f"a model type this transformers ({version}) knows")
    try:  # GenerationConfig as the model's __init__ builds it: max_new_tokens -5 raised there (exit 70, hostile w30)
        with transformers_quiet(transformers):
            config = transformers.AutoConfig.for_model(model_type, **cfg)
            transformers.GenerationConfig.from_model_config(config.get_text_config(decoder=True))
    except Exception as exc:  # noqa: BLE001 - its field checks (StrictDataclassError, ValueError): exit 70 before
        raise transformers_refusal(exc, version) from None
    text = config.get_text_config()
    check_transformers_defaults(text)
    for built in {id(config): config, id(text): text}.values():  # what forward returns, not the model (hostile w30):
        # return_dict false made it a tuple, and `.loss` ended measure and profile in exit 70; the hidden states and
        # attention maps it may return beside the loss are no part of the estimate (Trainer reads outputs[0] then)
        built.return_dict, built.output_hidden_states, built.output_attentions = True, False, False
    full_layers = getattr(text, "num_hidden_layers", None)
    if num_layers is not None:
        if full_layers is None:
            raise InputError("num_layers", num_layers, "a config with num_hidden_layers")
        text.num_hidden_layers = num_layers
        # Per-layer lists must match the depth (e.g. Gemma/Qwen sliding/full attention pattern).
        layer_types = getattr(text, "layer_types", None)
        if isinstance(layer_types, (list, tuple)) and len(layer_types) != num_layers:
            reps = -(-num_layers // max(len(layer_types), 1))
            text.layer_types = (list(layer_types) * reps)[:num_layers]
    return config, text, full_layers


def _make_optimizer(torch, params, optimizer: str, foreach: bool):
    if optimizer == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, foreach=foreach)
    if optimizer == "adam":
        return torch.optim.Adam(params, lr=1e-4, foreach=foreach)
    return torch.optim.SGD(params, lr=1e-4, momentum=0.9, foreach=foreach)


def _categorise(breakdown: Mapping) -> tuple[dict[str, int], dict[str, int]]:
    """Tracker snapshot {reftype: bytes} -> (our six categories, the tracker's own names)."""
    from torch.distributed._tools.mem_tracker import _TOTAL_KEY

    cats = dict.fromkeys(CATEGORIES, 0)
    raw: dict[str, int] = {}
    for key, val in breakdown.items():
        if key == _TOTAL_KEY:
            continue
        cats[_CATEGORY_OF[key.name]] += int(val)
        if val:
            raw[key.value] = int(val)
    return cats, raw


# --------------------------------------------------------------------------------------------
# public API


def measure_training_memory(
    hf_config: dict,
    *,
    micro_batch: int = 1,
    seq_len: int = 2048,
    precision: str = "bf16",
    optimizer: str = "adamw",
    foreach: bool = True,
    recompute: str = "none",
    attention: str = "sdpa",
    world_size: int = 1,
    num_layers: int | None = None,
) -> MemoryMeasurement:
    """Track the memory of training (forward+loss, backward, optimizer step) on one rank.

    Two steps are tracked; the peak is the larger of the two (in practice the second, when the
    optimizer states already exist during forward and backward).

    ``precision="bf16"``: parameters, gradients and optimizer states in bf16 (pure bf16).
    ``precision="fp32-autocast"``: fp32 parameters/gradients/states; compute in bf16 via
    ``torch.autocast`` (world_size 1) or an FSDP2 ``MixedPrecisionPolicy(param_dtype=bf16,
    reduce_dtype=fp32)`` (world_size > 1). ``world_size > 1`` shards with FSDP2 (``fully_shard``
    per decoder layer and at the root) over a fake process group and reports rank 0.
    ``num_layers`` overrides the depth (see :func:`extrapolate_to_depth`).
    """
    return _measure(hf_config, micro_batch=micro_batch, seq_len=seq_len, precision=precision,
                    optimizer=optimizer, foreach=foreach, recompute=recompute, attention=attention,
                    world_size=world_size, num_layers=num_layers)


def _measure(
    hf_config: dict,
    *,
    micro_batch: int = 1,
    seq_len: int = 2048,
    precision: str = "bf16",
    optimizer: str = "adamw",
    foreach: bool = True,
    recompute: str = "none",
    attention: str = "sdpa",
    world_size: int = 1,
    num_layers: int | None = None,
    # Test hooks: switch a trap defence off, or use the stock (slow) tracker, to show it matters.
    _tracker: str = "fast",
    _patch_packed_mask: bool = True,
    _patch_sharding_fake_mode: bool = True,
    _keep_outputs: bool = True,
) -> MemoryMeasurement:
    t0 = time.perf_counter()
    _validate(hf_config, micro_batch, seq_len, precision, optimizer, foreach, recompute,
              attention, world_size, num_layers)
    torch, transformers = _import_backends()

    import transformers.masking_utils as masking_utils
    from torch._subclasses.fake_tensor import FakeTensorMode

    from gpuplan.profile import _trackers

    config, text_cfg, full_layers = _build_config(transformers, hf_config, num_layers)
    static_rope(text_cfg)  # Trap 7: a fake tensor cannot say whether dynamic NTK RoPE grows (adapters.config_fields)
    n_layers = text_cfg.num_hidden_layers
    vocab = text_cfg.vocab_size
    fsdp = world_size > 1
    param_dtype = torch.bfloat16 if precision == "bf16" else torch.float32

    with contextlib.ExitStack() as stack:
        # Trap 1: model.to(dtype) fails under FakeTensorMode, so the model is built with the
        # wanted default dtype (and an explicit dtype: from_config otherwise honours the config's
        # own torch_dtype, e.g. float16 for Llama-2). Restored before the step runs.
        old_default_dtype = torch.get_default_dtype()
        stack.callback(torch.set_default_dtype, old_default_dtype)

        # Trap 2: HF treats fake tensors as "tracing", cannot rule out packed sequences and
        # builds a [b,1,s,s] mask that SDPA then saves in every layer. Training on unpacked
        # sequences never builds it, so tell the mask code there is no packing.
        if _patch_packed_mask:
            orig_find = masking_utils.find_packed_sequence_indices
            masking_utils.find_packed_sequence_indices = lambda *a, **k: None
            stack.callback(setattr, masking_utils, "find_packed_sequence_indices", orig_find)

        mesh = None
        if fsdp:  # the device mesh is built from a real tensor: before FakeTensorMode
            mesh = enter_fake_process_group(stack, world_size, _patch_sharding_fake_mode)

        stack.enter_context(FakeTensorMode())  # Trap 6: device stays "cpu"; fake "cuda" aborts a CPU build of torch

        torch.set_default_dtype(param_dtype)
        try:
            model = causal_lm(transformers, text_cfg, attention, param_dtype)  # multimodal: the language model only
        except ValueError as exc:
            if "attention implementation" in str(exc) or "attn_implementation" in str(exc):
                raise kernel_refusal(attention, exc, "attention") from exc
            if "Unrecognized configuration class" in str(exc):
                raise InputError("hf_config.model_type", hf_config["model_type"], "a model type with a causal-LM "
                                 "class in transformers") from exc
            raise
        finally:
            torch.set_default_dtype(old_default_dtype)
        model.train()
        if recompute == "full":
            if hasattr(model, "activation_checkpointing_enable"):
                model.activation_checkpointing_enable()
            else:  # transformers < 5
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        num_params = sum(p.numel() for p in model.parameters())
        model_class = type(model).__name__

        mixed = "none" if precision == "bf16" else ("fsdp-mp-policy" if fsdp else "autocast")
        if fsdp:
            shard(model, n_layers, mesh, torch, precision)

        opt = _make_optimizer(torch, model.parameters(), optimizer, foreach)
        input_ids = torch.randint(0, vocab, (micro_batch, seq_len), dtype=torch.long)

        if fsdp:
            cls = _trackers.FastFSDPMemTracker if _tracker == "fast" else _trackers.StockFSDPMemTracker
            tracker = cls(model, opt)
            tracker.track_inputs((input_ids,))
        else:
            cls = _trackers.FastMemTracker if _tracker == "fast" else _trackers.StockMemTracker
            tracker = cls()
            tracker.track_external(model, opt, input_ids)
        _trackers.tag_optimizer_states(tracker, opt)
        tracker.category_of = {m: _CATEGORY_OF[m.name] for m in tracker._ref_class}

        def autocast():
            if mixed == "autocast":
                return torch.autocast("cpu", dtype=torch.bfloat16)
            return contextlib.nullcontext()

        def train_step() -> dict[str, int]:
            tracker.phase = "forward"
            with autocast():
                outputs = model(input_ids=input_ids, labels=input_ids, use_cache=False)
            if not _keep_outputs:  # a loop that keeps only the loss: logits freed before backward
                outputs = SimpleNamespace(loss=outputs.loss)
            act, _ = _categorise(tracker._current_totals())
            tracker.phase = "backward"
            outputs.loss.backward()  # the output (bf16 logits) stays alive through backward
            del outputs
            tracker.phase = "optimizer_step"
            opt.step()
            tracker.phase = "zero_grad"
            opt.zero_grad(set_to_none=True)
            return act

        # ModTracker's re-entry warning (a shared rotary or norm module) touches per-module attribution
        # only, not read here (the global and per-phase peaks are): kept off the user's terminal
        with warnings.catch_warnings(), tracker:
            warnings.filterwarnings("ignore", message=MODTRACKER_REENTRY, category=UserWarning)
            train_step()  # first step: creates the optimizer states
            tracker.reset_mod_stats()  # the stock trackers refuse a second root forward otherwise
            act_end = train_step()  # steady state: states live through forward and backward
            tracker.phase = "done"

        peak_snap = {}
        for dev_snap in tracker.get_tracker_snapshot("peak").values():
            for k, v in dev_snap.items():
                peak_snap[k] = peak_snap.get(k, 0) + v
        at_peak, raw_at_peak = _categorise(peak_snap)
        peak_bytes = sum(at_peak.values())
        max_by_category = {k: int(tracker.category_max.get(k, 0)) for k in CATEGORIES}
        phase_peaks, phase_max = {}, {}
        for phase in PHASES:
            if phase in tracker.phase_peaks:
                cats, _ = _categorise(tracker.phase_peaks[phase])
                phase_peaks[phase] = {"total": sum(cats.values()), **cats}
                phase_max[phase] = {k: int(tracker.phase_category_max[phase].get(k, 0))
                                    for k in CATEGORIES}
        peak_phase = tracker.peak_phase
        del tracker, opt, model, input_ids
    gc.collect()

    settings = {
        "model_type": hf_config["model_type"],
        "model_class": model_class,
        "hidden_size": getattr(text_cfg, "hidden_size", None),
        "intermediate_size": getattr(text_cfg, "intermediate_size", None),
        "num_attention_heads": getattr(text_cfg, "num_attention_heads", None),
        "num_key_value_heads": getattr(text_cfg, "num_key_value_heads", None),
        "vocab_size": vocab,
        "config_num_layers": full_layers,
        "num_layers": n_layers,
        "num_params": num_params,
        "micro_batch": micro_batch,
        "seq_len": seq_len,
        "precision": precision,
        "param_dtype": str(param_dtype).removeprefix("torch."),
        "mixed_precision": mixed,
        "optimizer": optimizer,
        "foreach": foreach,
        "recompute": recompute,
        "attention": attention,
        "world_size": world_size,
        "parallelism": "fsdp2" if fsdp else "none",
        "device": "cpu",
        "tracker": _tracker,
        "packed_mask_patch": _patch_packed_mask,
        "loop": "2 steps of: out = model(input_ids, labels=input_ids, use_cache=False); "
                "out.loss.backward(); del out; optimizer.step(); optimizer.zero_grad(); "
                "the second (steady-state) step and the first are both tracked",
        "outputs_kept_through_backward": _keep_outputs,
    }
    if fsdp:
        settings["sharding_fake_mode_patch"] = _patch_sharding_fake_mode
    return MemoryMeasurement(
        peak_bytes=peak_bytes,
        peak_phase=peak_phase,
        at_peak=at_peak,
        max_by_category=max_by_category,
        activation_bytes_end_of_forward=act_end["activation"],
        settings=settings,
        versions={"torch": torch.__version__, "transformers": transformers.__version__,
                  "python": platform.python_version()},
        wall_seconds=time.perf_counter() - t0,
        phase_peaks=phase_peaks,
        phase_max_by_category=phase_max,
        raw_at_peak=raw_at_peak,
    )
