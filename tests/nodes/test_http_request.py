"""HTTPRequest: calls a real HTTP server on 127.0.0.1 and propagates its response in the message's place."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from esql.tree import Element
from flowbroker.runtime import assembly
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.harness import FlowHarness, flow
from flowbroker_nodes.base import Unwinding

pytestmark = pytest.mark.timeout(60)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[dict] = []

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        _Handler.seen.append(
            {
                "method": self.command,
                "path": self.path,
                "headers": dict(self.headers),
                "body": body,
                "client": self.client_address,
            }
        )
        if self.path.startswith("/slow"):
            time.sleep(3)
            status, reply = 200, b"{}"
        elif self.path.startswith("/missing"):
            status, reply = 404, b'{"error": "no such order"}'
        elif self.path.startswith("/big"):
            status, reply = 200, b"x" * 5000
        else:
            status, reply = 200, json.dumps({"echo": json.loads(body or b"null"), "path": self.path}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Server", "test")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    do_GET = do_POST = do_PUT = _answer


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up (the timeout test) leaves a broken pipe: not this test's output


@pytest.fixture
def server() -> Iterator[str]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    _Handler.seen = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _doc(**props: object) -> dict:
    return flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED", "messageDomain": "JSON"}),
            "req": ("HTTPRequest", {"messageDomain": "JSON", **props}),
        },
        ["in.out -> req"],
    )


def test_the_response_replaces_the_message_with_its_headers(server: str) -> None:
    h = FlowHarness(_doc(webServiceURL=f"{server}/orders"))
    h.inject("in", b'{"order": 7}', domain="JSON")
    (out,) = h.seen("req", "out")
    root = out.root
    header = root.child("HTTPResponseHeader")
    assert header.child("X-Original-HTTP-Status-Code").value == 200
    assert header.child("X-Original-HTTP-Status-Line").value == "HTTP/1.1 200 OK"
    assert header.child("X-Server").value == "test"
    assert root.child("JSON").child("Data").child("echo").child("order").value == 7
    (call,) = _Handler.seen
    assert call["method"] == "POST" and call["path"] == "/orders"
    assert call["headers"]["Content-Type"].startswith("application/json")
    assert json.loads(call["body"]) == {"order": 7}
    # the next call reuses the pooled connection
    h.inject("in", b'{"order": 8}', domain="JSON")
    assert [c["client"] for c in _Handler.seen] == [call["client"], call["client"]]
    h.close()


def test_the_local_environment_overrides_url_and_method(server: str) -> None:
    h = FlowHarness(_doc(webServiceURL="http://127.0.0.1:9/never"))
    local = Element("LocalEnvironment")
    http = local.add("Destination").add("HTTP")
    http.add("RequestURL", f"{server}/other?q=1")
    http.add("RequestLine").add("Method", "GET")
    h.inject("in", b'{"order": 7}', domain="JSON", local_environment=local)
    (out,) = h.seen("req", "out")
    assert out.root.child("JSON").child("Data").child("path").value == "/other?q=1"
    (call,) = _Handler.seen
    assert call["method"] == "GET" and call["body"] == b""
    h.close()


def test_an_error_status_goes_to_the_error_terminal_with_the_response_kept(server: str) -> None:
    h = FlowHarness(_doc(webServiceURL=f"{server}/missing/7"))
    errors = h.seen("req", "error")
    h.inject("in", b"{}", domain="JSON")
    assert h.seen("req", "out") == []
    (error,) = errors
    header = error.root.child("HTTPResponseHeader")
    assert header.child("X-Original-HTTP-Status-Code").value == 404
    assert error.root.child("JSON").child("Data").child("error").value == "no such order"
    h.close()


def test_an_error_status_with_no_error_terminal_is_a_failure_naming_the_status(server: str) -> None:
    doc = flow(
        {
            "in": ("MQInput", {"queueName": "UNUSED"}),
            "req": ("HTTPRequest", {"webServiceURL": f"{server}/missing/7"}),
        },
        ["in.out -> req"],
    )
    h = FlowHarness(doc)
    with pytest.raises(Unwinding) as raised:
        h.inject("in", b"{}")
    assert f"POST {server}/missing/7 answered HTTP/1.1 404 Not Found" in str(raised.value)
    h.close()


def test_a_refused_connection_is_a_failure_with_the_reason() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # nothing listens on the port now
    h = FlowHarness(_doc(webServiceURL=f"http://127.0.0.1:{port}/x", requestTimeout=5))
    failures = h.seen("req", "failure")
    h.inject("in", b"{}", domain="JSON")
    (failed,) = failures
    entry = failed.exception_list.first_child
    text = entry.child("Text").value
    assert text == f"req: POST http://127.0.0.1:{port}/x: Connection refused"
    assert "Traceback" not in text
    h.close()


def test_a_server_slower_than_the_request_timeout_is_a_failure(server: str) -> None:
    h = FlowHarness(_doc(webServiceURL=f"{server}/slow", requestTimeout=1))
    failures = h.seen("req", "failure")
    h.inject("in", b"{}", domain="JSON")
    (failed,) = failures
    assert failed.exception_list.first_child.child("Text").value == (
        f"req: POST {server}/slow: no answer within 1 s (ReadTimeout)"
    )
    h.close()


def test_a_response_over_the_size_limit_is_a_failure(server: str) -> None:
    h = FlowHarness(_doc(webServiceURL=f"{server}/big", maxResponseBytes=1024))
    failures = h.seen("req", "failure")
    h.inject("in", b"{}", domain="JSON")
    (failed,) = failures
    assert "is larger than 1024 bytes" in failed.exception_list.first_child.child("Text").value
    h.close()


@pytest.fixture
def tls_server(tmp_path) -> Iterator[str]:
    """An https server on 127.0.0.1 whose certificate no authority signed."""
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a self-signed certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=30,
    )
    httpd = _Server(("127.0.0.1", 0), _Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    _Handler.seen = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_tls_certificates_are_verified_unless_the_node_says_not(tls_server: str) -> None:
    h = FlowHarness(_doc(webServiceURL=f"{tls_server}/orders", requestTimeout=10))
    failures = h.seen("req", "failure")
    h.inject("in", b"{}", domain="JSON")
    (failed,) = failures
    assert "CERTIFICATE_VERIFY_FAILED" in failed.exception_list.first_child.child("Text").value
    assert _Handler.seen == []
    h.close()
    trusting = FlowHarness(_doc(webServiceURL=f"{tls_server}/orders", verifyTls=False, requestTimeout=10))
    trusting.inject("in", b'{"a": 1}', domain="JSON")
    (out,) = trusting.seen("req", "out")
    assert out.root.child("JSON").child("Data").child("echo").child("a").value == 1
    trusting.close()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.org/x", "the URL must begin with http:// or https://, got 'ftp://example.org/x'"),
        ("http:///nohost", "the URL 'http:///nohost' names no host"),
        ("http://h:99999/x", "the URL 'http://h:99999/x' has an invalid port"),
    ],
)
def test_a_bad_url_is_a_deploy_problem(url: str, message: str) -> None:
    with pytest.raises(FlowCompileError) as raised:
        FlowHarness(_doc(webServiceURL=url))
    assert [(p.node, p.property, p.message) for p in raised.value.problems] == [
        ("req", "webServiceURL", message)
    ]


def test_the_response_body_is_written_out_unchanged_when_untouched(server: str) -> None:
    h = FlowHarness(_doc(webServiceURL=f"{server}/orders", messageDomain="BLOB"))
    h.inject("in", b'{"a": 1}', domain="JSON")
    (out,) = h.seen("req", "out")
    assert json.loads(assembly.to_message(out.root)[1]) == {"echo": {"a": 1}, "path": "/orders"}
    h.close()
