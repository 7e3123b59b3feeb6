"""Where torchtitan's ZeRO-2 is FSDP2 without reshard after forward, read from the framework profile of the
data-parallel schedule (core.frameworks), so core.comm.dp_costs' collectives and core.memory shard one stage by one
rule. Moved out of core.comm.dp_costs (its size limit, tests/test_architecture.py), which imports fsdp2_no_reshard."""

from __future__ import annotations

import numpy as np

from gpuplan.core.comm import dp_overlap as O
from gpuplan.core.frameworks import framework, states_zero


def fsdp2_no_reshard(settings, zero):
    """Rows (``zero``: ZeRO stage, array or scalar) whose ZeRO-2 is FSDP2's fully_shard(reshard_after_forward=False)
    (the schedule's framework has core.frameworks zero2_is_fsdp2_no_reshard: torchtitan's
    --parallelism.fsdp_reshard_after_forward "never", torchtitan/distributed/fsdp.py@b5bcd76:112-135, 236-256, which
    passes the flag to every block's fully_shard). Every parameter is sharded (states_zero) and the collectives are
    ZeRO-3's: each block all-gathered before its forward and kept unsharded for its backward, which therefore
    gathers nothing (FSDPParamGroup.reshard returns in the forward without reshard_after_forward and unshard is a
    no-op on unsharded params, torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py@v2.13.0:499-509, 372-376,
    pre_backward 576-586), its gradients reduce-scattered after its backward, every micro-batch (torchtitan's
    trainer keeps gradient sync on at pp 1), and resharded after backward (reshard_after_backward defaults True, L223,
    L637-638), so the next micro-batch's forward gathers again. Under a pipeline the stage is kept gathered for the
    step as at ZeRO-3 (one gather, one reduce-scatter a step).

    The fact is read where memory reads it: core.frameworks.states_zero of the schedule's framework profile
    (schedule_profile), so comm and memory shard the same stage by one rule."""
    profile = schedule_profile(settings.dp_schedule)
    if profile is None:
        return np.zeros(np.shape(zero), dtype=bool)
    return (np.asarray(zero) == 2) & (states_zero(profile, zero) == 3)


def schedule_profile(schedule: str):
    """The framework profile (core.frameworks) whose data-parallel ``schedule`` (StepSettings.dp_schedule) it is, or
    None where no framework runs it. StepSettings carries the schedule, not the framework (kept off while StepSettings
    lived in core/time/step.py at its size limit; core/time/step_settings.py since a4d2754), so the frameworks
    sharing one schedule must agree on what the step reads from their profile
    (zero2_is_fsdp2_no_reshard): a new framework on 'fsdp2' without torchtitan's flag raises here rather than
    silently turning torchtitan's ZeRO-2 traffic back to bucketed ZeRO-2 while its memory stays FSDP2's."""
    profiles = [framework(name) for name, runs in O.SCHEDULE_OF_FRAMEWORK.items() if runs == schedule]
    if len({p.zero2_is_fsdp2_no_reshard for p in profiles}) > 1:
        raise ValueError(f"frameworks on the {schedule!r} schedule disagree on zero2_is_fsdp2_no_reshard: "
                         "give StepSettings the framework's own flag")
    return profiles[0] if profiles else None
