"""XSLT transformations in a child process that can be stopped: the XSLTransform node's sandbox.

libxslt cannot be interrupted from Python, and a stylesheet can run for ever or build a result
without bound. Each transformation therefore runs in a small child process (``python -m
flowbroker_nodes.xslt_sandbox``, importing only lxml) whose address space is capped; when it
runs past the time limit it is killed and the next transformation starts a fresh one. The child
keeps the stylesheets it compiled (by their SHA-256), so a stylesheet is sent and compiled once
per child, not per message.

Both in the child and in :func:`compile_stylesheet` (which the node uses to report a bad
stylesheet at deploy time, positioned), stylesheets and input documents are parsed without DTDs
or entities, a DOCTYPE is refused, and the transformation may read and write no file and no URL
(``xsl:include``/``xsl:import``, ``document()``, EXSLT ``document`` all refused).

Frames on the pipes: one JSON line, then the byte payloads it announces.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from typing import IO, Any

_CACHE_SIZE = 32
_MAX_DEPTH = 1000
_ENCODINGS = {"UTF-8": 1208, "UTF8": 1208, "ISO-8859-1": 819, "US-ASCII": 367, "ASCII": 367, "UTF-16": 1200}


class XsltError(Exception):
    """A stylesheet or transformation failed; ``line`` / ``column`` in the stylesheet when known."""

    def __init__(self, text: str, line: int = 0, column: int = 0) -> None:
        super().__init__(text)
        self.text = text
        self.line = line
        self.column = column


class _ApplyError(XsltError):
    """libxslt failed while applying the stylesheet (where a failed allocation also shows)."""


# -- what parent and child share ----------------------------------------------------------------


def _parser() -> Any:
    from lxml import etree

    class _Refuse(etree.Resolver):  # type: ignore[misc]
        def resolve(self, url: str, pubid: str, context: Any) -> Any:
            raise etree.XSLTParseError(f"loading {url!r} is not allowed")

    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False, huge_tree=False
    )
    parser.resolvers.add(_Refuse())
    return parser


def _parse(data: bytes, what: str) -> Any:
    from lxml import etree

    etree.clear_error_log()
    try:
        doc = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (0, 0)
        raise XsltError(f"the {what} is not well-formed XML: {exc.msg}", line, column) from None
    if doc.getroottree().docinfo.doctype:
        raise XsltError(f"the {what} has a DOCTYPE: DTDs and entities are not allowed", 1, 1)
    return doc


def _first_error(exc: Any, fallback: str) -> tuple[str, int, int]:
    log = list(getattr(exc, "error_log", None) or [])
    messages = [e.message for e in log if e.message and "runtime error" not in e.message]
    line = next((e.line for e in log if e.line), 0)
    column = next((e.column for e in log if e.column), 0)
    return ("; ".join(dict.fromkeys(messages)) or str(exc) or fallback), line, column


XSL = "http://www.w3.org/1999/XSL/Transform"


def compile_stylesheet(data: bytes) -> tuple[Any, str, int]:
    """The compiled stylesheet (lxml XSLT) of ``data``, its output method and the CCSID of its
    output encoding; or an :class:`XsltError` with its position."""
    from lxml import etree

    doc = _parse(data, "stylesheet")
    output = doc.find(f"{{{XSL}}}output")
    method = str(output.get("method") or "xml") if output is not None else "xml"
    encoding = str(output.get("encoding") or "UTF-8") if output is not None else "UTF-8"
    ccsid = _ENCODINGS.get(encoding.upper())
    if ccsid is None:
        line = output.sourceline or 0 if output is not None else 0
        raise XsltError(f"the output encoding {encoding!r} is not supported (use UTF-8)", line, 1)
    etree.clear_error_log()
    try:
        xslt = etree.XSLT(doc, access_control=etree.XSLTAccessControl.DENY_ALL)
    except etree.XSLTParseError as exc:
        text, line, column = _first_error(exc, "the stylesheet does not compile")
        raise XsltError(f"the stylesheet does not compile: {text}", line, column) from None
    return xslt, method, ccsid


def _transform(xslt: Any, data: bytes, params: dict[str, str], max_output: int) -> bytes:
    from lxml import etree

    doc = _parse(data, "input message")
    etree.clear_error_log()
    try:
        result = xslt(doc, **{k: etree.XSLT.strparam(v) for k, v in params.items()})
    except etree.XSLTApplyError as exc:
        text, line, column = _first_error(exc, "the transformation failed")
        raise _ApplyError(f"the transformation failed: {text}", line, column) from None
    out = bytes(result)
    if len(out) > max_output:
        raise XsltError(f"the result is {len(out)} bytes, more than the limit of {max_output}")
    return out


# -- the child ---------------------------------------------------------------------------------


def _read_frame(stream: IO[bytes]) -> tuple[dict[str, Any], list[bytes]] | None:
    line = stream.readline()
    if not line:
        return None
    header = json.loads(line)
    payloads = [stream.read(int(n)) for n in header.get("lengths", [])]
    return header, payloads


def _write_frame(stream: IO[bytes], header: dict[str, Any], *payloads: bytes) -> None:
    header["lengths"] = [len(p) for p in payloads]
    stream.write(json.dumps(header).encode() + b"\n")
    for payload in payloads:
        stream.write(payload)
    stream.flush()


def child_main(memory_limit: int) -> None:
    """Serve transformations on stdin/stdout until stdin closes."""
    import resource

    from lxml import etree

    resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    etree.XSLT.set_global_max_depth(_MAX_DEPTH)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    compiled: OrderedDict[str, Any] = OrderedDict()
    _write_frame(stdout, {"ready": True})
    while True:
        frame = _read_frame(stdin)
        if frame is None:
            return
        header, payloads = frame
        key = str(header["key"])
        try:
            xslt = compiled.get(key)
            if xslt is None:
                if len(payloads) < 2:
                    _write_frame(stdout, {"need": "stylesheet"})
                    continue
                xslt = compile_stylesheet(payloads[1])[0]
                compiled[key] = xslt
                while len(compiled) > _CACHE_SIZE:
                    compiled.popitem(last=False)
            compiled.move_to_end(key)
            out = _transform(xslt, payloads[0], dict(header.get("params") or {}), int(header["max"]))
            _write_frame(stdout, {"ok": True, "last": _grown(memory_limit)}, out)
        except XsltError as exc:
            if isinstance(exc, _ApplyError) and _near_limit(memory_limit):
                # libxslt reports a failed allocation as an XPath error ("Undefined variable"): say
                # what happened, and end this process so the next transformation starts afresh
                _write_frame(stdout, {"ok": False, "error": _OUT_OF_MEMORY % memory_limit, "retire": True})
                return
            _write_frame(
                stdout,
                {
                    "ok": False,
                    "error": exc.text,
                    "line": exc.line,
                    "column": exc.column,
                    "last": _grown(memory_limit),
                },
            )
        except MemoryError:
            _write_frame(stdout, {"ok": False, "error": _OUT_OF_MEMORY % memory_limit, "retire": True})
            return


_OUT_OF_MEMORY = (
    "the transformation reached the sandbox's memory limit of %d bytes (FLOWBROKER_XSLT_MEMORY_LIMIT_BYTES)"
)


def _peak_bytes() -> int:
    """This process image's peak resident size. Linux keeps ``ru_maxrss`` across exec, so a sandbox
    started by a large process would read that process's peak; ``VmHWM`` belongs to this image."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _near_limit(memory_limit: int) -> bool:
    """Whether this process's peak resident size came within a quarter of its address-space limit."""
    return _peak_bytes() > memory_limit * 3 // 4


def _grown(memory_limit: int) -> bool:
    """Whether this process's peak passed half its limit: it then serves no further transformation,
    so a later failure is never taken for a memory failure because of an earlier peak."""
    return _peak_bytes() > memory_limit // 2


# -- the parent --------------------------------------------------------------------------------


class _Child:
    def __init__(self, memory_limit: int) -> None:
        self.memory_limit = memory_limit
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "flowbroker_nodes.xslt_sandbox", str(memory_limit)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "LANG", "HOME")},
            close_fds=True,
        )
        # starting the interpreter is not the transformation's time: wait for the child apart
        try:
            self.receive(time.monotonic() + _START_S)
        except (TimeoutError, EOFError, OSError, ValueError):
            self.kill()
            raise XsltError("the transformation's sandbox process did not start") from None

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.proc.kill()
            self.proc.wait(5)
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.close()

    def ask(
        self, header: dict[str, Any], payloads: tuple[bytes, ...], deadline: float
    ) -> tuple[dict[str, Any], bytes]:
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        _write_frame(stdin, header, *payloads)
        return self.receive(deadline)

    def receive(self, deadline: float) -> tuple[dict[str, Any], bytes]:
        stdout = self.proc.stdout
        assert stdout is not None
        fd = stdout.fileno()
        buffer = b""
        while b"\n" not in buffer:
            buffer += self._read(fd, deadline)
        line, rest = buffer.split(b"\n", 1)
        reply = json.loads(line)
        size = sum(int(n) for n in reply.get("lengths", []))
        while len(rest) < size:
            rest += self._read(fd, deadline)
        return reply, rest[:size]

    def _read(self, fd: int, deadline: float) -> bytes:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise EOFError
        return chunk


#: How long a sandbox process may take to start (s).
_START_S = 30.0
_IDLE: list[_Child] = []
_LOCK = threading.Lock()
_MOST_IDLE = 8


def end_idle() -> None:
    """End the idle sandbox processes (an XSLTransform node of a flow that will not run again
    releases them); a later transformation starts a new one."""
    with _LOCK:
        ending = list(_IDLE)
        _IDLE.clear()
    for child in ending:
        child.kill()


def transform(
    key: str,
    stylesheet: bytes,
    data: bytes,
    params: dict[str, str],
    *,
    time_limit_ms: int,
    memory_limit: int,
    max_output: int,
) -> bytes:
    """Transform ``data`` with ``stylesheet`` (known as ``key``) in a sandbox child: the result's
    bytes, or an :class:`XsltError`."""
    with _LOCK:
        child = next((c for c in _IDLE if c.memory_limit == memory_limit), None)
        if child is not None:
            _IDLE.remove(child)
    if child is None:
        child = _Child(memory_limit)
    deadline = time.monotonic() + time_limit_ms / 1000.0
    header = {"key": key, "params": params, "max": max_output}
    try:
        reply, out = child.ask(header, (data,), deadline)
        if reply.get("need"):
            reply, out = child.ask(header, (data, stylesheet), deadline)
    except TimeoutError:
        child.kill()
        raise XsltError(f"the transformation ran longer than the limit of {time_limit_ms} ms") from None
    except (EOFError, OSError, ValueError):
        child.kill()
        raise XsltError(
            "the transformation's sandbox process ended (its memory limit of "
            f"{memory_limit} bytes was reached, or it crashed)"
        ) from None
    if reply.get("retire"):
        child.kill()
        raise XsltError(str(reply.get("error")))
    with _LOCK:
        if not reply.get("last") and len(_IDLE) < _MOST_IDLE:
            _IDLE.append(child)
            child = None  # type: ignore[assignment]
    if child is not None:
        child.kill()
    if not reply.get("ok"):
        raise XsltError(str(reply.get("error")), int(reply.get("line") or 0), int(reply.get("column") or 0))
    return out


if __name__ == "__main__":
    child_main(int(sys.argv[1]))
