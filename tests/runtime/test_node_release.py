"""Undeploying, deploying over and shutting down release what nodes hold: the process's open file
descriptors and child processes come back to where they were, and a flow deployed again runs."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.engine import ExecutionGroupRuntime
from flowbroker.runtime.harness import flow
from flowbroker_nodes import http_request, mqtt_publish, mqtt_subscribe, xsl_transform
from flowbroker_nodes.base import DeployProblem, release_nodes

pytestmark = pytest.mark.timeout(180)

CYCLES = 20
#: Descriptors the process may open for good on the way (lazily imported modules, caches).
SLACK = 3

STYLESHEET = (
    '<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">'
    '<xsl:template match="/order"><invoice><xsl:value-of select="sum(item/@price)"/></invoice>'
    "</xsl:template></xsl:stylesheet>"
)
ORDER = b'<order><item price="2"/><item price="3.5"/></order>'


class _Orders(BaseHTTPRequestHandler):
    """Answers every POST with the same order, keeping the connection open (HTTP/1.1)."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(ORDER)))
        self.end_headers()
        self.wfile.write(ORDER)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def order_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Orders)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/orders"
    server.shutdown()
    server.server_close()


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[ExecutionGroupRuntime]:
    def no_queue_manager() -> None:
        raise AssertionError("this flow does not use the queue manager")

    group = ExecutionGroupRuntime(no_queue_manager, trace_dir=tmp_path / "trace")  # type: ignore[arg-type]
    yield group
    group.shutdown(timeout=10)


def _document(url: str, host: str, port: int, topic: str) -> dict:
    return flow(
        {
            "in": ("HTTPInput", {"path": "/release", "messageDomain": "BLOB"}),
            "call": ("HTTPRequest", {"webServiceURL": url, "messageDomain": "XMLNSC"}),
            "xsl": ("XSLTransform", {"stylesheet": STYLESHEET}),
            "pub": ("MQTTPublish", {"host": host, "port": port, "topicName": topic, "qos": "1"}),
            "reply": ("HTTPReply", {}),
        },
        ["in.out -> call", "call.out -> xsl", "xsl.out -> pub", "pub.out -> reply"],
        name="Release",
    )


def _run_once(group: ExecutionGroupRuntime) -> None:
    """One request through every node: each opens what it holds."""
    host, port = group.http.address
    response = httpx.post(f"http://{host}:{port}/release", content=b"go", timeout=30)
    assert response.status_code == 200, response.text
    assert b"<invoice>5.5</invoice>" in response.content


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _children() -> set[int]:
    found: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as listing:
                found.update(int(pid) for pid in listing.read().split())
        except OSError:
            continue
    return found


def _settled(limit: int) -> int:
    """The open descriptor count once it is at most ``limit`` (the test server's threads close
    their side of a connection when they read its end), or what it is after 10 s of waiting."""
    deadline = time.monotonic() + 10
    count = _open_fds()
    while count > limit and time.monotonic() < deadline:
        time.sleep(0.05)
        count = _open_fds()
    return count


def test_undeploy_and_deploy_over_release_connections_and_sandboxes(
    runtime: ExecutionGroupRuntime, order_server: str, mqtt_address: tuple[str, int]
) -> None:
    host, port = mqtt_address
    document = _document(order_server, host, port, f"flowbroker/test/release/{uuid.uuid4().hex[:8]}")
    children_before = _children()
    # the first round opens what stays open for the process (the group's listener, imports)
    runtime.deploy(document)
    _run_once(runtime)
    assert runtime.undeploy("Release")
    baseline = _settled(0)
    assert _children() <= children_before

    for _ in range(CYCLES):
        runtime.deploy(document)
        _run_once(runtime)
        assert runtime.undeploy("Release")
        # nothing the undeployed flow used stays open: no sandbox process either
        assert _children() <= children_before
    assert _settled(baseline + SLACK) <= baseline + SLACK

    # deploying over a running flow releases the version it replaces
    for _ in range(CYCLES):
        runtime.deploy(document)
        _run_once(runtime)
    assert runtime.undeploy("Release")
    assert _settled(baseline + SLACK) <= baseline + SLACK
    assert _children() <= children_before

    # and the flow deployed again after all that runs
    runtime.deploy(document)
    _run_once(runtime)


def test_shutdown_releases_the_nodes_of_every_flow(
    tmp_path: Path, order_server: str, mqtt_address: tuple[str, int]
) -> None:
    host, port = mqtt_address
    children_before = _children()
    group = ExecutionGroupRuntime(lambda: None, trace_dir=tmp_path / "trace")  # type: ignore[arg-type, return-value]
    deployed = group.deploy(_document(order_server, host, port, "flowbroker/test/release/shutdown"))
    _run_once(group)
    call = deployed.compiled.nodes["call"]
    pub = deployed.compiled.nodes["pub"]
    assert call._client is not None and pub._client is not None  # type: ignore[attr-defined]
    group.shutdown(timeout=10)
    assert deployed.released
    assert call._client is None and pub._client is None  # type: ignore[attr-defined]
    assert _children() <= children_before


def test_a_released_node_used_again_opens_afresh(
    runtime: ExecutionGroupRuntime, order_server: str, mqtt_address: tuple[str, int]
) -> None:
    host, port = mqtt_address
    deployed = runtime.deploy(_document(order_server, host, port, "flowbroker/test/release/again"))
    _run_once(runtime)
    # released twice (idempotent), the same node instances serve the next request
    release_nodes(deployed.compiled.nodes.values(), "Release")
    release_nodes(deployed.compiled.nodes.values(), "Release")
    assert deployed.compiled.nodes["call"]._client is None  # type: ignore[attr-defined]
    _run_once(runtime)
    assert deployed.compiled.nodes["call"]._client is not None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("module", "properties", "field"),
    [
        (http_request, {"httpMethod": "BREW"}, "httpMethod"),
        (mqtt_publish, {"host": ""}, "host"),
        (mqtt_subscribe, {"topicName": "a/#/b", "host": "127.0.0.1"}, "topicName"),
        (xsl_transform, {"stylesheet": "<not-xsl"}, "stylesheet"),
    ],
)
def test_a_node_whose_prepare_failed_releases_without_raising(module, properties, field) -> None:
    node = module.Node("n", "n", properties)
    with pytest.raises(DeployProblem) as problem:
        node.prepare()
    assert problem.value.property == field
    node.release()
    node.release()


def test_a_failed_release_is_logged_and_the_other_nodes_still_released(
    order_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(http_request.Node):
        def release(self) -> None:
            raise OSError("the pool would not close")

    broken = Broken("broken", "broken", {"webServiceURL": order_server})
    broken.prepare()
    fine = http_request.Node("fine", "fine", {"webServiceURL": order_server})
    fine.prepare()
    fine._http()
    release_nodes([broken, fine], "Flow")
    assert fine._client is None
    assert "node broken" in caplog.text and "did not release cleanly" in caplog.text


def test_a_deployment_refused_after_prepare_releases_its_nodes(
    runtime: ExecutionGroupRuntime, order_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    released: list[str] = []
    original = http_request.Node.release

    def noting(node: http_request.Node) -> None:
        released.append(node.id)
        original(node)

    monkeypatch.setattr(http_request.Node, "release", noting)
    # a problem of the whole flow, found once its nodes were prepared: no input node
    no_input = flow({"call": ("HTTPRequest", {"webServiceURL": order_server})}, [], name="Refused")
    with pytest.raises(FlowCompileError) as refused:
        runtime.deploy(no_input)
    assert "at least one input node" in refused.value.problems[0].message
    # once the throwaway instance the configuration check prepared, once the compiled one
    assert released == ["call", "call"]
    released.clear()
    # a route another flow serves: refused after every node was prepared
    runtime.deploy(flow({"in": ("HTTPInput", {"path": "/taken"}), "r": ("HTTPReply", {})}, ["in.out -> r"]))
    taken = flow(
        {"in": ("HTTPInput", {"path": "/taken"}), "call": ("HTTPRequest", {"webServiceURL": order_server})},
        ["in.out -> call"],
        name="Other",
    )
    with pytest.raises(FlowCompileError):
        runtime.deploy(taken)
    assert released == ["call", "call"]
    assert "Other" not in runtime.flows
