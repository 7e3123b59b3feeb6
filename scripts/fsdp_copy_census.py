"""List the copies FSDP2 (torch.distributed.fsdp.fully_shard) issues around its collectives, on CPU.

Runs a small stack of bias-free nn.Linear layers, each wrapped by fully_shard like torchtitan's
apply_fsdp (MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32); reshard_after_forward True
for every layer but the last, torchtitan parallelize_llama.py at 9dec370), one forward + backward
over a gloo process group of ``--world-size`` CPU processes, under a TorchDispatchMode that records
every copy-like op outside the layers' own matmuls with the bytes it reads + writes.

Usage: python scripts/fsdp_copy_census.py [--world-size 2] [--width 256] [--layers 3] [--json]
       [--pipeline-micro-batches M[,M...]]
--pipeline-micro-batches M runs M forward + backward passes the way torch.distributed.pipelining drives
an FSDP2 stage (torch 2.13 stage.py backward_maybe_with_nosync: gradient sync and resharding off for
every backward; perform_reduce_grad: each group's post_backward once at the end, then the root's final
callback), with torchtitan's pipeline rule (reshard_after_forward False); ops whose output has one
layer's parameter count are listed again under "<op> (parameter-sized)".
Prints, per op, count and bytes / parameter of the wrapped layers (unsharded count). On CPU there
are no streams: which stream an op runs on is read from _fsdp_collectives.py (docs/step.md).
gloo-only: its reduce_scatter_tensor adds aten::copy_ of the fp32 shard (distributed_c10d.py
reduce_scatter_single), which NCCL does not. World size 1 takes another path in torch 2.13
(_fsdp_param_group.unshard: no all-gather, a copy_ of the bf16 cast into the unsharded parameter;
foreach_reduce: reduce_output.copy_ instead of the collective), so the census needs 2 ranks.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict

COPY_OPS = ("_foreach_copy_", "split_with_sizes_copy", "chunk_cat", "_chunk_cat", "copy_", "_to_copy",
            "div_", "add_", "all_gather_copy_in", "cat")


def _nbytes(x) -> int:
    import torch

    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(_nbytes(t) for t in x)
    return 0


def _pipeline_step(model, x, micro_batches: int) -> None:
    """``micro_batches`` passes as torch.distributed.pipelining runs an FSDP2 stage (torch 2.13 stage.py
    backward_maybe_with_nosync L844-848, perform_reduce_grad L1164-1191)."""
    from torch.distributed.fsdp import fully_shard

    for _ in range(micro_batches):
        model.set_is_last_backward(False)
        model.set_reshard_after_backward(False)
        model.set_requires_gradient_sync(False)
        model(x).float().sum().backward()
    model.set_is_last_backward(True)
    model.set_reshard_after_backward(True)
    model.set_requires_gradient_sync(True)
    state = fully_shard.state(model)
    for each in state._state_ctx.all_states:
        for group in each._fsdp_param_groups:
            group.post_backward()
    state._root_post_backward_final_callback()


def _worker(rank: int, world: int, width: int, layers: int, port: int, as_json: bool,
            pipeline_micro_batches: tuple[int, ...] = (0,)) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    for micro_batches in pipeline_micro_batches:  # each case a fresh model, wrapped and recorded on its own
        _census(rank, world, width, layers, as_json, micro_batches)
    dist.barrier()  # neither rank tears gloo down while the other still has a collective in flight
    dist.destroy_process_group()
    sys.stdout.flush()
    # End the worker without the interpreter's teardown: a gloo thread still joinable when C++'s
    # static destructors run aborts the process ("terminate called without an active exception"),
    # about one run in six on this machine, after the census is complete.
    os._exit(0)


def _census(rank: int, world: int, width: int, layers: int, as_json: bool, pipeline_micro_batches: int) -> None:
    """One case: a fresh stack of ``layers`` Linear(width, width) wrapped by fully_shard, one plain pass (0) or
    ``pipeline_micro_batches`` passes as pipelining drives a stage, its copy-like ops printed by rank 0."""
    import torch
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.utils._python_dispatch import TorchDispatchMode

    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width, bias=False) for _ in range(layers)])
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    staged = pipeline_micro_batches > 0  # torchtitan under PP: no block resharded after forward
    for i, layer in enumerate(model):
        fully_shard(layer, mp_policy=mp, reshard_after_forward=not staged and i < layers - 1)
    fully_shard(model, mp_policy=mp, reshard_after_forward=not staged)
    records: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            name = func.__name__.split(".")[0]
            if name in COPY_OPS:
                rec = records[f"{func.namespace}::{name}"]
                # in-place / out= ops: what they read (args) + what they write (out= or the first arg)
                written = kwargs.get("out") if "out" in kwargs else (args[0] if name.endswith("_") else out)
                read = args[1:] if name.endswith("_") and name not in ("div_",) else args
                if name == "all_gather_copy_in":  # reads the shards, writes them into this rank's slice
                    read, written = args[0], args[0]
                rec[0] += 1
                rec[1] += _nbytes(list(read)) + _nbytes(written)
                if isinstance(written, torch.Tensor) and written.numel() == width * width:
                    sized = records[f"{func.namespace}::{name} (parameter-sized)"]
                    sized[0] += 1
                    sized[1] += _nbytes(list(read)) + _nbytes(written)
            return out

    x = torch.randn(4, width)
    with Recorder():
        if staged:
            _pipeline_step(model, x, pipeline_micro_batches)
        else:
            model(x).float().sum().backward()
    if rank == 0 and as_json:
        print(json.dumps({"world_size": world, "parameters": layers * width * width,
                          "pipeline_micro_batches": pipeline_micro_batches,
                          "ops": {name: {"count": c, "bytes": b} for name, (c, b) in records.items()}}))
    elif rank == 0:
        params = layers * width * width
        print(f"world size {world}, {layers} x Linear({width}, {width}): {params} parameters (unsharded)")
        for name, (count, nbytes) in sorted(records.items()):
            print(f"  {name:32s} {count:3d} ops  {nbytes / params:6.3f} B per parameter")


def main() -> None:
    import torch.multiprocessing as mp

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--json", action="store_true", help="one JSON line: op -> count, bytes read + written")
    p.add_argument("--port", type=int, default=0, help="gloo rendezvous port (0: a free one)")
    p.add_argument("--pipeline-micro-batches", default="0",
                   help="run M passes as torch.distributed.pipelining drives an FSDP2 stage (0: one plain pass); "
                        "a comma list (0,1,3) runs each case in turn in one process group, a line each")
    a = p.parse_args()
    try:
        cases = tuple(int(m) for m in a.pipeline_micro_batches.split(","))
    except ValueError:
        p.error(f"--pipeline-micro-batches takes whole numbers >= 0, comma-separated; got {a.pipeline_micro_batches!r}")
    if any(m < 0 for m in cases):
        p.error(f"--pipeline-micro-batches takes whole numbers >= 0; got {a.pipeline_micro_batches!r}")
    if not a.port:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            a.port = sock.getsockname()[1]
    mp.spawn(_worker, args=(a.world_size, a.width, a.layers, a.port, a.json, cases),
             nprocs=a.world_size, join=True)


if __name__ == "__main__":
    main()
