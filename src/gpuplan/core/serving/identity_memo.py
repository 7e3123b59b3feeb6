"""A pure function's answers found by the identity of its arguments first (docs/performance.md, 'Serving sizing').

roofline.step_time asks roofline._step_constants_of (an lru_cache by value) ~13,000 times in the README's sizing
answer for ~200 distinct (spec, setup, part) objects; the lru_cache hashed the three frozen dataclasses field by
field at every call (~20 us of a ~70 us decode step). Here a call whose every argument is the very object of an
earlier call returns that call's answer, without hashing them; any other call goes to the function, whose answer is
by value, so an answer here is the one the function gives. An entry holds its arguments, so their ids are not
reused while it is kept.
"""

from __future__ import annotations

from collections.abc import Callable


class ByIdentity:
    """``function`` (an lru_cache-wrapped pure function) called through a table keyed by its arguments' ids, at most
    ``limit`` entries (emptied when full); cache_clear and cache_info reach the function's own cache too."""

    def __init__(self, function: Callable, limit: int = 1024) -> None:
        self.function, self.limit, self.by_id = function, limit, {}

    def __call__(self, *args):
        key = tuple(map(id, args))
        found = self.by_id.get(key)
        if found is not None:  # its entry holds the objects of those ids alive: these are they
            return found[1]
        answer = self.function(*args)
        if len(self.by_id) >= self.limit:
            self.by_id.clear()
        self.by_id[key] = (args, answer)
        return answer

    def cache_clear(self) -> None:
        self.by_id.clear()
        self.function.cache_clear()

    def cache_info(self):
        return self.function.cache_info()
