"""Count what DeepSpeed's BF16_Optimizer holds, on DeepSpeed's own code: a PipelineModule trained one step in bf16
at ZeRO stage 0 by its PipelineEngine, on CPU with gloo, ``dp`` data-parallel ranks of ``stages`` pipeline stages
(core.memory.bf16_optimizer).

    PYTHONPATH=DEEPSPEED_SRC python scripts/measure_deepspeed_bf16.py [--dp 2] [--stages 1] [--out FILE.json]

DEEPSPEED_SRC: a DeepSpeed source tree (e.g. ``git archive edaa722 deepspeed op_builder accelerator`` of
deepspeedai/DeepSpeed, unpacked; it imports py-cpuinfo, hjson, msgpack, ninja and einops). The one change to
DeepSpeed's behaviour: its CPU accelerator's C++ shared-memory collective is not built (``build_shm_op`` returns
None, as it does where the op is not compatible); gloo runs the collectives. Prints rank 0's record: elements
and dtypes of the weights, the accumulation buffer, the fp32 master partition, the optimizer's states, and, at
the optimizer step, autograd's bf16 gradients and the fp32 gradient partition (and whether it has storage of
its own). Units: elements. Rank 0 is the first stage (PipeDataParallelTopology: rank = stage x dp + data), so with
``--stages 2`` it records a stage before the last, whose backward runs the PipelineEngine's own path
(pipe/engine.py@edaa722 L861-863 clear_lp_grads, L882-885 update_hp_grads(clear_lp_grads=False)), not
``super().backward``; its stage holds the first Linear (64 x 256 + 256 = 16,640 parameters).
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing as mp
import os

HIDDEN = 64  # two Linear layers, 64 -> 256 -> 64 with biases: 33,088 parameters


def _record(engine, model) -> dict:
    """Rank-local element counts and dtypes of the optimizer's buffers after one train_batch."""
    o = engine.optimizer
    states = [t for s in o.optimizer.state.values() for t in s.values() if getattr(t, "numel", lambda: 0)() > 1]
    return dict(optimizer=type(o).__name__, params=sum(p.numel() for p in model.parameters()),
                param_dtype=str(next(model.parameters()).dtype),
                accumulation_buffer=[(t.numel(), str(t.dtype)) for t in o.fp32_groups_gradients_flat],
                master_partition=[(t.numel(), str(t.dtype)) for t in o.fp32_groups_flat_partition],
                optimizer_states=[(t.numel(), str(t.dtype)) for t in states],
                lp_grads_after_step=sum(p.grad.numel() for p in model.parameters() if p.grad is not None))


def _rank(rank: int, dp: int, stages: int, port: int, out: str | None) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(dp * stages),
                      LOCAL_RANK=str(rank))
    import torch
    import deepspeed
    from deepspeed.pipe import PipelineModule

    importlib.import_module("deepspeed.comm.torch").build_shm_op = lambda: None  # gloo only (see above)
    deepspeed.init_distributed(dist_backend="gloo")
    torch.manual_seed(0)
    layers = [torch.nn.Linear(HIDDEN, 4 * HIDDEN), torch.nn.GELU(), torch.nn.Linear(4 * HIDDEN, HIDDEN)]
    model = PipelineModule(layers=layers, num_stages=stages, loss_fn=torch.nn.MSELoss())
    config = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 3, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 0}, "steps_per_print": 10**9,
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}}
    engine, *_ = deepspeed.initialize(model=model, model_parameters=list(model.parameters()), config=config)
    o, seen = engine.optimizer, {}
    inner = o.optimizer.step

    def recording_step(*args, **kwargs):  # inside BF16_Optimizer.step, where the wrapped optimizer steps
        seen["lp_grads_at_step"] = [(p.grad.numel(), str(p.grad.dtype)) for p in model.parameters()
                                    if p.grad is not None]
        seen["step_grad_partition"] = [
            (t.grad.numel(), str(t.grad.dtype), t.grad.untyped_storage().data_ptr() != hp.untyped_storage().data_ptr())
            for t, hp in zip(o.fp32_groups_flat_partition, o.fp32_groups_gradients_flat)]
        return inner(*args, **kwargs)

    o.optimizer.step = recording_step
    batch = (torch.randn(2, HIDDEN, dtype=torch.bfloat16), torch.randn(2, HIDDEN, dtype=torch.bfloat16))
    engine.train_batch(data_iter=iter([batch] * 3))
    record = dict(rank=rank, dp=dp, stages=stages, stage=engine.stage_id, **_record(engine, model), **seen)
    if rank == 0:
        print(json.dumps(record))
        if out:
            with open(out, "w", encoding="utf-8") as f:
                json.dump(record, f, indent=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dp", type=int, default=2)
    parser.add_argument("--stages", type=int, default=1)
    parser.add_argument("--port", type=int, default=29531)
    parser.add_argument("--out")
    args = parser.parse_args()
    world = args.dp * args.stages
    ranks = [mp.Process(target=_rank, args=(r, args.dp, args.stages, args.port, args.out)) for r in range(world)]
    for p in ranks:
        p.start()
    for p in ranks:
        p.join()
    if any(p.exitcode for p in ranks):
        raise SystemExit(f"a rank failed: exit codes {[p.exitcode for p in ranks]}")


if __name__ == "__main__":
    main()
