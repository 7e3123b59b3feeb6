"""Tensor parallelism with and without sequence parallelism: what each TP rank runs on the whole
sequence, and which collectives carry the layer's activations (StepSettings.sequence_parallel).

Sequence parallelism (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
Models", arXiv:2205.05198, Sec. 4.2.2) splits the work outside the tensor-parallel regions — the
LayerNorms, the bias-dropout-adds and residual adds, and in the backward the residual stream's gradient
sums — over the sequence, so each of tp ranks runs 1 / tp of it, and turns each TP all-reduce into a
reduce-scatter + all-gather of the same [s, b, h] buffer. gpuplan's op lists divide those classes by tp
(core.time.megatron_ops.elementwise_seconds_per_token, titan_ops). Code that predates it runs them on the
full sequence on every TP rank and all-reduces (Megatron's ``_reduce``, Shoeybi et al. 2019 Fig. 4):

* Megatron-LM before its 2022 sequence parallelism: ``--sequence-parallel`` first appears in
  megatron/arguments.py at cfd2e21607 (2022-04-28); the SC21 code (fda81a2, 2021-05-25) has no sequence
  parallelism under megatron/ and megatron/mpu/mappings.py L30 ``_reduce`` is
  ``torch.distributed.all_reduce`` (the megatron-2021 rows: throughput_runs.yaml layout.sequence_parallel).
* BigScience's Megatron-DeepSpeed (BLOOM): nothing under megatron/ names sequence parallelism at 06dc2d7
  (2021-09-16), at c3be5d3f (2022-07-07, the last commit before the run ended) or at 8387ae17 (2023-12-07);
  megatron/mpu/mappings.py L30 all_reduce.
* GPT-NeoX v1.0 (EleutherAI/gpt-neox 71df4d5, 2023-03-07; the Pythia rows): nothing under megatron/ names
  it; megatron/mpu/mappings.py L29-45 ``_reduce`` is a synchronous all_reduce.

Replicated work, per token and layer, without sequence parallelism: the bytes of core.time.megatron_ops'
``norm`` (two norms: forward read + write 2 B each, backward read dy and x, write dx: 6 B), ``residual``
(two adds: read 2 + 2, write 2) and ``grad_sums`` (two backward sums: 6 B) classes, 44 h B in all, of
which a rank runs 1 / tp under sequence parallelism and all of it without: (1 - 1 / tp) x 44 h B more,
at core.time.memory_kernels' HBM line (no more kernels: the same kernels on a longer tensor). The same
bytes are added to the fitted elementwise model (step.py's elementwise_factor), which divides all its
work by tp.

TP collectives per layer and micro-batch: with sequence parallelism 4 reduce-scatter + all-gather pairs
(2 forward, 2 backward; + 2 forward again under full recompute: core.comm.step_comm._tp_cost). Without
it, all-reduces of the same buffer: the row-parallel outputs forward (2) and the column-parallel inputs'
gradients backward (2: ``copy_to_model_parallel_region``). GPT-NeoX's parallel residual (``gpt_j_residual``,
which the Pythia configurations set) passes ``parallel_output`` to both row-parallel linears and reduces
their sum once (megatron/model/transformer.py@v1.0 L613-614, L659-702: ``output = residual +
self.reduce(output)``), so 1 forward all-reduce a layer; its two ColumnParallelLinears still all-reduce
their input gradients (megatron/mpu/layers.py@v1.0 L455). That is the only parallel-residual code without
sequence parallelism read here, so ``spec.parallel_residual`` takes it. Units: bytes per token, seconds.
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.time.memory_kernels import memory_bound_seconds

REPLICATED_BYTES_PER_HIDDEN = 2 * 2 * 2.0 + 2 * 3 * 2.0 + 2 * 3 * 2.0 + 2 * 3 * 2.0
"""Forward + backward bytes per token and hidden element of the work outside the TP regions: norm 8 + 12,
residual 12, grad_sums 12 = 44 (core.time.megatron_ops.layer_classes' norm, residual, grad_sums; bf16 / fp16)."""
REPLICATED_CLASSES = ("norm", "residual", "grad_sums")
"""The megatron_ops op classes sequence parallelism splits over tp (the others are sharded by heads or width)."""


def replicated_bytes_per_token(spec: ModelSpec, tp, sequence_parallel: bool):
    """Bytes per token and layer a TP rank moves beyond 1 / tp of the layer's norm and residual work:
    0 under sequence parallelism, (1 - 1 / tp) x 44 h without (module docstring)."""
    if sequence_parallel:
        return 0.0
    return (1.0 - 1.0 / np.asarray(tp, dtype=float)) * REPLICATED_BYTES_PER_HIDDEN * spec.hidden_size


def replicated_seconds_per_token(spec: ModelSpec, settings, tp, hbm_bytes_per_s: float):
    """Forward + backward seconds per token and layer of that replicated work on one GPU (0 with
    ``settings.sequence_parallel``); it splits between forward and backward as the layer's other
    elementwise work does (core.time.step)."""
    return memory_bound_seconds(replicated_bytes_per_token(spec, tp, settings.sequence_parallel), 0, hbm_bytes_per_s)


def tp_collective_kinds(sequence_parallel: bool) -> tuple[str, ...]:
    """The NCCL collectives one TP exchange of the [s, b, h] buffer runs: reduce-scatter + all-gather
    under sequence parallelism, an all-reduce without."""
    return ("reduce_scatter", "all_gather") if sequence_parallel else ("all_reduce",)


def tp_exchanges_per_layer(spec: ModelSpec, sequence_parallel: bool, recompute: str) -> int:
    """TP exchanges per layer and micro-batch (module docstring): 2 forward (1 for a parallel residual
    without sequence parallelism, GPT-NeoX's single reduce), 2 backward, the forward's again under full
    recompute."""
    forward = 1 if (spec.parallel_residual and not sequence_parallel) else 2
    return forward * (1 + (recompute == "full")) + 2
