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
"""Decode tables kept (one per (model, setup, GPU type, TP, context)): the README's `infer llama-3.1-8b --rps 20
--ttft-p99 500ms --tpot 50ms --prompt 2K --output-tokens 512` fills 121, 13,094 steps and 59,668 all-reduce seconds
in all: 5.97 MB traced (tracemalloc, dropped by clear(); measured s22 G3)."""

ALLREDUCES_LIMIT = 200_000
"""All-reduce seconds kept over every table together (DecodeTable.allreduces; kernels' NCCL table is capped at
200,000 keys too): past it the least recently used tables' are dropped (drop_allreduces), to be worked out again
in one pass if a later answer needs a batch those tables have not timed. Without it one
`infer pythia-70m ... --max-num-seqs 65536` kept 3.6 M all-reduce entries (+3.6 M per-batch messages) over 119
tables: 554 MB traced (review s22 R3 M1)."""


class DecodeTable:
    """One replica shape's decode steps: ``steps`` batch -> seconds (roofline.decode_step's total), and the seconds
    of the NCCL all-reduces its steps at batches 1..``primed_to`` ask for (``allreduces``: message bytes -> seconds,
    worked out in one vectorised pass when a step first needs one kernels does not hold; None until then or once
    dropped), handed to kernels message by message (jobs/inference/decode_table.hand_allreduces). A batch's messages
    are not kept: they are worked out again from the batch (roofline.decode_allreduce_messages)."""

    __slots__ = ("steps", "primed_to", "allreduces")

    def __init__(self) -> None:
        self.steps: dict = {}
        self.primed_to = -1
        self.allreduces: dict | None = None


_TABLES: OrderedDict[tuple, DecodeTable] = OrderedDict()
_held = 0
"""The all-reduce entries held over every table of _TABLES (the sum of len(table.allreduces)): one count, not a
cache (no answer is read from it), bounded by ALLREDUCES_LIMIT or one table's own. Kept as each table's entries are
kept or dropped (keep_allreduces, drop_allreduces: the only writers of ``allreduces``) rather than summed over _TABLES
when needed: that walk hashes every key (OrderedDict's values() looks each value up by its key: ~1.8 us a key of
llama-3.1-8b's frozen inputs, measured s24; ~0.5 ms over 256 tables at each table a sizing answer primes)."""


def decode_table(key: tuple) -> DecodeTable:
    """The DecodeTable of ``key`` (hashable, every input of the step), empty the first time."""
    table = _TABLES.get(key)
    if table is None:
        table = _TABLES[key] = DecodeTable()
        if len(_TABLES) > TABLES_LIMIT:
            drop_allreduces(_TABLES.popitem(last=False)[1])
    else:
        _TABLES.move_to_end(key)
    return table


def keep_allreduces(table: DecodeTable, seconds: dict) -> None:
    """``table`` keeps ``seconds`` (message bytes -> seconds) as its ``allreduces``; the least recently used other
    tables' are dropped while more than ALLREDUCES_LIMIT entries are held (one table alone may hold more: its
    answer needs them)."""
    global _held
    drop_allreduces(table)
    table.allreduces = seconds
    _held += len(seconds)
    if _held <= ALLREDUCES_LIMIT:  # no walk of _TABLES (_held)
        return
    for other in list(_TABLES.values()):
        if other is not table:
            drop_allreduces(other)
        if _held <= ALLREDUCES_LIMIT:
            break


def drop_allreduces(table: DecodeTable) -> None:
    """Forget ``table``'s all-reduce seconds (its ``primed_to`` stays: they are worked out again when needed)."""
    global _held
    if table.allreduces is not None:
        _held -= len(table.allreduces)
        table.allreduces = None


def held_allreduces() -> int:
    """The all-reduce entries held over every table (at most ALLREDUCES_LIMIT, or one table's own)."""
    return _held


def clear() -> None:
    """Forget every table (tests that time the search from nothing)."""
    global _held
    _TABLES.clear()
    _held = 0
