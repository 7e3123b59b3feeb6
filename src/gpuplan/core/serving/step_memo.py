"""Decode-step seconds by batch, remembered per replica shape across answers (docs/performance.md, 'Serving sizing').

The serving sizing (jobs/inference/sizing._step_times) times one decode step per integer batch its rate search
visits, for every (GPU type, TP) it tries: ~14,000 steps (roofline.decode_step) in the README's `--rps 20` answer,
each batch once an answer. A second answer on the same model, setup and replica (another rate or latency target:
tests/test_invariants_wave10.py's ladders, a web server's next request) asked the same steps again. decode_step is a
pure function of its frozen inputs (ModelSpec, ParamGroups, ServingSetup, the part, tp, the KV bytes and context a
sequence: every one in the key), so its totals are kept by that key, at most TABLES_LIMIT tables, least recently
used first out. Units: seconds.
"""

from __future__ import annotations

from collections import OrderedDict

TABLES_LIMIT = 256
"""Decode tables kept (one per (model, setup, GPU type, TP, context)): the README's sizing answer fills 121, ~115
batches each (~3 MB for all 256)."""

class DecodeTable:
    """One replica shape's decode steps: ``steps`` batch -> seconds (roofline.decode_step's total), and the NCCL
    all-reduces its steps at batches 1..``primed_to`` ask for (``messages``; ``allreduces``: message bytes -> seconds, worked out in
    one vectorised pass when a step first needs one kernels does not hold; None until then), handed to kernels
    message by message (jobs/inference/decode_table.hand_allreduces)."""

    __slots__ = ("steps", "primed_to", "messages", "allreduces")

    def __init__(self) -> None:
        self.steps: dict = {}
        self.primed_to = -1
        self.messages: list = []
        """The all-reduce message bytes of the step at each batch 1..primed_to (roofline.decode_allreduce_messages)."""
        self.allreduces: dict | None = None


_TABLES: OrderedDict[tuple, DecodeTable] = OrderedDict()


def decode_table(key: tuple) -> DecodeTable:
    """The DecodeTable of ``key`` (hashable, every input of the step), empty the first time."""
    table = _TABLES.get(key)
    if table is None:
        table = _TABLES[key] = DecodeTable()
        if len(_TABLES) > TABLES_LIMIT:
            _TABLES.popitem(last=False)
    else:
        _TABLES.move_to_end(key)
    return table


def clear() -> None:
    """Forget every table (tests that time the search from nothing)."""
    _TABLES.clear()
