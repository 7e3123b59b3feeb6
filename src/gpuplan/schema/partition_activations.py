"""--partition-activations: DeepSpeed's activation-checkpoint partitioning, one field for memory / plan / train /
budget, plan files, the web API and the Python API (schema.training_fields.LayoutFields inherits
PartitionActivationsFields; schema.recompute_options hands it to the step and memory settings).

With ``partition_activations`` (DeepSpeed's activation_checkpointing config; GPT-NeoX's ``partition-activations``,
megatron/initialize.py@e59c873 L108-116) each checkpointed layer input is kept as its 1 / tp slice and all-gathered
before the layer's recompute in the backward (EleutherAI/DeeperSpeed@0ae3578a
deepspeed/runtime/activation_checkpointing/checkpointing.py L366-418, L255-291, L622-628;
core.comm.partition_activations).
Taken where it does something: --framework deepspeed (its checkpointing code; Megatron-Core, torchtitan, the Trainer
and llm.c have no such option) with --implementation megatron (Megatron modules checkpointing through
deepspeed.checkpointing, as GPT-NeoX's do; a Hugging Face model uses torch.utils.checkpoint), --recompute full given
(it partitions the checkpoints of DeepSpeed's per-layer checkpointing: with no recompute there are none; Megatron's
block method, --recompute-layers, is not DeepSpeed's), --tp 2 or more given (with one model-parallel rank it returns
the input whole, L270-273; without --tp the layout search may choose tp 1), and no sequence parallelism (under SP the
checkpoint is already split over tp: gpuplan would divide it twice; GPT-NeoX@e59c873 has none).
"""

from __future__ import annotations

from pydantic import model_validator

from gpuplan.errors import InputError
from gpuplan.schema import types as T
from gpuplan.schema.base import JobInputs
from gpuplan.schema.vocabulary import option

PartitionActivations = option(T.Bool, False, "DeepSpeed's partition_activations (GPT-NeoX's partition-activations): "
                              "each checkpointed layer input kept as its 1 / tp slice and all-gathered on the TP "
                              "group before its recompute (DeeperSpeed@0ae3578a activation_checkpointing/"
                              "checkpointing.py): memory's checkpoints / tp, one exposed all-gather a layer and "
                              "micro-batch in the step. Needs --framework deepspeed --implementation megatron, "
                              "--recompute full, --tp 2 or more, --no-sequence-parallel.")


class PartitionActivationsFields(JobInputs):
    """DeepSpeed's partitioned activation checkpoints (core.comm.partition_activations)."""

    partition_activations: PartitionActivations

    @model_validator(mode="after")
    def _partition_activations_rules(self) -> "PartitionActivationsFields":
        if not self.partition_activations:
            return self
        framework = getattr(self, "framework", None)
        if framework != "deepspeed":
            raise InputError("partition_activations", True, f"is DeepSpeed's activation checkpointing option: give "
                             f"--framework deepspeed (not {framework}); Megatron-Core, torchtitan, the Trainer and "
                             "llm.c have none")
        implementation = getattr(self, "implementation_name", None)
        if implementation != "megatron":  # the pair fp32 TP comm needs too (schema.tp_comm_dtype.FP32_TP_COMM)
            raise InputError("partition_activations", True, "is read by GPT-NeoX's / Megatron-DeepSpeed's Megatron "
                             "modules, which checkpoint through deepspeed.checkpointing: give --implementation megatron "
                             f"(not {implementation}); a Hugging Face model checkpoints with torch.utils.checkpoint "
                             "(gradient_checkpointing_enable), which DeepSpeed's option does not reach")
        recompute = getattr(self, "recompute", None)
        if recompute != "full" or getattr(self, "recompute_layers", None) is not None:
            raise InputError("partition_activations", True, "partitions DeepSpeed's per-layer activation checkpoints: "
                             "give --recompute full (without --recompute-layers)" + (
                                 f", not {recompute}" if recompute else "; left out, the search may choose none"))
        tp = getattr(self, "tp", None)
        if tp is None or tp == 1:
            raise InputError("partition_activations", True, "splits the checkpoints over the TP ranks: give --tp 2 "
                             "or more" + (" (with --tp 1 it does nothing)" if tp == 1 else " (without --tp the "
                                          "layout search may choose tp 1, where it does nothing)"))
        if getattr(self, "sequence_parallel", False):
            raise InputError("partition_activations", True, "under sequence parallelism the checkpoints are already "
                             "split over tp (GPT-NeoX@e59c873, where DeepSpeed partitions them, has none): give "
                             "--no-sequence-parallel")
        return self


def partition_activations_assumption(inputs) -> tuple:
    """The assumption line where --partition-activations is taken (none otherwise: off is DeepSpeed's default);
    ``inputs``: a job's inputs (the slice named by its --tp) or core.memory.training.MemorySettings (memory's, which
    hold no tp: '1 / tp')."""
    from gpuplan.report.model import Assumption

    if not getattr(inputs, "partition_activations", False):
        return ()
    shown = (f"on: each checkpointed layer input kept as its 1 / {getattr(inputs, 'tp', None) or 'tp'} slice, "
             "all-gathered on the TP group "
             "(exposed, with a zero fill and the copies in and out of it) before its recompute")
    return (Assumption("partition_activations", "activation checkpoints (DeepSpeed)", shown, "DeeperSpeed@0ae3578a "
                       "deepspeed/runtime/activation_checkpointing/checkpointing.py L366-418, L255-291; "
                       "core/comm/partition_activations.py", "--partition-activations", True),)
