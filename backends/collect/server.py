"""The collector of a fielded survey: an ASGI application (Starlette) that serves the
survey page, stores the reports it submits and shows the analysis of those stored.

Routes:

- ``GET /``: the survey page (no token), under a Content-Security-Policy that allows
  only this origin and the page's own inline scripts and styles (by their hashes).
- ``POST /api/submit``: ``{"reports": {"<mechanism>": <report>, ...}}`` -> 201
  ``{"id": N}`` once the submission is committed; 422 ``{"error", "code"}`` with the
  D-code and message ``run`` gives for a report the mechanism cannot produce (and D050
  for a body of the wrong shape); 413 past ``max_body`` bytes (the Content-Length, and
  the bytes counted while reading, so that a chunked body is never read unbounded);
  400 for a body that is not UTF-8 JSON; 415 for another content type.
- ``GET /api/results`` and ``GET /results`` (the admin token, as ``Authorization:
  Bearer T`` or ``?token=T``; 401 without): the JSON of ``privspec run SPEC --data
  STORE --format json``, and a page of the estimates with their intervals and the
  number of submissions so far, reloading itself.

Submissions are committed in groups (:class:`GroupCommit`): one writer thread commits
every submission waiting (one transaction, one flush to disk) and then answers each, so
that many respondents at once cost one commit, and a 201 still follows its commit.
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import html
import json
import re
import socket
import sqlite3
import sys
import time
import traceback
from typing import Any, AsyncIterator, Callable, Sequence

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from privspec.backends.collect.store import RejectedSubmission, Store
from privspec.errors import Diagnostic

#: the largest body of a submission, in bytes (a report is a few cells: 64 KiB is generous)
MAX_BODY = 64 * 1024

#: the most submissions committed in one transaction
BATCH = 2048

#: seconds between two reloads of the results page
REFRESH = 10

#: headers of every answer: no sniffing of types, nothing cached, no referrer (the admin
#: token may be in the URL)
PLAIN = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}

#: the headers of a JSON answer of ``POST /api/submit``, as ASGI sends them
JSON_HEADERS = [(b"content-type", b"application/json"), *((k.lower().encode(), v.encode()) for k, v in PLAIN.items())]


class StoreFailure(Exception):
    """The store could not keep a submission (the database failed): the server answers 503."""


class GroupCommit:
    """Submissions queued by the requests and committed in groups by one writer: each
    :meth:`submit` waits for the commit of the group that holds it.

    The writer takes every submission waiting (at most :data:`BATCH`), commits them with
    :meth:`Store.submit_many` in a thread (the event loop keeps reading requests
    meanwhile), answers each, and starts again: under load, the submissions that arrive
    during one commit make the next group.
    """

    def __init__(self, store: Store, batch: int = BATCH):
        self.store = store
        self.batch = batch
        self.count = len(store)   # submissions stored: the results are computed again when it changes
        self._queue: asyncio.Queue[tuple[Any, asyncio.Future] | None] | None = None
        self._writer: asyncio.Task | None = None

    def start(self) -> None:
        """Start the writer (on the running event loop) unless it runs."""
        if self._writer is None:
            self._queue = asyncio.Queue()
            self._writer = asyncio.get_running_loop().create_task(self._write())

    async def submit(self, reports: Any) -> int | RejectedSubmission | StoreFailure:
        """The id of the submission once committed, or why it was not stored."""
        self.start()
        assert self._queue is not None
        done = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((reports, done))
        return await done

    async def close(self) -> None:
        """Commit every submission queued, then stop the writer."""
        if self._writer is not None and self._queue is not None:
            self._queue.put_nowait(None)
            await self._writer
            self._writer = None

    async def _write(self) -> None:
        assert self._queue is not None
        stop = False
        while not stop:
            first = await self._queue.get()
            if first is None:
                return
            group = [first]
            while len(group) < self.batch and not self._queue.empty():
                item = self._queue.get_nowait()
                if item is None:
                    stop = True
                    break
                group.append(item)
            outcomes = await asyncio.to_thread(self._commit, [reports for reports, _ in group])
            self.count += sum(isinstance(o, int) for o in outcomes)
            for (_, done), outcome in zip(group, outcomes):
                if not done.done():   # its request may have gone (the client disconnected)
                    done.set_result(outcome)

    def _commit(self, submissions: list[Any]) -> list[Any]:
        """The outcome of each submission; when the group fails as a whole, each is
        committed alone, so that one submission's failure is its own."""
        try:
            return self.store.submit_many(submissions)
        except Exception:
            if len(submissions) > 1:
                return [self._commit([s])[0] for s in submissions]
            return [_failure(sys.exc_info()[1])]


def _failure(error: BaseException | None) -> RejectedSubmission | StoreFailure:
    """What a submission that failed alone gets: a failing database is the server's
    fault (503); anything else was raised while reading the submission, which is
    refused (and the traceback logged: a report no reader should have stumbled on)."""
    if isinstance(error, (sqlite3.Error, OSError)) or type(error).__module__.startswith("psycopg"):
        return StoreFailure(str(error))
    traceback.print_exception(error, file=sys.stderr)
    return RejectedSubmission(Diagnostic("D050", f"the submission cannot be read: {type(error).__name__}"))


# ---- the requests -----------------------------------------------------------------------------------
class BadRequest(Exception):
    """A request refused before its reports are read: its status and message."""

    def __init__(self, status: int, message: str, code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


async def read_body(scope: dict, receive: Callable, limit: int) -> bytes | None:
    """The body of an ASGI request, at most ``limit`` bytes (413 past it: announced by
    Content-Length or counted while reading, so that a chunked body is never read
    unbounded); None when the client went away."""
    headers = dict(scope["headers"])
    kind = headers.get(b"content-type", b"").partition(b";")[0].strip().lower()
    if kind != b"application/json":
        raise BadRequest(415, "a submission is sent as application/json")
    announced = headers.get(b"content-length")
    if announced is not None:
        if not announced.isdigit():
            raise BadRequest(400, "the Content-Length is not a number")
        if int(announced) > limit:
            raise BadRequest(413, f"a submission is at most {limit} bytes")
    body = b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if len(body) > limit:
            raise BadRequest(413, f"a submission is at most {limit} bytes")
        if not message.get("more_body", False):
            return body


def answered(outcome: Any) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    """The status, JSON body and extra headers that answer a submission's outcome."""
    if isinstance(outcome, int):
        return 201, b'{"id":%d}' % outcome, []
    if isinstance(outcome, RejectedSubmission):
        d = outcome.diagnostics[0]
        doc = {"error": d.message, "code": d.code} | ({"hint": d.hint} if d.hint else {})
        return 422, json.dumps(doc, ensure_ascii=False).encode(), []
    if isinstance(outcome, StoreFailure):
        return 503, b'{"error":"the store could not keep the submission: try again later"}', [(b"retry-after", b"5")]
    doc = {"error": outcome.message} | ({"code": outcome.code} if outcome.code else {})
    return outcome.status, json.dumps(doc).encode(), []


class ASGIEndpoint:
    """An ASGI callable as a route's endpoint: Starlette calls an endpoint that is not a
    function as a bare ASGI app."""

    def __init__(self, app: Callable):
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        await self.app(scope, receive, send)


def parse_submission(body: bytes) -> Any:
    """The reports of a body ``{"reports": {...}}``: 400 for one that is not UTF-8 JSON,
    422 (D050) for JSON of another shape."""
    try:
        doc = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadRequest(400, "the body is not UTF-8 text") from None
    except (ValueError, RecursionError):   # RecursionError: JSON nested past Python's stack
        raise BadRequest(400, "the body is not JSON") from None
    if not isinstance(doc, dict) or list(doc) != ["reports"]:
        raise BadRequest(422, 'a submission is an object {"reports": {"<mechanism>": <report>, ...}}', "D050")
    return doc["reports"]


def authorized(request: Request, token: str) -> bool:
    """Whether the request carries the admin token (``Authorization: Bearer T`` or
    ``?token=T``), compared in constant time."""
    given = request.query_params.get("token")
    if given is None:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        given = value.strip() if scheme.lower() == "bearer" else ""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode("utf-8"))


def inline_hashes(page: str) -> dict[str, list[str]]:
    """The CSP sources of a page's inline scripts and styles: ``'sha256-...'`` of each
    (the text between its tags, as a browser hashes it)."""
    out: dict[str, list[str]] = {"script": [], "style": []}
    for tag in out:
        for text in re.findall(rf"<{tag}\b(?![^>]*\bsrc=)[^>]*>(.*?)</{tag}>", page, flags=re.S | re.I):
            digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
            out[tag].append(f"'sha256-{digest}'")
    return out


def page_headers(page: str, connect: bool) -> dict[str, str]:
    """The headers of a page: a Content-Security-Policy that allows this origin and the
    page's own inline scripts and styles only (``connect``: whether it may send requests)."""
    inline = inline_hashes(page)
    policy = ["default-src 'none'", "script-src 'self' " + " ".join(inline["script"]),
              "style-src 'self' " + " ".join(inline["style"]), "img-src 'self' data:",
              "connect-src 'self'" if connect else "connect-src 'none'",
              "form-action 'self'", "base-uri 'none'", "frame-ancestors 'none'"]
    return PLAIN | {"Content-Security-Policy": "; ".join(p.strip() for p in policy), "X-Frame-Options": "DENY"}


# ---- the results ------------------------------------------------------------------------------------
class LiveResults:
    """The analysis of the reports stored, computed again (in a thread) only when more
    were stored since: ``results()`` returns the :class:`privspec.api.Results` of ``run``
    on the store."""

    def __init__(self, results: Callable[[], Any], commits: GroupCommit, title: str):
        self.results = results
        self.commits = commits
        self.title = title
        self._cached: tuple[int, Any] | None = None
        self._lock = asyncio.Lock()

    async def current(self) -> tuple[int, Any]:
        """The number of submissions and the results of ``run`` on them."""
        async with self._lock:   # one computation at a time, however many admins reload
            n = self.commits.count
            if self._cached is None or self._cached[0] != n:
                self._cached = (n, await asyncio.to_thread(self.results))
            return self._cached

    def page(self, n: int, results: Any) -> str:
        """The results page: the estimates with their intervals, the n so far; it
        reloads itself every :data:`REFRESH` seconds."""
        title = html.escape(self.title)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
                f'<meta http-equiv="refresh" content="{REFRESH}">'
                f'<meta name="viewport" content="width=device-width, initial-scale=1">'
                f"<title>Results: {title}</title><style>{RESULTS_STYLE}</style></head>\n"
                f"<body><main><h1>{title}</h1>\n<p><strong>n = {n}</strong> submission{'s' if n != 1 else ''} "
                f"so far; as of {stamp}, reloaded every {REFRESH} s.</p>\n"
                f"{results.summary().as_html()}\n</main></body></html>\n")


RESULTS_STYLE = ("body{font-family:system-ui,sans-serif;margin:2rem;color:#111}"
                 "table{border-collapse:collapse;margin:.5rem 0 1.5rem}"
                 "th,td{border:1px solid #bbb;padding:.25rem .6rem;text-align:right}h4{margin-bottom:.2rem}")


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host:port`` (0: a free port).  Made with its protocol
    named, so that asyncio sets TCP_NODELAY on each connection it accepts: without it,
    an answer sent in two writes (headers, body) waits for the client's delayed
    acknowledgement, 40 ms a request."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


# ---- the application ----------------------------------------------------------------------------------
def create_app(model: Any, store: Store, *, page: str, token: str, results: Callable[[], Any],
               max_body: int = MAX_BODY, title: str | None = None) -> Starlette:
    """The collector of ``store``'s survey as an ASGI application.

    Parameters
    ----------
    model : ModelGraph
        The spec's model (the store's; its title names the results page).
    store : Store
        Where the submissions go (:func:`privspec.backends.collect.store.open_store`).
    page : str
        The survey page (one HTML document), served at ``/``.
    token : str
        The admin token of ``/results`` and ``/api/results``.
    results : callable
        ``results()`` -> the :class:`privspec.api.Results` of ``run`` on the store.
    max_body : int
        The largest body of a submission, in bytes (413 past it).
    title : str, optional
        The survey's title on the results page (default: the store's URL).
    """
    if not token:
        raise ValueError("the admin token is empty")
    commits = GroupCommit(store)
    live = LiveResults(results, commits, title or store.url)
    survey_headers = page_headers(page, connect=True)
    results_headers = page_headers(f"<style>{RESULTS_STYLE}</style>", connect=False)
    unauthorized = {"WWW-Authenticate": 'Bearer realm="privspec results"'} | PLAIN

    async def survey(request: Request) -> Response:
        return HTMLResponse(page, headers=survey_headers)

    async def submit(scope: dict, receive: Callable, send: Callable) -> None:
        # a bare ASGI endpoint: the one route under load, spared Starlette's request and
        # response objects (a third of the server's time per submission)
        try:
            body = await read_body(scope, receive, max_body)
            if body is None:
                return
            outcome = await commits.submit(parse_submission(body))
        except BadRequest as e:
            outcome = e
        status, answer, extra = answered(outcome)
        await send({"type": "http.response.start", "status": status,
                    "headers": [*extra, *JSON_HEADERS, (b"content-length", str(len(answer)).encode())]})
        await send({"type": "http.response.body", "body": answer})

    async def api_results(request: Request) -> Response:
        if not authorized(request, token):
            return JSONResponse({"error": "the admin token is missing or wrong"}, 401, headers=unauthorized)
        _, res = await live.current()
        return Response(res.render("json"), media_type="application/json", headers=PLAIN)

    async def results_page(request: Request) -> Response:
        if not authorized(request, token):
            return HTMLResponse("<!doctype html><title>401</title><p>the admin token is missing or wrong</p>",
                                401, headers=unauthorized)
        n, res = await live.current()
        return HTMLResponse(live.page(n, res), headers=results_headers)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        commits.start()
        try:
            yield
        finally:   # the server stopped taking requests: every submission queued is committed
            await commits.close()

    routes: Sequence[Route] = [Route("/", survey, methods=["GET"]),
                               Route("/api/submit", ASGIEndpoint(submit), methods=["POST"]),
                               Route("/api/results", api_results, methods=["GET"]),
                               Route("/results", results_page, methods=["GET"])]
    app = Starlette(routes=list(routes), lifespan=lifespan)
    app.state.commits = commits
    return app

