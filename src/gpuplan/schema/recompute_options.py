"""The recompute options as the step and memory models take them (core.time.step.StepSettings, core.memory.training.
MemorySettings): Megatron's --recompute-modules and --recompute-layers, and DeepSpeed's --partition-activations
(schema.partition_activations), read from a LayoutFields (schema.training_fields.LayoutFields.recompute_settings)."""

from __future__ import annotations


def recompute_settings(fields) -> dict:
    """{recompute_modules, recompute_layers, partition_activations} of ``fields``: the modules () where not given
    (Megatron's default, core_attn), the layers None (every layer), partitioning off unless given."""
    return {"recompute_modules": fields.recompute_modules or (), "recompute_layers": fields.recompute_layers,
            "partition_activations": bool(fields.partition_activations)}
