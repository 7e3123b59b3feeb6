"""Identical requests in flight share one estimate: the first runs it (through the queue of
web/limits.py), the others wait for its answer instead of taking slots of their own. With the
result cache in front (web/service.py), 32 clients asking for the same plan at once cost one
estimate, not 32 places in the queue.

Shared by every event loop of the app: the shared answer is a thread-safe
concurrent.futures.Future that each waiting loop awaits through asyncio.wrap_future.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from gpuplan.web.limits import Busy


class InFlight:
    """The estimates running now, by request key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, concurrent.futures.Future] = {}

    def __len__(self) -> int:
        return len(self._running)

    async def run(self, key: str, start: Callable[[], Awaitable[Any]]) -> Any:
        """``await start()`` for the first request with ``key``; the same answer (or error) for
        requests with that key that arrive while it runs."""
        with self._lock:
            shared = self._running.get(key)
            if shared is None:
                mine: concurrent.futures.Future = concurrent.futures.Future()
                self._running[key] = mine
        if shared is not None:
            # shield: a follower that goes away must not cancel the leader's answer
            return await asyncio.shield(asyncio.wrap_future(shared))
        try:
            result = await start()
        except Exception as exc:
            mine.set_exception(exc)
            raise
        except BaseException:  # the leader's request went away: the others ask again
            mine.set_exception(Busy("the same request was being answered and was cancelled; try again"))
            raise
        else:
            mine.set_result(result)
            return result
        finally:
            with self._lock:
                self._running.pop(key, None)


def flights_of(app: Any) -> InFlight:
    if not hasattr(app.state, "in_flight"):
        app.state.in_flight = InFlight()
    return app.state.in_flight
