"""HTTP under ASGI, served as a threaded WSGI server would: one thread call per request.

Django's own ASGI handler runs its middleware on the event loop, and a synchronous view or
middleware hook in a thread of the request's own (`ThreadSensitiveContext`): a thread made
for each request, several hops between it and the loop (each `MiddlewareMixin` hook in
async mode is one; a synchronous-only middleware such as WhiteNoise's adds two more), and a
database connection opened and closed for each request, since connections belong to threads.
Every view and middleware of Fairway is synchronous, so this handler keeps Django's ASGI
request and response (`ASGIHandler.read_body`, `create_request`, `send_response`) and runs
the rest of a request in one call on a pool of long-lived threads: the `request_started`
signal, the middleware chain and the view (Django's synchronous `get_response`), and, for a
response whose body is already in memory, its `close()` with the `request_finished` signal.
The loop stays free for other requests and the websockets of the same process, and each
thread can keep its database connection between requests (`manage.py run` gives its web
processes `DB_CONN_MAX_AGE`; a connection is closed when that says, or when it failed, by
Django's checks at `request_started` and `request_finished`, both run in the thread that
used it, and checked before its first use in a request: `CONN_HEALTH_CHECKS`).

A streaming response (a static file) is sent from the loop like Django's and closed
afterwards in a pool thread. The calls go through asgiref's `sync_to_async` (with the pool as
its executor): each runs in a copy of the request's `contextvars` context, so nothing one
request sets (URLconf, time zone) is seen by the next one on the same thread, and an
`async_to_sync` inside a view (live events sent through the channel layer) runs on the
process's event loop, with its Redis connections, as under Django's handler.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.http import FileResponse, HttpResponseBase
from django.urls import set_script_prefix

# Requests one web process serves at once. Views wait on the database and Redis part of the
# time, but the threads of one process share its interpreter lock: a thread that holds
# SQLite's one write lock (or a PostgreSQL row lock) waits for the interpreter between its
# statements while its siblings run, and every writer in every process waits behind it.
# With 20 clients on two cores (`python -m benchmarks.api_load`, three processes), 8
# threads each kept a submission waiting p95 144-466 ms for the database, 2 threads
# 55-69 ms; the list serves as many requests per second either way.
DEFAULT_THREADS = 2


def request_threads() -> int:
    """WEB_THREADS from the environment (at least 1), else DEFAULT_THREADS."""
    raw = os.environ.get("WEB_THREADS", "")
    return max(1, int(raw)) if raw.strip() else DEFAULT_THREADS


class ThreadPoolHTTPHandler(ASGIHandler):
    """Django's ASGI handler for HTTP with the request served in one call on a thread pool
    (the module docstring says why)."""

    def __init__(self, threads: int | None = None) -> None:
        BaseHandler.__init__(self)
        self.load_middleware(is_async=False)  # the synchronous chain: no hop inside it
        self.pool = ThreadPoolExecutor(
            max_workers=threads or request_threads(), thread_name_prefix="http"
        )

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"this handler serves HTTP only, not {scope['type']}")
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            response = await sync_to_async(
                self.respond, thread_sensitive=False, executor=self.pool
            )(scope, body_file)
            try:
                await self.send_response(response, send)
            finally:
                if response.streaming:
                    await sync_to_async(
                        response.close, thread_sensitive=False, executor=self.pool
                    )()
        finally:
            body_file.close()

    def respond(self, scope, body_file) -> HttpResponseBase:
        """The response to one request, in a pool thread (closed already unless it
        streams)."""
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, refusal = self.create_request(scope, body_file)
        if request is None:
            assert refusal is not None  # create_request gives one or the other
            response = refusal
        else:
            response = self.get_response(request)
            response._handler_class = self.__class__  # type: ignore[attr-defined]
            if isinstance(response, FileResponse):
                response.block_size = self.chunk_size
        if not response.streaming:
            response.close()  # its body stays in memory; request_finished runs here
        return response
