"""The words of a number-bound refusal ('must be >= 1e-06 and <= 1000000 GB/s a node'), with the field's unit.

The bounds were said bare (review s20b N12: `--storage-read 1e-9` read 'must be >= 1e-06 and <= 1000000', where
--help names GB/s a node): each field below says its unit after the bounds, the wording otherwise unchanged. The
unit is the field's as the schema reads it (its help text), keyed by field name: every job's schema, plan files,
the web API and the Python API read a field of one name in one unit (schema.types reads them all). A duration's
bounds are said in seconds and --days' in days by the readers that convert them (schema.types.seconds / days)."""

from __future__ import annotations

UNITS: dict[str, str] = {
    # rates and sizes (jobs/budget/fields.py, schema/training_fields.py help texts)
    "storage_read": "GB/s a node", "storage_write": "GB/s a node", "host_copy": "GB/s a GPU",
    "nic_gbit_per_gpu": "Gb/s a GPU", "failure_rate": "interruptions a GPU-hour",
    "spot_preemption": "reclaims a node-month", "spot_price": "USD a GPU-hour", "bytes_per_token": "bytes a token",
    "token_bytes": "bytes a token", "tokens_per_core": "tokens/s a core", "cpu_cores": "cores a node",
    "keep_checkpoints": "checkpoints",
    # memory in GiB a GPU (jobs/inference/schema.py, schema/vocabulary.Gib)
    "comm_buffer_gib": "GiB", "cuda_context_gib": "GiB", "cuda_graph_gib": "GiB", "driver_reserved_gib": "GiB",
    "nccl_gib": "GiB", "non_torch_gib": "GiB",
    # microseconds (jobs/inference/schema.py)
    "allreduce_latency_us": "us", "graph_layer_us": "us a layer", "launch_layer_us": "us a layer",
    # tokens and sequences
    "tokens": "tokens", "global_batch_tokens": "tokens", "seq_len": "tokens", "context": "tokens",
    "prompt": "tokens", "output_tokens": "tokens", "prefill_tokens": "tokens", "block_size": "tokens",
    "global_batch": "sequences", "micro_batch": "sequences", "batch": "sequences", "max_num_seqs": "sequences",
    "params": "parameters", "rps": "requests/s",
    # in-loop evaluation (docs/budget.md 4a)
    "eval_interval": "optimizer steps", "eval_iters": "iterations",
}
"""A field's unit as its bound refusal says it; a field not named (a degree, a share, a count of layers) has none."""


def plain(bound: float) -> str:
    """A bound as written in full, 1048576 rather than 1.04858e+06; past 10^12, 1e+18 stays short."""
    return f"{int(bound)}" if bound == int(bound) and abs(bound) < 1e12 else f"{bound:g}"


def bound_words(low: float, high: float, low_open: bool, field: str, unit: str | None = None) -> str:
    """The refusal of a number outside [low, high] (or (low, high]): 'must be >= 1000 and <= 1e+18 tokens', in
    ``unit`` (None: the field's own, UNITS; '' none)."""
    unit = UNITS.get(field, "") if unit is None else unit
    return f"must be {f'> {plain(low)}' if low_open else f'>= {plain(low)}'} and <= {plain(high)}" + \
        (f" {unit}" if unit else "")
