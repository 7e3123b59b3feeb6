"""What guards the server: a request-body size limit (413) and response headers that keep the
page to its own origin (no CDN, no framing, no sniffing) as ASGI middleware; a time budget and a
cap on estimates running at once (503 naming the limit) around each estimate."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, Callable

MAX_BODY_BYTES = 256 * 1024
REQUEST_SECONDS = 20.0
"""Time budget of one estimate; past it the request is answered 503 (the work is bounded by the
schema and the API's search caps (web/bounds.py), so this is a backstop, not the normal path)."""
MAX_CONCURRENT = 4
"""Estimates running at once (2-core machines: more only queue); further requests get 503."""


class Busy(Exception):
    """Too many estimates at once, or one over its time budget (answered 503)."""


class Stopped(Exception):
    """Raised inside an estimate, at a checkpoint, once its request has been answered 503: the
    rest of the work is dropped and its slot freed."""


def _slots(app: Any) -> threading.BoundedSemaphore:
    if not hasattr(app.state, "estimate_slots"):
        app.state.estimate_slots = threading.BoundedSemaphore(MAX_CONCURRENT)
    return app.state.estimate_slots


async def guarded(app: Any, fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args, stop)`` in a worker thread within REQUEST_SECONDS and MAX_CONCURRENT slots.
    ``stop`` is a threading.Event set when the request is answered 503 for time: work that checks
    it (raising Stopped) ends early. A slot is released when the work ends, even after its request
    has been answered 503, so slow work cannot pile up."""
    slots = _slots(app)
    if not slots.acquire(blocking=False):
        raise Busy(f"{MAX_CONCURRENT} estimates are already running; try again in a moment")
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
        return await asyncio.wait_for(asyncio.shield(loop.run_in_executor(None, work)), REQUEST_SECONDS)
    except asyncio.TimeoutError:
        stop.set()
        raise Busy(f"the estimate took longer than the {REQUEST_SECONDS:.0f} s limit; narrow the request "
                   "(fewer GPU counts, a smaller top)") from None


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

        await self.app(scope, replay, send_with_headers)

    async def _too_large(self, send: Callable) -> None:
        message = f"request body larger than {self.max_bytes:,} bytes"
        payload = json.dumps({"detail": message, "field": None, "message": message}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})
