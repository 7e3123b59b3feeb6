"""--etp (expert tensor parallelism) where the framework and the model can run it; one line naming the field
(schema.layout_rules.check_model calls this with the model). The framework's own expert TP where --etp is not
given is core.expert_layout's."""

from __future__ import annotations

from gpuplan.core.expert_layout import EXPERT_TP_FOLLOWS_TP
from gpuplan.errors import InputError


def check_expert_tp(inputs, spec, *, gpu_counts: tuple[int, ...]) -> None:
    """Refuse an --etp the model or the framework cannot run: any value on a dense model (it changes nothing),
    above 1 outside Megatron-Core (torchtitan b5bcd76 has no expert TP dimension, DeepSpeed-MoE keeps whole experts,
    transformers and llm.c no TP), one that does not divide the expert width (Megatron-Core's TEGroupedMLP shards
    moe_ffn_hidden_size over the expert TP ranks), or whose etp x ep divides no pipeline stage of ``gpu_counts``
    (--gpus as counts: schema.layout_rules.gpu_counts, the caller). A stated layout's etp x ep against its ranks is
    core.parallel.check_expert_layout's."""
    etp = getattr(inputs, "etp", None)
    if etp is None:
        return
    framework = getattr(inputs, "framework", None)
    if spec.moe is None:
        raise InputError("etp", etp, f"{spec.name} has no experts (dense): expert tensor parallelism changes "
                         "nothing; leave --etp out")
    ep = getattr(inputs, "ep", None)
    if framework == "torchtitan" and (etp != 1 or not ep or ep == 1):
        raise InputError("etp", etp, "torchtitan sets its expert TP from the layout: tp without expert parallelism "
                         "(models/common/moe_sharding.py@b5bcd76 L50-67), 1 with it (its expert mesh has no TP "
                         "dimension, parallel_dims.py L242): give --etp 1 only with --ep > 1, or leave it out")
    if etp > 1 and framework not in EXPERT_TP_FOLLOWS_TP:
        why = ("DeepSpeed-MoE's expert tensor parallelism (enable_expert_tensor_parallelism, off by default) is not "
               "modelled" if framework == "deepspeed" else f"--framework {framework} runs no tensor parallelism")
        raise InputError("etp", etp, f"{why}: give --etp 1, or --framework megatron")
    width = spec.moe.expert_intermediate_size
    if width % etp:
        raise InputError("etp", etp, f"must divide the expert width {width:,} of {spec.name} (expert tensor "
                         "parallelism splits it)")
    pp = getattr(inputs, "pp", None) or 1
    counts = [n for n in gpu_counts if n % pp == 0]
    group = etp * (ep or 1)  # the planner's own refusal named only `gpus` (review s18 S1)
    if counts and all((n // pp) % group for n in counts):
        raise InputError("etp", etp, f"x ep {ep or 1} = {group} must divide a pipeline stage's GPUs ({counts[0]:,} / pp "
                         f"{pp}{' for every count given' if len(counts) > 1 else ''}): Megatron-Core lays the experts "
                         "out over etp x ep of a stage's ranks")
