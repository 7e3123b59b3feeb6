"""What guards the server: a request-body size limit (413) and response headers that keep the
page to its own origin (no CDN, no framing, no sniffing) as ASGI middleware; a bounded queue in
front of the estimates (MAX_CONCURRENT run at once, MAX_WAITING wait their turn in arrival order,
further requests get 503 with Retry-After) and a time budget around each estimate."""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import threading
from typing import Any, Callable

MAX_BODY_BYTES = 256 * 1024
REQUEST_SECONDS = 20.0
"""Time budget of one estimate once it runs; past it the request is answered 503 (the work is
bounded by the schema, the API's `top` (web/bounds.py) and the planner's own search limit,
planner.search.layouts_to_evaluate, so this is a backstop, not the normal path)."""
MAX_CONCURRENT = 4
"""Estimates running at once (2-core machines: more only share the same cores)."""
MAX_WAITING = 64
"""Estimates waiting for a running slot, in arrival order; the next one is answered 503 with
Retry-After. 32 clients at once each have one request in flight, so none is turned away."""
QUEUE_SECONDS = 30.0
"""Longest wait in the queue before a request is answered 503 (64 waiting x the slowest real
plan, ~0.4 s on 2 cores, over 4 slots is ~6 s)."""
RETRY_AFTER_SECONDS = 2
_log = logging.getLogger(__name__)


class Busy(Exception):
    """The queue is full, a request waited too long, or an estimate ran over its time budget
    (answered 503 with Retry-After)."""


class Stopped(Exception):
    """Raised inside an estimate, at a checkpoint, once its request has been answered 503: the
    rest of the work is dropped and its slot freed."""


class Slots:
    """MAX_CONCURRENT running slots and a FIFO of at most MAX_WAITING waiters, shared by every
    event loop of the app (a waiter is an asyncio future of its own loop, woken thread-safely;
    a slot is released from the worker thread that held it)."""

    def __init__(self, running: int, waiting: int) -> None:
        self.capacity, self.max_waiting = running, waiting
        self._free, self._lock = running, threading.Lock()
        self._queue: collections.deque[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = collections.deque()

    @property
    def running(self) -> int:
        return self.capacity - self._free

    @property
    def waiting(self) -> int:
        return len(self._queue)

    async def acquire(self, timeout: float) -> None:
        """Take a slot now, or wait in line for up to ``timeout`` seconds; Busy when the line is
        full or the wait runs out (then nothing is held)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._free > 0 and not self._queue:
                self._free -= 1
                return
            if len(self._queue) >= self.max_waiting:
                raise Busy(f"{self.capacity} estimates are running and {len(self._queue)} are waiting (the most "
                           f"this server queues); try again in a moment")
            entry = (loop, loop.create_future())
            self._queue.append(entry)
        try:
            await asyncio.wait_for(entry[1], timeout)
        except (asyncio.TimeoutError, asyncio.CancelledError) as exc:
            with self._lock:
                queued = entry in self._queue
                if queued:
                    self._queue.remove(entry)
            if not queued and entry[1].done() and not entry[1].cancelled():
                self.release()  # the slot arrived as the wait ended: hand it on
            # (a slot granted but not yet delivered sees the cancelled future and is handed on)
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise Busy(f"waited {timeout:.0f} s for one of the {self.capacity} estimate slots; try again in a "
                       "moment") from None

    def release(self) -> None:
        """Give the slot to the first waiter, or free it (callable from any thread)."""
        with self._lock:
            if not self._queue:
                self._free += 1
                return
            loop, future = self._queue.popleft()
        try:
            loop.call_soon_threadsafe(self._deliver, future)
        except RuntimeError:  # the waiter's loop has closed: pass the slot on
            self.release()

    def _deliver(self, future: asyncio.Future) -> None:
        if future.done():  # the waiter gave up (time or a closed connection) meanwhile
            self.release()
        else:
            future.set_result(None)


def slots_of(app: Any) -> Slots:
    if not hasattr(app.state, "estimate_slots"):
        app.state.estimate_slots = Slots(MAX_CONCURRENT, MAX_WAITING)
    return app.state.estimate_slots


async def guarded(app: Any, fn: Callable[..., Any], *args: Any, job: str, hint: str | None = None) -> Any:
    """Run ``fn(*args, stop)`` in a worker thread once a slot is free (waiting in line, see
    :class:`Slots`), within REQUEST_SECONDS; past it, 503 with ``hint``, else ``job``'s (NARROWER). ``stop`` is
    a threading.Event set when the request is answered 503 for time: work that checks it (raising Stopped) ends early. A slot is
    released when the work ends, even after its request has been answered 503, so slow work
    cannot pile up."""
    slots = slots_of(app)
    await slots.acquire(QUEUE_SECONDS)
    stop = threading.Event()

    def work() -> Any:
        try:
            return fn(*args, stop)
        except Stopped:
            return None  # its request was answered 503 already
        finally:
            slots.release()

    loop = asyncio.get_running_loop()
    try:
        running = loop.run_in_executor(None, work)
    except BaseException:
        slots.release()
        raise
    try:
        return await asyncio.wait_for(asyncio.shield(running), REQUEST_SECONDS)
    except asyncio.TimeoutError:
        stop.set()
        narrower = hint or NARROWER[job]  # every job has its own (tests/test_hostile_wave9.py)
        raise Busy(f"the estimate took longer than the {REQUEST_SECONDS:.0f} s limit; narrow the request "
                   f"({narrower})") from None


NARROWER = {"training": "give \"gpus\" (one count: no search over counts) or fix \"tp\" and \"pp\"",
            "budget": "give \"gpus\" (one count: no search over counts) or fix \"tp\" and \"pp\"",
            "memory": "fix \"tp\" and \"pp\", or a shorter \"seq_len\"",
            "plan": "fewer GPU counts, a smaller top",
            "inference": "a shorter context or prompt, or \"search\": false to leave out the search over GPU types"}
"""What makes a slow estimate smaller, by job (``guarded``'s ``job``, service.estimate's job name; one
entry per jobs.JOBS name, tests/test_hostile_wave9.py), each naming that job's own fields: an inference request
over its budget (a 16M-token context times ~8,000 prefill chunks per GPU type searched, ~30 s) was told 'fewer GPU
counts, a smaller top', fields it does not have (wave 9); training, budget and memory were too (wave 9 review S2).
Training and budget without "gpus" search the counts (jobs.training.layout.layout_for_deadline), and fixed "tp" /
"pp" narrow every layout search (planner.search); memory lays out one count."""
CAMPAIGN_NARROWER = f"fewer \"stages\", or in each {NARROWER['budget']}"
"""POST /api/campaign's hint: it runs budget estimates stage after stage, so fewer stages shorten it too (hostile wave
22, H's item 7: it was told the budget's hint alone)."""


SECURITY_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy",
     b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; "
     b"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
)


class Guard:
    """Refuse bodies over ``max_bytes`` with 413 (by Content-Length, or while reading a
    chunked body), then replay the body to the app; add SECURITY_HEADERS to every response."""

    def __init__(self, app: Callable, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = dict(message, headers=list(message.get("headers", [])) + list(SECURITY_HEADERS))
            await send(message)

        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._too_large(send_with_headers)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client went away
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                await self._too_large(send_with_headers)
                return
            if not message.get("more_body", False):
                break
        body, replayed = b"".join(chunks), False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        started = False

        async def send_tracked(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send_with_headers(message)

        try:
            await self.app(scope, replay, send_tracked)
        except Exception:
            # a bug, not bad input: logged with its traceback, answered as one JSON line on a
            # connection that stays usable (uvicorn resets a kept-alive connection after an
            # exception that escapes the app, and the client's next request fails too)
            _log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            await self._answer(send_with_headers, 500, "internal error (a gpuplan bug: the server log has the "
                               "traceback; please report it with the request)")

    async def _too_large(self, send: Callable) -> None:
        await self._answer(send, 413, f"request body larger than {self.max_bytes:,} bytes")

    @staticmethod
    async def _answer(send: Callable, status: int, message: str) -> None:
        payload = json.dumps({"detail": message, "field": None, "message": message}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})
