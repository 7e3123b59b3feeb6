"""Parameters one GPU holds before ZeRO sharding, dense and routed experts apart, as the data-parallel collectives
(core.comm.dp_costs) count them: dense weights split tp x pp ways, a layer's routed experts ep x etp x pp ways
(etp: core.expert_layout). Values may be numbers or numpy arrays. Units: parameters (elements)."""

from __future__ import annotations

import numpy as np

from gpuplan.core.expert_layout import resolved_expert_tp
from gpuplan.core.model.spec import ModelSpec, count_parameters
from gpuplan.core.parallel import expert_data_group


def routed_split(tp, ep, expert_tp):
    """How many ways a layer's routed experts are split: ep x etp (``expert_tp``: StepSettings.expert_tp,
    None = tp; core.parallel.ParallelLayout.etp)."""
    return ep * resolved_expert_tp(expert_tp, tp, ep)


def routed_per_gpu(spec: ModelSpec, tp, pp, ep, expert_tp=1):
    """Routed-expert parameters one GPU holds: the model's routed experts / (ep x etp x pp) (routed_split; 0 for a
    dense model)."""
    return count_parameters(spec).routed_experts / (routed_split(tp, ep, expert_tp) * pp)


def params_per_gpu(spec: ModelSpec, tp, pp, ep, expert_tp=1):
    """Parameters one GPU holds before ZeRO sharding: dense weights / (tp x pp), experts /
    (ep x etp x pp) (routed_per_gpu; ``expert_tp`` None = tp, default 1: whole experts; volumes' approximation)."""
    counts = count_parameters(spec)
    return (counts.total - counts.routed_experts) / (tp * pp) + routed_per_gpu(spec, tp, pp, ep, expert_tp)


def matrices_per_gpu(spec: ModelSpec, tp, pp, ep, expert_tp=1):
    """Layer matrices (attention, MLP, shared and routed experts, router: core.memory.model_states.StageParams.
    matrices) one GPU holds, as params_per_gpu divides them: dense / (tp x pp), routed experts / (ep x etp x pp)."""
    from gpuplan.core.memory.model_states import stage_params
    from gpuplan.core.parallel import ParallelLayout

    whole = stage_params(spec, ParallelLayout(), 0)
    return (whole.matrices - whole.experts) / (tp * pp) + whole.experts / (routed_split(tp, ep, expert_tp) * pp)


def expert_share(spec: ModelSpec, settings, tp, pp, ep):
    """Of one GPU's trained parameters (params_per_gpu), the routed experts' share: 0 for a dense model and
    under LoRA / QLoRA (the adapters are all dense here)."""
    if spec.moe is None:
        return 0.0
    experts = routed_per_gpu(spec, tp, pp, ep, settings.expert_tp)
    return np.where(settings.finetune == "full", experts / params_per_gpu(spec, tp, pp, ep, settings.expert_tp), 0.0)


def expert_data_ranks(data, tp, ep, expert_tp=None, replicated_over_tp: bool = False):
    """The expert data-parallel group beside ``data`` (dp x cp) ranks, as memory counts it:
    core.parallel.expert_data_group."""
    return expert_data_group(data, tp, ep, resolved_expert_tp(expert_tp, tp, ep), replicated_over_tp)
