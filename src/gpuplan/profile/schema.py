"""The inputs of ``gpuplan profile`` (also under ``torchrun -m gpuplan profile``), and the model
fields it shares with ``gpuplan measure``: both run a real model, so both need a model (no bare
--params) and offer only the choices they run (the help lists those, nothing more)."""

from __future__ import annotations

from typing import Annotated, Any, get_args

from pydantic import model_validator

from gpuplan.errors import InputError, whole_or
from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V
from gpuplan.schema.base import JobInputs
from gpuplan.schema.model_fields import ModelType


def _f(default, help: str, shown: str | None = None):
    return V.field(default, help, shown)


def narrowed(alias: Any, *choices: str, optional: bool = True) -> Any:
    """The shared option ``alias`` (same flag, help and default) taking only ``choices``: the
    command's --help lists, and its schema accepts, only what the command can run."""
    info = get_args(alias)[-1]
    kind = T.choice(*choices)
    return Annotated[kind | None, info] if optional else Annotated[kind, info]


def supported_model_types() -> tuple[str, ...]:
    from gpuplan.adapters.hf_config import supported_model_types as supported  # stdlib only, no torch

    return supported()


SupportedModelType = narrowed(ModelType, *supported_model_types())
"""--model-type, checked against gpuplan's model types before anything is built."""


class RealModelInputs(JobInputs):
    """A job that builds the model for real: a catalog name, a Hugging Face id or a config.json."""

    model: V.Model

    @model_validator(mode="after")
    def _need_model(self) -> RealModelInputs:
        if self.model is None:
            raise InputError("model", None, "give a model: a catalog name, a Hugging Face id or a config.json "
                             "(a bare --params count has no model to build)")
        return self

    def spec(self):
        """The ModelSpec of the model (read as --model-type where the job takes one)."""
        from gpuplan.adapters.resolve import resolve_model

        from gpuplan.schema.model_fields import job_spec

        return job_spec(self, resolve_model(self.model, None, model_type=getattr(self, "model_type", None)))

    def follow_model(self) -> RealModelInputs:
        """The sequence length the model sets where none was given (schema.model_fields.follow_position_limit)."""
        from gpuplan.schema.model_fields import follow_position_limit

        follow_position_limit(self)
        return self


MAX_TRIAL_STEPS = 100
"""Timed steps (and warm-up steps) one trial may run. A trial measures a step's time and memory for
calibrate, which reads the median step (calibrate/measurement.py): over 100 steps its standard error
is ~1.25/sqrt(100), an eighth of the steps' spread (a few % on a GPU: under the model's 5-15% error,
so more steps add nothing to a calibration). On a busy 2-core CPU the README's smallest trial
(pythia-70m, seq 512) measured 0.83 s a step median, 1.42 s mean over 100 steps: 100 + 100 steps are
~5 minutes; 1,000,000 (accepted before) ~16 days with no output, a hang for a CLI. Longer measurements are several trials, or --sweep within its time budget. Ctrl-C during
a trial exits 1 ('aborted') with nothing written: the JSON is written after the last step."""
Steps = T.typed(int, T.count(MAX_TRIAL_STEPS, whole=True))


class TrialInputs(RealModelInputs):
    """A short real training run: the model (random weights), its depth, the step and the device."""

    layers: Annotated[T.typed(int, T.count(1 << 12, whole=True)) | None, _f(
        None, "Decoder layers to build (same width): measure a huge model small.", "all")]
    micro_batch: V.MicroBatch
    seq_len: V.SeqLen
    steps: Annotated[Steps, _f(10, "Timed steps (1 to 100).")]
    warmup: Annotated[T.typed(int, T.number(0, MAX_TRIAL_STEPS, whole=True)), _f(3, "Untimed warm-up steps first "
                                                                                  "(0 to 100).")]
    precision: V.Precision
    recompute: narrowed(V.Recompute, "none", "selective", "full")  # full: HF gradient checkpointing;
    # selective: torchtitan's op-level SAC (gpuplan.profile.recompute), as --framework hf estimates it
    optimizer: narrowed(V.Optimizer, "adamw", "sgd", optional=False)
    optimizer_impl: narrowed(V.OptimizerImpl, "foreach", "fused", "forloop")
    finetune: narrowed(V.Finetune, "full", "lora", optional=False)
    lora_rank: V.LoraRank
    device: Annotated[T.choice("auto", "cpu", "cuda"), _f("auto", "cpu, cuda or auto (CUDA when present).")]
    parallelism: Annotated[T.choice("auto", "fsdp2", "ddp"), _f("auto", "Several ranks (torchrun): fsdp2 "
                                                                "(default) or ddp.")]
    attention_kernel: narrowed(V.AttentionKernel, "flash", "sdpa", "eager", optional=False)  # no FA1 on CPU
    peak_tflops: Annotated[T.typed(float, T.number(0, 1e6, low_open=True)) | None, _f(
        None, "Dense peak TFLOP/s for MFU (CPU, or a GPU not in the catalog).", "catalog")]
    seed: Annotated[T.typed(int, T.number(0, 2**31 - 1, whole=True)), _f(0, "Random seed (weights, tokens).")]
    out: V.Out
    sweep: Annotated[T.Bool, _f(False, "Run a designed sweep of short runs that separates the calibration's op "
                                       "classes (sequence, tokens, recompute, adapters); --out is then a folder.")]
    sweep_budget: Annotated[T.typed(float, T.number(10, 86400)), _f(
        180.0, "Seconds the sweep may take in all (runs that would not fit are skipped).")]

    @model_validator(mode="after")
    def _adapters(self) -> TrialInputs:
        """--lora-rank with full fine-tuning is refused, as `train` refuses it (the trial ran full, exit 0); so is
        --sweep-budget without --sweep (one run never reads it: it changed nothing, exit 0)."""
        if "lora_rank" in self.given and self.finetune == "full":
            raise InputError("lora_rank", self.lora_rank, "applies to adapters: give --finetune lora")
        if "sweep_budget" in self.given and not self.sweep:
            raise InputError("sweep_budget", whole_or(self.sweep_budget), "is the seconds the sweep may take: give "
                             "--sweep with it, or leave it out")
        if self.sweep and self.out and str(self.out).rstrip("/").lower().endswith(".json"):  # hostile wave 27
            raise InputError("out", self.out, "names a JSON file; with --sweep, --out is the folder the sweep "
                             "writes its measurement files to: give a folder name, e.g. sweep-out")
        return self

    def adjust_spec(self, spec):
        """An adapter rank within the hidden size, as `train` holds it (rank 1,000 on pythia-70m's 512 ran)."""
        if self.finetune == "lora" and self.lora_rank > spec.hidden_size:
            raise InputError("lora_rank", self.lora_rank, f"must be at most the hidden size {spec.hidden_size:,} "
                             "(an adapter's rank is below the widths it adapts)")
        return spec

    def settings(self):
        """The core-facing TrialSettings."""
        from gpuplan.profile.trial_plan import TrialSettings

        return TrialSettings(model=self.model, layers=self.layers, micro_batch=self.micro_batch or 1,
                             seq_len=self.seq_len, steps=self.steps, warmup=self.warmup, precision=self.precision,
                             precision_stated="precision" in self.given,
                             recompute=self.recompute or "none", optimizer=self.optimizer, device=self.device,
                             parallelism=self.parallelism,
                             attention="eager" if self.attention_kernel == "eager" else "sdpa",
                             lora_rank=self.lora_rank if self.finetune == "lora" else None,
                             optimizer_impl=self.optimizer_impl or "foreach",
                             peak_tflops=self.peak_tflops, seed=self.seed)
