"""A fake process group and FSDP2 sharding for CPU measurement (torch imported by the caller's
functions only): what gpuplan measure needs to track one rank of a sharded run."""

from __future__ import annotations

from collections.abc import Sequence

from gpuplan.errors import InputError


def decoder_layers(model, n_layers: int):
    """The repeated decoder blocks: HF's _no_split_modules classes, else the longest ModuleList."""
    import torch

    names = set(getattr(model, "_no_split_modules", None) or ())
    layers = [m for m in model.modules() if type(m).__name__ in names]
    if len(layers) == n_layers:
        return layers
    lists = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == n_layers]
    if lists:
        return list(lists[0])
    return layers


def enter_fake_process_group(stack, world_size, patch_sharding_fake_mode: bool):
    import torch.distributed as dist
    import torch.distributed.tensor._sharding_prop as sharding_prop
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        raise InputError("world_size", world_size,
                         "1 while torch.distributed is already initialised in this process "
                         "(the measurement needs its own fake process group)")
    dist.init_process_group("fake", rank=0, world_size=world_size, store=FakeStore())
    stack.callback(dist.destroy_process_group)
    # Trap 4: DTensor sharding propagation would reuse our FakeTensorMode, and the tracker (which
    # skips ops run under a *different* fake mode) would then count global-shape tensors as
    # allocations, e.g. unsharded optimizer states in opt.step. Force a private fake mode.
    if patch_sharding_fake_mode:
        orig = sharding_prop.detect_fake_mode
        sharding_prop.detect_fake_mode = lambda *a, **k: None
        stack.callback(setattr, sharding_prop, "detect_fake_mode", orig)
    _patch_chunking(stack)
    return init_device_mesh("cpu", (world_size,))


class LazyChunks(Sequence):
    """``torch.chunk(tensor, n, dim)`` padded with empty tensors to ``n`` (FSDP2's
    ``_chunk_with_empty``), each chunk made only when indexed. FSDP2 builds every rank's chunk of
    every parameter and then reads rank 0's (and chunk 0's size); under a fake process group of
    world size N that is N tensors per parameter, seconds per thousand ranks. Made on demand, the
    cost no longer grows with N; the chunks read are the same views (trap 11, docs/measure.md)."""

    def __init__(self, tensor, num_chunks: int, dim: int):
        self.tensor, self.num_chunks, self.dim = tensor, num_chunks, dim
        size = tensor.size(dim)
        self.step = -(-size // num_chunks) if size else 0  # torch.chunk's split size

    def __len__(self) -> int:
        return self.num_chunks

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.num_chunks))]
        i = index + self.num_chunks if index < 0 else index
        if not 0 <= i < self.num_chunks:
            raise IndexError(index)
        size, start = self.tensor.size(self.dim), i * self.step
        if size == 0:  # torch.chunk gives n empty chunks of the tensor's shape
            return self.tensor.narrow(self.dim, 0, 0)
        if start < size:
            return self.tensor.narrow(self.dim, start, min(self.step, size - start))
        return self[0].new_empty(0)  # past the last chunk: padding, as _chunk_with_empty appends


def _patch_chunking(stack) -> None:
    import torch.distributed.fsdp._fully_shard._fsdp_param as fsdp_param

    orig = getattr(fsdp_param, "_chunk_with_empty", None)
    if orig is None:  # another torch: FSDP2 chunks as it does (slower for large world sizes)
        return
    fsdp_param._chunk_with_empty = LazyChunks
    stack.callback(setattr, fsdp_param, "_chunk_with_empty", orig)


def shard(model, n_layers, mesh, torch, precision) -> None:
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    if precision == "bf16":
        mp = MixedPrecisionPolicy()
    else:
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    layers = decoder_layers(model, n_layers)
    if len(layers) != n_layers:
        raise InputError("world_size", mesh.size(),
                         f"1 for this model: its {n_layers} decoder layers could not be found to shard")
    for layer in layers:
        fully_shard(layer, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)
