"""Checkpoints: how big, how long to write, how long the GPUs wait, how much space to keep.

A training checkpoint holds the parameters, the fp32 master copy (if the recipe keeps one) and
the optimizer states - not the gradients, which are rebuilt by the next backward pass. Bytes per
parameter come from gpuplan.core.memory.training (the same recipes and optimizers as the memory model):
mixed precision + AdamW = 2 + 4 + 8 = 14 B/param; the article's recipe = 2 + 8 = 10 B/param.

    write time  = checkpoint bytes / min(writer nodes x per-node write, shared storage)
    sync stall  = write time (every GPU waits)
    async stall = per-GPU shard / device-to-host copy bandwidth (the write continues in the
                  background: torch.distributed.checkpoint.async_save stages the state dict in
                  CPU memory, then saves it in a separate thread - PyTorch DCP docs)
    retention   = checkpoints kept x checkpoint bytes

Units: bytes, bytes/s, seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.precision import OptimizerSpec, PrecisionRecipe

# Device-to-host copy per GPU: nvbandwidth measured 25.1 GB/s on A100-SXM4 (PCIe Gen4,
# NVIDIA/nvbandwidth#42) and 52.8 GB/s D2H on H100 (PCIe Gen5, NVIDIA/nvbandwidth#24).
DEFAULT_HOST_COPY_BYTES_PER_S = 25e9
# torchtitan job_config Checkpoint.keep_latest_k: "The default value is 10 to avoid filling up the disk."
DEFAULT_KEEP_CHECKPOINTS = 10
STATE_BYTES_CACHE = 64
"""(model, recipe, optimizer) checkpoint states kept (_state_bytes): a plan asks for one, `gpuplan validate`
for 46 (2026-12-05; 1,246 calls), the web server for what its users ask (62 catalog models at one recipe)."""


@dataclass(frozen=True)
class CheckpointSize:
    """Bytes of one full training checkpoint, by content, and how it is split over writers."""

    weights: float
    master: float
    optimizer: float
    writers: int
    """Ranks that each write a distinct shard."""
    params: float = 0.0
    """Parameters counted (the bare N for a --params model)."""

    @property
    def total(self) -> float:
        return self.weights + self.master + self.optimizer

    @property
    def shard(self) -> float:
        """Bytes one writer holds (even split)."""
        return self.total / self.writers

    @property
    def bytes_per_param(self) -> float:
        return self.total / max(self.params, 1.0)


def checkpoint_writers(gpus: int, zero: int, model_parallel: int = 1, writer_group: int | None = None) -> int:
    """Ranks holding distinct state: with ZeRO >= 1 (or FSDP) optimizer states are sharded over
    every rank, so all write (torch DCP / Megatron distributed checkpointing: DCP's dedup_save_plans spreads a
    replicated item over the plans, so an HSDP job's ranks all write too); with plain DDP one data-parallel
    replica (tp x pp ranks) holds everything; ``writer_group`` (mics_writer_group): only that many data-parallel
    ranks of each model-parallel position write."""
    if zero >= 1 and writer_group:
        return max(1, min(int(gpus), writer_group * model_parallel))
    return max(1, int(gpus) if zero >= 1 else min(int(gpus), model_parallel))


def mics_writer_group(framework: str, shard_group: int | None) -> int | None:
    """The data-parallel ranks that write a DeepSpeed MiCS checkpoint: its first shard group only -- the engine
    saves ZeRO state where the rank in the optimizer's dp_process_group equals the data-parallel rank
    (engine.py@edaa722 L1591-1596), and MiCS_Optimizer sets that group to the shard group (zero/mics.py@edaa722
    L390), each writer holding total / shard. None for another framework or no group (every rank writes)."""
    return shard_group if framework == "deepspeed" and shard_group else None


def checkpoint_size(spec: ModelSpec, recipe: PrecisionRecipe, optimizer: OptimizerSpec,
                    writers: int) -> CheckpointSize:
    """Whole-model checkpoint bytes from the memory model's unsharded states (gradients excluded)."""
    weights, master, optimizer_bytes, params = _state_bytes(spec, recipe, optimizer)
    return CheckpointSize(weights=weights, master=master, optimizer=optimizer_bytes, writers=writers, params=params)


@lru_cache(maxsize=STATE_BYTES_CACHE)
def _state_bytes(spec: ModelSpec, recipe: PrecisionRecipe, optimizer: OptimizerSpec) -> tuple[float, ...]:
    """(weights, master, optimizer bytes, parameters) of the whole model, unsharded: what checkpoint_size
    reads of the memory model, once per model, recipe and optimizer; the writers are not read (a plan's
    search budgets every (GPU count, writers) group with the same three: `plan llama-2-7b --global-batch-tokens
    1e12` asks 1,172 times, 73 keys when the writers were in the key, 1 now)."""
    # on use: the memory model imports numpy (~40 ms), and the budget schema reads this module's defaults
    # (jobs/budget/fields.py), so `train --help`, a refused input and `from gpuplan import BudgetInputs` need none
    from gpuplan.core.memory import training as M

    layout = ParallelLayout()
    params = M.stage_params(spec, layout, 0)
    states = M.model_state_bytes(params, layout, recipe, optimizer, spec.hidden_size)
    return states.weights, states.master, states.optimizer, params.total


def writer_nodes(writers: int, devices_per_node: int, nodes: int) -> int:
    """Nodes that hold at least one writer (ranks fill nodes in order)."""
    return max(1, min(nodes, math.ceil(writers / devices_per_node)))


def write_bandwidth(nodes_writing: int, write_per_node: float, shared_total: float | None = None) -> float:
    """Aggregate write bytes/s: nodes writing x their per-node rate, capped by ``shared_total``, the job's
    share of a shared system (its per-node share x the job's nodes: catalog/storage.toml shared_per_node).
    When every node writes (ZeRO / FSDP shards) the cap binds; when one DDP replica writes (a few nodes),
    each of them runs at its node link (the module's formula: min(writer nodes x per-node write, shared))."""
    aggregate = nodes_writing * write_per_node
    return aggregate if shared_total is None else min(aggregate, shared_total)


def write_seconds(checkpoint_bytes: float, bandwidth: float) -> float:
    return checkpoint_bytes / bandwidth


def async_stall_seconds(shard_bytes: float, host_copy_bytes_per_s: float, write_s: float,
                        interval_s: float) -> float:
    """GPU pause of an asynchronous save: the copy of this rank's shard to host memory, plus any
    part of the background write still running when the next save starts."""
    return shard_bytes / host_copy_bytes_per_s + max(0.0, write_s - interval_s)


def stall_seconds(write_s: float, shard_bytes: float, asynchronous: bool, host_copy_bytes_per_s: float,
                  interval_s: float) -> float:
    """Seconds every GPU waits per checkpoint: the whole write (sync) or the host copy (async)."""
    if asynchronous:
        return async_stall_seconds(shard_bytes, host_copy_bytes_per_s, write_s, interval_s)
    return write_s


def retention_bytes(checkpoint_bytes: float, keep: int) -> float:
    """Storage held by the last ``keep`` checkpoints."""
    return checkpoint_bytes * keep
