"""--etp (expert tensor parallelism) where the framework and the model can run it; one line naming the field
(schema.layout_rules.check_model calls this with the model). The framework's own expert TP where --etp is not
given is core.expert_layout's."""

from __future__ import annotations

from gpuplan.core.expert_layout import EXPERT_TP_FOLLOWS_TP
from gpuplan.errors import InputError


def check_expert_tp(inputs, spec) -> None:
    """Refuse an --etp the model or the framework cannot run: any value on a dense model (it changes nothing),
    above 1 outside Megatron-Core (torchtitan b5bcd76 has no expert TP dimension, DeepSpeed-MoE keeps whole experts,
    transformers and llm.c no TP), one that does not divide the expert width (Megatron-Core's TEGroupedMLP shards
    moe_ffn_hidden_size over the expert TP ranks). A stated layout's etp x ep against its ranks is
    core.parallel.check_expert_layout's."""
    etp = getattr(inputs, "etp", None)
    if etp is None:
        return
    framework = getattr(inputs, "framework", None)
    if spec.moe is None:
        raise InputError("etp", etp, f"{spec.name} has no experts (dense): expert tensor parallelism changes "
                         "nothing; leave --etp out")
    if etp > 1 and framework not in EXPERT_TP_FOLLOWS_TP:
        raise InputError("etp", etp, f"--framework {framework} keeps whole experts on each rank (torchtitan's expert "
                         "region has no TP dimension, parallel_dims.py@b5bcd76 L242; DeepSpeed-MoE's "
                         "enable_expert_tensor_parallelism is off): give --etp 1, or --framework megatron")
    width = spec.moe.expert_intermediate_size
    if width % etp:
        raise InputError("etp", etp, f"must divide the expert width {width:,} of {spec.name} (expert tensor "
                         "parallelism splits it)")
