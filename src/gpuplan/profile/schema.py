"""The inputs of ``gpuplan profile`` (also under ``torchrun -m gpuplan profile``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import model_validator

from gpuplan.errors import InputError
from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V
from gpuplan.schema.model_fields import ModelFields


def _f(default, help: str, shown: str | None = None):
    return V.field(default, help, shown)


Steps = T.typed(int, T.count(1_000_000, whole=True))


class TrialInputs(ModelFields):
    """A short real training run: the model (random weights), its depth, the step and the device."""

    layers: Annotated[T.typed(int, T.count(1 << 12, whole=True)) | None, _f(
        None, "Decoder layers to build (same width): measure a huge model small.", "all")]
    micro_batch: V.MicroBatch
    seq_len: V.SeqLen
    steps: Annotated[Steps, _f(10, "Timed steps.")]
    warmup: Annotated[T.typed(int, T.number(0, 1_000_000, whole=True)), _f(3, "Untimed warm-up steps first.")]
    precision: V.Precision
    recompute: V.Recompute
    optimizer: V.Optimizer
    device: Annotated[T.choice("auto", "cpu", "cuda"), _f("auto", "cpu, cuda or auto (CUDA when present).")]
    parallelism: Annotated[T.choice("auto", "fsdp2", "ddp"), _f("auto", "Several ranks (torchrun): fsdp2 "
                                                                "(default) or ddp.")]
    attention_kernel: V.AttentionKernel
    peak_tflops: Annotated[T.typed(float, T.number(0, 1e6, low_open=True)) | None, _f(
        None, "Dense peak TFLOP/s for MFU (CPU, or a GPU not in the catalog).", "catalog")]
    seed: Annotated[T.typed(int, T.number(0, 2**31 - 1, whole=True)), _f(0, "Random seed (weights, tokens).")]
    out: V.Out

    @model_validator(mode="after")
    def _supported(self) -> TrialInputs:
        if self.model is None:
            raise InputError("model", None, "give a model: a catalog name, a Hugging Face id or a config.json")
        if self.recompute == "selective":
            raise InputError("recompute", self.recompute, "a trial runs none or full (HF gradient checkpointing)")
        if self.optimizer not in ("adamw", "sgd"):
            raise InputError("optimizer", self.optimizer, "a trial runs adamw or sgd")
        return self

    def settings(self):
        """The core-facing TrialSettings."""
        from gpuplan.profile.trial_plan import TrialSettings

        return TrialSettings(model=self.model, layers=self.layers, micro_batch=self.micro_batch or 1,
                             seq_len=self.seq_len, steps=self.steps, warmup=self.warmup, precision=self.precision,
                             recompute=self.recompute or "none", optimizer=self.optimizer, device=self.device,
                             parallelism=self.parallelism,
                             attention="eager" if self.attention_kernel == "eager" else "sdpa",
                             peak_tflops=self.peak_tflops, seed=self.seed)
