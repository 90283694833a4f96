"""The engine's queue for the API: at most COMPUTING runs at once and WAITING more requests queued (beyond
that, 503 with Retry-After), recent answers cached. A request whose client goes away leaves the queue, and
its engine run stops at the next (block, tile) step: a page that fires requests and drops them (20 `<img>`
tags) cannot pile up work for the requests that are still wanted."""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import anyio
from fastapi import Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from flashviz.engine import cancel

T = TypeVar("T")

COMPUTING = 2  # engine runs at once (the server's threads share one GIL; more would only slow each down)
WAITING = 16  # requests queued for a run; one more is answered 503 at once
RETRY_AFTER_S = 2
CACHE_ENTRIES = 16
CACHE_BYTES = 256 * 2**20
GZIP_MIN_BYTES = 1024  # smaller answers go as they are
# above this, deflate codes bytes without looking for repeats (Z_HUFFMAN_ONLY): a large trace is mostly base64 of
# float32 values, where repeats are rare; the search for them took 0.4 s at N = 4096 for 0.5 % of the size
GZIP_HUFFMAN_BYTES = 2 * 2**20


def accepts_gzip(request: Request) -> bool:
    """Whether the request's Accept-Encoding takes gzip (by name or `*`, with a q-value above 0)."""
    for part in request.headers.get("accept-encoding", "").split(","):
        name, _, params = part.partition(";")
        if name.strip().lower() not in ("gzip", "*"):
            continue
        q = params.strip().lower()
        if q.startswith("q="):
            try:
                if float(q[2:]) <= 0:
                    continue
            except ValueError:
                continue
        return True
    return False


def gzipped(body: bytes) -> bytes:
    strategy = zlib.Z_HUFFMAN_ONLY if len(body) > GZIP_HUFFMAN_BYTES else zlib.Z_DEFAULT_STRATEGY
    z = zlib.compressobj(6, zlib.DEFLATED, 31, 8, strategy)  # wbits 31: a gzip member
    return z.compress(body) + z.flush()


class Cache:
    """Recent answers by key (LRU), bounded in entries and bytes; shared with the warm-up thread."""

    def __init__(self, entries: int = CACHE_ENTRIES, size: int = CACHE_BYTES) -> None:
        self.entries, self.size = entries, size
        self.items: OrderedDict[Hashable, bytes] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Hashable) -> bytes | None:
        with self.lock:
            body = self.items.get(key)
            if body is not None:
                self.items.move_to_end(key)
            return body

    def forget(self, key: Hashable) -> None:
        with self.lock:
            self.items.pop(key, None)

    def put(self, key: Hashable, body: bytes) -> None:
        with self.lock:
            self.items[key] = body
            while len(self.items) > self.entries or sum(map(len, self.items.values())) > self.size:
                self.items.popitem(last=False)


class Gate:
    """Runs `compute(arg)` off the event loop for a request, within the bounds above. Its counters are for
    tests and the load bench: `waiting`, `running`, `abandoned` (clients gone before their answer),
    `cancelled` (engine runs stopped midway), `busy` (503s), `disconnected` (clients seen going away)."""

    def __init__(self, computing: int = COMPUTING, waiting: int = WAITING) -> None:
        self.slots = anyio.Semaphore(computing)
        self.max_waiting = waiting
        self.cache = Cache()
        self.gz = Cache()  # the same answers, gzipped (made on the first request that accepts gzip)
        # one run per key at a time: a repeat of a request on the engine waits for its answer in the cache
        # (without a slot) instead of computing it again; [lock, requests holding or waiting for it]
        self.keys: dict[Hashable, list[Any]] = {}
        self.waiting = 0
        self.running = 0
        self.abandoned = 0
        self.cancelled = 0
        self.busy = 0
        self.disconnected = 0

    async def answer(self, request: Request, key: Hashable, compute: Callable[[T], bytes], arg: T) -> Response:
        body = await self.made(request, key, compute, arg)
        if isinstance(body, Response):
            return body
        return await self.send(request, body, key)

    async def made(self, request: Request, key: Hashable, compute: Callable[[T], bytes], arg: T) -> bytes | Response:
        """The answer's bytes (cached, or computed within the bounds), or the Response saying why there are none
        (503 busy, 499 the client left)."""
        body = self.cache.get(key)
        if body is None:
            if self.waiting >= self.max_waiting:
                self.busy += 1
                return JSONResponse(
                    {"detail": f"busy: {self.waiting} requests are waiting for the engine; try again in a moment"},
                    status_code=503,
                    headers={"Retry-After": str(RETRY_AFTER_S)},
                )
            body = await self.run(request, key, compute, arg)
            if body is None:  # the client has gone: nobody reads this
                self.abandoned += 1
                return Response(status_code=499)
        return body

    async def send(self, request: Request, body: bytes, key: Hashable | None = None) -> Response:
        """`body` as JSON, gzipped when it is large enough and the client takes gzip (cached by `key` when given)."""
        if len(body) >= GZIP_MIN_BYTES and accepts_gzip(request):
            packed = None if key is None else self.gz.get(key)
            if packed is None:
                packed = await run_in_threadpool(gzipped, body)
                if key is not None:
                    self.gz.put(key, packed)
            headers = {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"}
            return Response(content=packed, media_type="application/json", headers=headers)
        return Response(content=body, media_type="application/json", headers={"Vary": "Accept-Encoding"})

    async def run(self, request: Request, key: Hashable, compute: Callable[[T], bytes], arg: T) -> bytes | None:
        """Wait for a slot and compute, unless the client goes away first (then None)."""
        gone = threading.Event()
        body: bytes | None = None
        error: Exception | None = None
        self.waiting += 1
        queued = True
        same = self.keys.setdefault(key, [anyio.Lock(), 0])
        same[1] += 1
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self.watch, request, gone, tasks.cancel_scope)
                async with same[0], self.slots:
                    self.waiting -= 1
                    queued = False
                    body = self.cache.get(key)  # a request ahead of this one may have made it
                    if body is None:
                        self.running += 1
                        try:
                            made = await run_in_threadpool(cancel.run, gone, compute, arg)
                            self.cache.put(key, made)
                            body = made
                        except cancel.Cancelled:
                            self.cancelled += 1
                        except Exception as exc:  # raised below, outside the task group (no ExceptionGroup)
                            error = exc
                        finally:
                            self.running -= 1
                tasks.cancel_scope.cancel()  # stop watching
        finally:
            if queued:
                self.waiting -= 1
            same[1] -= 1
            if not same[1]:
                del self.keys[key]
        if error is not None:
            raise error
        return None if gone.is_set() else body

    async def watch(self, request: Request, gone: threading.Event, scope: anyio.CancelScope) -> None:
        """Wait for the client to disconnect; then mark its work gone (a run stops at its next step) and stop
        waiting for a slot."""
        while (await request.receive())["type"] != "http.disconnect":
            pass
        self.disconnected += 1
        gone.set()
        scope.cancel()
