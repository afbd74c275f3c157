"""The execution group's HTTP listener: one port for every HTTPInput node of the group's flows.

An asyncio server (uvicorn, on its own thread) reads each request, bounded in size, and hands it
to the flow threads of the HTTPInput node whose method and path it matches through that node's
bounded queue; the connection then waits for the reply an HTTPReply node sends from a flow
thread (by the request identifier), or answers 504 when none comes within the node's wait time.
A full queue answers 503 at once, a body over the limit 413, an unknown path 404. Flow threads
never touch the event loop except to hand a reply back to it.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import secrets
import socket
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote

log = logging.getLogger("flowbroker.runtime.http")

Headers = list[tuple[str, str]]
#: How long, after the wait time, a request stays open for the reply its node's timeout path makes.
TIMEOUT_PATH_GRACE_S = 5.0


@dataclass
class InboundRequest:
    """One HTTP request as a flow thread sees it."""

    id: bytes
    method: str
    path: str
    query: list[tuple[str, str]]
    headers: Headers
    body: bytes
    target: str
    http_version: str = "1.1"
    path_parameters: dict[str, str] = field(default_factory=dict)
    #: True for the notice a node's timeout terminal gets when the wait time passed unanswered.
    timed_out: bool = False


class _Waiting:
    """A request whose connection waits for its reply; answered at most once, from any thread."""

    __slots__ = ("answer", "event", "lock", "loop", "state")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.event = asyncio.Event()
        self.lock = threading.Lock()
        self.state = "waiting"
        self.answer: tuple[int, Headers, bytes] | None = None

    def reply(self, status: int, headers: Headers, body: bytes) -> bool:
        with self.lock:
            if self.state != "waiting":
                return False
            self.state = "answered"
            self.answer = (status, headers, body)
        self.loop.call_soon_threadsafe(self.event.set)
        return True

    def expire(self) -> bool:
        with self.lock:
            if self.state != "waiting":
                return False
            self.state = "expired"
            return True


class Endpoint:
    """The method and path one HTTPInput node serves, and its queue of requests for its flow threads."""

    def __init__(
        self, owner: object, method: str, path: str, max_pending: int, max_wait_s: float, timeout_path: bool
    ) -> None:
        self.owner = owner
        self.method = method.upper()
        self.path = path
        self.segments = _segments(path)
        self.requests: queue.Queue[InboundRequest] = queue.Queue(maxsize=max_pending)
        self.max_wait_s = max_wait_s
        self.timeout_path = timeout_path
        self.users = 0

    def matches(self, segments: list[str]) -> dict[str, str] | None:
        """The path parameters when ``segments`` match this endpoint's path, else None."""
        pattern = self.segments
        params: dict[str, str] = {}
        wildcard = bool(pattern) and pattern[-1] == "*"
        fixed = pattern[:-1] if wildcard else pattern
        if len(segments) < len(fixed) or (not wildcard and len(segments) != len(fixed)):
            return None
        for want, got in zip(fixed, segments, strict=False):
            if want.startswith("{") and want.endswith("}"):
                params[want[1:-1]] = got
            elif want != got:
                return None
        return params

    def take(self, timeout: float) -> InboundRequest | None:
        """The next request for a flow thread, waiting up to ``timeout`` seconds."""
        try:
            return self.requests.get(timeout=timeout)
        except queue.Empty:
            return None


def _segments(path: str) -> list[str]:
    return [part for part in path.split("/") if part]


class HTTPListener:
    """The group's one HTTP port; opened by the first flow that has an HTTPInput node."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 7800,
        *,
        max_body_bytes: int = 4 * 1024 * 1024,
        max_connections: int = 1000,
        keep_alive_s: float = 5.0,
    ) -> None:
        self.host = host
        self.port = port
        self.max_body_bytes = max_body_bytes
        self.max_connections = max_connections
        self.keep_alive_s = keep_alive_s
        self._endpoints: list[Endpoint] = []
        self._waiting: dict[bytes, _Waiting] = {}
        self._lock = threading.Lock()
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._bound: tuple[str, int] | None = None

    # -- the server ---------------------------------------------------------------------------

    @property
    def address(self) -> tuple[str, int] | None:
        """(host, port) while the listener is open; port 0 in the setting becomes the port bound."""
        return self._bound

    def start(self) -> None:
        """Open the port (idempotent); an ``OSError`` says why it cannot be opened."""
        with self._lock:
            if self._thread is not None:
                return
            import uvicorn

            family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
            # with the protocol named, asyncio's transports set TCP_NODELAY on each accepted
            # connection: a reply's header and body writes then never wait for a delayed ACK
            sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((self.host, self.port))
            except OSError as exc:
                sock.close()
                raise OSError(
                    exc.errno,
                    f"cannot open the HTTP listener on {self.host}:{self.port}: {exc.strerror or exc} "
                    "(set the execution group's httpPort, or FLOWBROKER_HTTP_PORT)",
                ) from None
            sock.listen(1024)
            sock.setblocking(False)
            config = uvicorn.Config(
                self._app,
                lifespan="off",
                interface="asgi3",
                proxy_headers=False,
                log_level="warning",
                access_log=False,
                server_header=False,
                limit_concurrency=self.max_connections,
                timeout_keep_alive=int(max(1, self.keep_alive_s)),
                h11_max_incomplete_event_size=64 * 1024,
            )
            server = uvicorn.Server(config)
            started = threading.Event()

            def serve() -> None:
                async def main() -> None:
                    task = asyncio.ensure_future(server.serve(sockets=[sock]))
                    while not server.started and not task.done():
                        await asyncio.sleep(0.01)
                    started.set()
                    await task

                try:
                    asyncio.run(main())
                except Exception:
                    log.exception("the HTTP listener stopped")
                finally:
                    started.set()
                    sock.close()

            self._server = server
            self._bound = sock.getsockname()[:2]
            self._thread = threading.Thread(target=serve, name="http-listener", daemon=True)
            self._thread.start()
        started.wait(10.0)
        log.info("HTTP listener open on %s:%s", *self._bound)

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            server, thread = self._server, self._thread
            self._server = self._thread = None
            self._bound = None
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout)

    # -- the HTTPInput nodes' side ------------------------------------------------------------

    def register(
        self,
        owner: object,
        method: str,
        path: str,
        *,
        max_pending: int = 100,
        max_wait_s: float = 180.0,
        timeout_path: bool = False,
    ) -> Endpoint:
        """The endpoint of ``owner`` (an HTTPInput node) for its flow threads; each calls
        :meth:`release` when it stops. Raises ``ValueError`` when another node serves the route."""
        self.start()
        with self._lock:
            for endpoint in self._endpoints:
                if endpoint.owner is owner:
                    endpoint.users += 1
                    return endpoint
            clash = self._clash(method, path, owner)
            if clash is not None:
                raise ValueError(
                    f"{method} {path} is already served by another flow ({clash.method} {clash.path})"
                )
            endpoint = Endpoint(owner, method, path, max_pending, max_wait_s, timeout_path)
            endpoint.users = 1
            self._endpoints.append(endpoint)
            return endpoint

    def _clash(self, method: str, path: str, owner: object) -> Endpoint | None:
        wanted = _segments(path)
        for endpoint in self._endpoints:
            if endpoint.owner is owner:
                continue
            same_method = "ANY" in (method.upper(), endpoint.method) or endpoint.method == method.upper()
            if same_method and endpoint.segments == wanted:
                return endpoint
        return None

    def release(self, endpoint: Endpoint) -> None:
        """A flow thread of the endpoint's node stopped; the last one closes the route and
        answers 503 to the requests still queued for it."""
        with self._lock:
            endpoint.users -= 1
            if endpoint.users > 0:
                return
            if endpoint in self._endpoints:
                self._endpoints.remove(endpoint)
        while True:
            try:
                left = endpoint.requests.get_nowait()
            except queue.Empty:
                break
            self.reply(left.id, 503, [("Content-Type", "text/plain; charset=utf-8")], b"the flow stopped\n")

    def reply(self, request_id: bytes, status: int, headers: Headers, body: bytes) -> bool:
        """Answer a waiting request; False when it is no longer waiting (answered, timed out, gone)."""
        waiting = self._waiting.get(request_id)
        return waiting.reply(status, headers, body) if waiting is not None else False

    def pending(self) -> int:
        return len(self._waiting)

    # -- the ASGI application -----------------------------------------------------------------

    def _match(self, method: str, path: str) -> tuple[Endpoint | None, dict[str, str], list[str]]:
        segments = _segments(path)
        allowed: list[str] = []
        best: tuple[int, Endpoint, dict[str, str]] | None = None
        for endpoint in list(self._endpoints):
            params = endpoint.matches(segments)
            if params is None:
                continue
            if endpoint.method not in ("ANY", method):
                allowed.append(endpoint.method)
                continue
            # an exact path wins over one with parameters, which wins over a wildcard
            rank = len(params) + (100 if endpoint.segments[-1:] == ["*"] else 0)
            if best is None or rank < best[0]:
                best = (rank, endpoint, params)
        if best is None:
            return None, {}, allowed
        return best[1], best[2], allowed

    async def _app(
        self,
        scope: dict[str, Any],
        receive: Callable[[], Awaitable[dict[str, Any]]],
        send: Callable[[dict[str, Any]], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            return
        method = str(scope["method"]).upper()
        path = str(scope["path"])
        endpoint, params, allowed = self._match(method, path)
        if endpoint is None:
            if allowed:
                text = f"{method} is not served on {path}; allowed: {', '.join(sorted(set(allowed)))}\n"
                await _answer(send, 405, text, [("Allow", ", ".join(sorted(set(allowed))))])
            else:
                await _answer(send, 404, f"no flow serves {path}\n")
            return
        headers = [(_header_name(k), v.decode("latin-1")) for k, v in scope.get("headers", [])]
        for name, value in headers:
            if name == "Content-Length" and value.isdigit() and int(value) > self.max_body_bytes:
                await _answer(send, 413, f"the body is larger than {self.max_body_bytes} bytes\n")
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await _answer(send, 413, f"the body is larger than {self.max_body_bytes} bytes\n")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        raw_query = bytes(scope.get("query_string") or b"").decode("latin-1")
        target = path + (f"?{raw_query}" if raw_query else "")
        request = InboundRequest(
            id=secrets.token_bytes(24),
            method=method,
            path=path,
            query=parse_qsl(raw_query, keep_blank_values=True),
            headers=headers,
            body=b"".join(chunks),
            target=target,
            http_version=str(scope.get("http_version") or "1.1"),
            path_parameters={k: unquote(v) for k, v in params.items()},
        )
        waiting = _Waiting(asyncio.get_running_loop())
        self._waiting[request.id] = waiting
        try:
            try:
                endpoint.requests.put_nowait(request)
            except queue.Full:
                waiting.expire()
                await _answer(
                    send, 503, "too many requests are waiting for this flow\n", [("Retry-After", "1")]
                )
                return
            answered = await _wait(waiting.event, endpoint.max_wait_s)
            if not answered and endpoint.timeout_path:
                notice = InboundRequest(**{**request.__dict__, "timed_out": True})
                try:
                    endpoint.requests.put_nowait(notice)
                    answered = await _wait(waiting.event, TIMEOUT_PATH_GRACE_S)
                except queue.Full:
                    pass
            if not answered and waiting.expire():
                await _answer(send, 504, f"the flow did not reply within {endpoint.max_wait_s:g} seconds\n")
                return
        finally:
            self._waiting.pop(request.id, None)
        assert waiting.answer is not None
        status, reply_headers, body = waiting.answer
        await _respond(send, status, reply_headers, body)


async def _wait(event: asyncio.Event, timeout: float) -> bool:
    try:
        await asyncio.wait_for(event.wait(), timeout)
        return True
    except TimeoutError:
        return event.is_set()


def _header_name(raw: bytes) -> str:
    return "-".join(part.capitalize() for part in raw.decode("latin-1").split("-"))


def _clean(text: str) -> bytes:
    """A header name or value as bytes, never able to end the header (no CR, LF or NUL)."""
    return text.replace("\r", " ").replace("\n", " ").replace("\0", " ").encode("latin-1", "replace")


async def _answer(
    send: Callable[[dict[str, Any]], Awaitable[None]], status: int, text: str, extra: Headers | None = None
) -> None:
    headers = [("Content-Type", "text/plain; charset=utf-8"), *(extra or [])]
    await _respond(send, status, headers, text.encode("utf-8"))


async def _respond(
    send: Callable[[dict[str, Any]], Awaitable[None]], status: int, headers: Headers, body: bytes
) -> None:
    raw = [
        (_clean(name), _clean(str(value)))
        for name, value in headers
        if name.lower() not in ("content-length", "transfer-encoding", "connection")
    ]
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
