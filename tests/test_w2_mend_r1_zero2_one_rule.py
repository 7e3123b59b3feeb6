"""torchtitan's ZeRO-2-is-FSDP2 fact is read by comm where memory reads it (review w10 r1 SHOULD-FIX 4):
core.comm.fsdp2_reshard.fsdp2_no_reshard (dp_costs' rule) = core.frameworks.states_zero of the schedule's profile,
and frameworks sharing a schedule cannot silently disagree on it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gpuplan.core import frameworks as F
from gpuplan.core.comm import dp_costs as D
from gpuplan.core.comm import dp_overlap as O
from gpuplan.core.comm import fsdp2_reshard as R
from gpuplan.core.time.step import StepSettings


@pytest.mark.parametrize("name", sorted(O.SCHEDULE_OF_FRAMEWORK))
def test_comm_and_memory_agree_for_every_framework(name):
    """Per framework and ZeRO stage 0-3: comm's FSDP2-without-reshard rows are exactly those memory shards as
    ZeRO-3 from a ZeRO-2 (torchtitan only: fsdp.py@b5bcd76 'never' -> fully_shard(reshard_after_forward=False))."""
    zero = np.array([0, 1, 2, 3])
    comm = D.fsdp2_no_reshard(StepSettings(dp_schedule=O.schedule_for(name)), zero)
    memory = (zero == 2) & (F.states_zero(F.framework(name), zero) == 3)
    assert comm.tolist() == memory.tolist()
    assert comm.tolist() == ([False, False, True, False] if name == "torchtitan" else [False] * 4)


def test_a_second_fsdp2_framework_without_the_flag_is_refused(monkeypatch):
    """A framework added on the 'fsdp2' schedule whose profile lacks the flag would have switched torchtitan's
    ZeRO-2 comm back to bucketed (the parent's all(...)); now the disagreement raises."""
    titan = F.framework("torchtitan")
    other = replace(titan, zero2_is_fsdp2_no_reshard=False)
    monkeypatch.setitem(O.SCHEDULE_OF_FRAMEWORK, "other-fsdp2", "fsdp2")
    real = R.framework
    monkeypatch.setattr(R, "framework", lambda n: other if n == "other-fsdp2" else real(n))
    with pytest.raises(ValueError, match="zero2_is_fsdp2_no_reshard"):
        D.fsdp2_no_reshard(StepSettings(dp_schedule="fsdp2"), 2)
    assert R.schedule_profile("no-such-schedule") is None
