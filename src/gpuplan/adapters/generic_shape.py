"""Model shapes for a bare parameter count (``--params 70B``): the nearest Llama reference of the
catalog, used as it is or with its layer count scaled (adapters.resolve takes it when no model or
config.json is named)."""

from __future__ import annotations

import math
from dataclasses import replace

from gpuplan.catalog import load_model
from gpuplan.core.model.spec import AttentionSpec, MLPSpec, ModelSpec, count_parameters

# Reference shapes for a bare parameter count (catalog ids): Meta's dense Llama family, whose heads
# and K/V heads divide 8 (tensor parallelism up to a node works) and whose widths are real.
GENERIC_REFERENCES = ("llama-3.2-1b", "llama-3.2-3b", "llama-2-7b", "llama-3.1-8b", "llama-2-13b", "llama-2-70b",
                      "llama-3.1-405b")
GENERIC_EXACT = 0.10
"""Within 10% of a reference's count, the reference shape itself is used (7B -> Llama-2-7B)."""


def generic_dense_spec(n_params: float) -> ModelSpec:
    """A Llama-style dense shape for a bare parameter count (``--params 70B``).

    The reference shape (GENERIC_REFERENCES) nearest N on a log scale is used as it is when its
    count is within 10% of N (7B -> Llama-2-7B, 13B -> Llama-2-13B, 70B -> Llama-2-70B, whose
    heads divide 8), else with its layer count scaled to N (175B -> Llama-3.1-405B's width at 54
    layers). Below half the smallest reference, the older family: head_dim 128, hidden = 128 x
    layers, SwiGLU 8/3 x hidden, vocab 32000. 6ND uses N itself (``declared_params``);
    shape-dependent terms (attention, activations, layouts) use this shape.
    """
    refs = [load_model(name) for name in GENERIC_REFERENCES]
    totals = [count_parameters(spec).total for spec in refs]
    if n_params < 0.5 * min(totals):
        return _small_generic_spec(n_params)
    i = min(range(len(refs)), key=lambda k: abs(math.log(n_params / totals[k])))
    ref, total = refs[i], totals[i]
    layers = ref.num_layers
    if abs(n_params / total - 1) > GENERIC_EXACT:
        per_layer = (total - count_parameters(replace(ref, num_layers=1)).total) / (ref.num_layers - 1)
        fixed = total - per_layer * ref.num_layers
        layers = max(2, round((n_params - fixed) / per_layer))
    shaped = f"{ref.name}'s shape" + ("" if layers == ref.num_layers else f" at {layers} layers")
    return replace(ref, name=f"generic-{n_params / 1e9:g}B", num_layers=layers, declared_params=float(n_params),
                   source=f"gpuplan generic dense shape: {shaped} (adapters.generic_shape.generic_dense_spec)",
                   notes=(f"generic Llama-style shape for a bare parameter count: {shaped}",))


def _small_generic_spec(n_params: float) -> ModelSpec:
    """Below the smallest reference: hidden = 128 x layers, the layer count whose total is nearest."""
    best: ModelSpec | None = None
    for layers in range(2, 257):
        hidden = 128 * layers
        inter = -(-8 * hidden // 3 // 256) * 256
        spec = ModelSpec(
            name=f"generic-{n_params / 1e9:g}B", hidden_size=hidden, num_layers=layers,
            vocab_size=32000, attention=AttentionSpec(layers, layers, 128),
            mlp=MLPSpec(intermediate_size=inter), declared_params=float(n_params),
            source="gpuplan generic dense shape (see adapters.generic_shape.generic_dense_spec)",
            notes=("generic Llama-style shape for a bare parameter count",))
        if best is None or abs(count_parameters(spec).total - n_params) < abs(
                count_parameters(best).total - n_params):
            best = spec
        elif count_parameters(spec).total > n_params:
            break
    assert best is not None
    return best
