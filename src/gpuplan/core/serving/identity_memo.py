"""A pure function's answers found by the identity of its arguments first (docs/performance.md, 'Serving sizing').

roofline.step_time asks roofline._step_constants_of (an lru_cache by value) ~13,000 times in the README's sizing
answer for ~200 distinct (spec, setup, part) objects; the lru_cache hashed the three frozen dataclasses field by
field at every call (~20 us of a ~70 us decode step). Here a call whose every argument is the very object of an
earlier call returns that call's answer, without hashing them; any other call goes to the function, whose answer is
by value, so an answer here is the one the function gives. An entry holds its arguments, so their ids are not
reused while it is kept. The first ``by_value`` arguments are keyed by value instead (numbers: cheap to hash, and an
equal number is often another object: int(x) above 256 makes a new one at each call); a function's arguments at one
position are all numbers or all objects (its callers' own), so a number's value and an object's id never share a key.
"""

from __future__ import annotations

from collections.abc import Callable


def by_identity(function: Callable, limit: int = 1024, by_value: int = 0) -> Callable:
    """``function`` (an lru_cache-wrapped pure function) called through a table keyed by its arguments' ids (the
    first ``by_value`` by value), at most ``limit`` entries (emptied when full). The wrapper's ``by_id`` is that
    table; its cache_clear empties it and the function's own cache, its cache_info is the function's. A closure, as
    lru_cache's wrapper is, not a class with __call__: ~0.6 against ~1.1 us a hit (a sizing answer has ~24,000)."""
    by_id: dict = {}

    def remembered(*args):
        key = (*args[:by_value], *map(id, args[by_value:]))
        found = by_id.get(key)
        if found is not None:  # its entry holds the objects of those ids alive: these are they
            return found[1]
        answer = function(*args)
        if len(by_id) >= limit:
            by_id.clear()
        by_id[key] = (args, answer)
        return answer

    def cache_clear() -> None:
        by_id.clear()
        function.cache_clear()

    remembered.by_id, remembered.cache_clear, remembered.cache_info = by_id, cache_clear, function.cache_info
    return remembered
