"""torchtitan under pipeline parallelism: which gradients a stage holds unsharded across micro-batches.

torch.distributed.pipelining runs every micro-batch's backward of an FSDP stage with
set_reshard_after_backward(False) and set_requires_gradient_sync(False) whatever reshard_after_forward is
(torch/distributed/pipelining/stage.py@v2.13.0 (cf30153) L844-847); FSDP then keeps each unsharded gradient,
upcast to the reduce dtype (fp32 under torchtitan's MixedPrecisionPolicy) and accumulated
(_fully_shard/_fsdp_param_group.py@v2.13.0 L607-612, _fsdp_param.py L802-821), and reduce-scatters once in
perform_reduce_grad (stage.py L1164-1187). torchtitan's fsdp_reshard_after_forward is False under PP by default
and True only with "always" (torchtitan/distributed/fsdp.py@b5bcd76 L124-132); FSDP2 without reshard after
forward is torch's ZeRO-2 (FSDP1's SHARD_GRAD_OP, torch/distributed/fsdp/api.py@v2.13.0 L43-49), which
shards every parameter as ZeRO-3 does. So gpuplan's ZeRO-2 and ZeRO-3 stages under torchtitan with pp > 1
hold the same: sharded fp32 states + the stage's bf16 params + its fp32 gradients, unsharded. Measured with
torchtitan 0.3.0's own code (llama-3.1-8b, dp 8, pp 2, full AC, 2 micro-batches, fake tensors; docs/memory.md):
36.95 GiB under "default", 34.68 GiB under "always", both holding the unsharded fp32 gradients.
"""

from __future__ import annotations

import pytest

from gpuplan.core import frameworks as F
from gpuplan.core.memory import training as M
from gpuplan.core.parallel import ParallelLayout

# llama-3.1-8b (hidden 4096, 32 layers, 8 KV heads of 128, MLP 14336, vocab 128,256), hand-counted:
# attention 2 x 4096^2 + 2 x 4096 x 1024 = 41,943,040; MLP 3 x 4096 x 14336 = 176,160,768; two norms 8,192
LAYER = 41_943_040 + 176_160_768 + 8_192  # 218,112,000
VOCAB_H = 128_256 * 4096  # 525,336,576: the embedding, and the untied LM head
LAST_STAGE_PP4 = 8 * LAYER + 4096 + VOCAB_H  # 8 layers + final norm + LM head: 2,270,236,672


def _spec():
    from gpuplan.catalog import load_model

    return load_model("llama-3.1-8b")


def _settings():
    return M.MemorySettings(seq_len=8192, recipe="fsdp2", framework="torchtitan", implementation="torchtitan")


@pytest.mark.parametrize("micro_batches", [1, 8])
def test_zero2_and_zero3_stage_hold_the_same_under_torchtitan_pp(micro_batches):
    """The parent gave ZeRO-2 full fp32 weights and no unsharded gradients (pp 4: 19.6 vs 24.9 GiB)."""
    spec = _spec()
    parts = {}
    for zero in (2, 3):
        layout = ParallelLayout(dp=8, pp=4, zero=zero, micro_batch=1, global_batch=8 * micro_batches)
        parts[zero] = M.stage_memory_parts(spec, layout, _settings(), 3)
    z2, z3 = parts[2], parts[3]
    assert float(z2.allocated) == pytest.approx(float(z3.allocated), rel=1e-12)
    # the stage's fp32 gradients, unsharded, at the start of backward: 4 B x its parameters (+ 4/8 B sharded
    # ones kept from the previous step's layout only with several micro-batches: states.grads)
    sharded = 4 * LAST_STAGE_PP4 / 8 * (micro_batches > 1)
    assert float(z2.grads_backward) == pytest.approx(4 * LAST_STAGE_PP4 + sharded, rel=1e-9)
    # fully_shard shards the fp32 weights at ZeRO-2 too: 4 B / 8 ranks
    assert float(z2.weights) == pytest.approx(4 * LAST_STAGE_PP4 / 8, rel=1e-9)


def test_pp_unsharded_stage_bytes_by_zero_stage():
    """(2 B params, 4 B grads) per stage parameter under torchtitan with pp > 1 at ZeRO-2 and 3; a ZeRO-2 at pp 1
    keeps only the params (no reshard after forward); none at ZeRO-0/1 or under megatron."""
    tt, mg = F.framework("torchtitan"), F.framework("megatron")
    n = 1_000_000

    def at(profile, zero, pp):
        return tuple(float(x) for x in F.pp_unsharded_stage_bytes(profile, ParallelLayout(dp=8, pp=pp, zero=zero),
                                                                    n, 2))
    assert at(tt, 3, 2) == (2 * n, 4 * n)
    assert at(tt, 2, 2) == (2 * n, 4 * n)  # the parent: (0, 0)
    assert at(tt, 2, 1) == (2 * n, 0.0)
    assert at(tt, 3, 1) == (0.0, 0.0)
    assert at(tt, 1, 2) == (0.0, 0.0)
    assert at(mg, 3, 2) == (0.0, 0.0)
    assert int(F.states_zero(tt, 2)) == 3 and int(F.states_zero(tt, 1)) == 1 and int(F.states_zero(mg, 2)) == 2


def test_first_stage_keeps_the_embedding_unsharded_under_pp():
    """The embedding is its own FSDP unit, resharded after forward at pp 1, but under PP torchtitan does not
    reshard it after forward ("default": reshard_after_forward = not pp_enabled, fsdp.py@b5bcd76 L132, L250-256)
    and the stage keeps its fp32 gradient unsharded like every other: 2 + 4 B per embedding parameter beside
    the layers on stage 0 (StageParams.total counts the root; a pin, not a change)."""
    spec = _spec()
    layout = ParallelLayout(dp=8, pp=4, zero=3, micro_batch=1, global_batch=64)
    first = M.stage_memory_parts(spec, layout, _settings(), 0)
    stage0 = 8 * LAYER + VOCAB_H
    assert float(first.grads_backward) == pytest.approx(4 * stage0 + 4 * stage0 / 8, rel=1e-9)
    assert float(first.fsdp_working_set) == pytest.approx(2 * stage0, rel=1e-9)
