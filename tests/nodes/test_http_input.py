"""HTTPInput: a deployed flow served over real HTTP by the execution group's listener."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from flowbroker.runtime.compiler import FlowCompileError
from flowbroker.runtime.harness import flow, get_all

pytestmark = pytest.mark.timeout(60)

GREET = """CREATE COMPUTE MODULE Greet
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot = InputRoot;
    SET OutputRoot.JSON.Data.greeting = 'hello ' || InputRoot.JSON.Data.name;
    SET OutputRoot.JSON.Data.lang = InputLocalEnvironment.HTTP.Input.QueryString.lang;
    SET OutputRoot.JSON.Data.id = InputLocalEnvironment.HTTP.Input.Path.Parameters.id;
    SET OutputRoot.JSON.Data.agent = InputRoot.HTTPInputHeader."X-Client";
    RETURN TRUE;
  END;
END MODULE;
"""


def _base(group) -> str:
    host, port = group.http.address
    return f"http://{host}:{port}"


def _http_flow(name: str, path: str, esql: str = GREET, **input_props: object) -> dict:
    return flow(
        {
            "in": ("HTTPInput", {"path": path, "messageDomain": "JSON", **input_props}),
            "c": ("Compute", {"esql": esql}),
            "reply": ("HTTPReply", {}),
        },
        ["in.out -> c", "c.out -> reply"],
        name=name,
    )


def test_a_request_runs_the_flow_and_its_reply_answers_it(group) -> None:
    group.deploy(_http_flow("Greeter", "/greet/{id}"))
    response = httpx.post(
        f"{_base(group)}/greet/42?lang=en",
        json={"name": "Ada"},
        headers={"X-Client": "test-suite"},
        timeout=10,
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {
        "name": "Ada",
        "greeting": "hello Ada",
        "lang": "en",
        "id": "42",
        "agent": "test-suite",
    }
    stats = group.statistics()["Greeter"]
    assert stats["messages_in"] == 1 and stats["errors"] == 0


def test_status_code_and_headers_come_from_the_local_environment_and_reply_header(group) -> None:
    created = """CREATE COMPUTE MODULE Created
      CREATE FUNCTION Main() RETURNS BOOLEAN
      BEGIN
        SET OutputLocalEnvironment = InputLocalEnvironment;
        SET OutputLocalEnvironment.Destination.HTTP.ReplyStatusCode = 201;
        SET OutputRoot.Properties = InputRoot.Properties;
        SET OutputRoot.HTTPReplyHeader."Location" = '/orders/7';
        SET OutputRoot.JSON.Data.created = TRUE;
        RETURN TRUE;
      END;
    END MODULE;
    """
    doc = flow(
        {
            "in": ("HTTPInput", {"path": "/orders", "method": "POST", "messageDomain": "JSON"}),
            "c": ("Compute", {"esql": created, "computeMode": "LocalEnvironmentAndMessage"}),
            "reply": ("HTTPReply", {}),
        },
        ["in.out -> c", "c.out -> reply"],
        name="Creator",
    )
    group.deploy(doc)
    base = _base(group)
    response = httpx.post(f"{base}/orders", json={}, timeout=10)
    assert response.status_code == 201
    assert response.headers["location"] == "/orders/7"
    assert response.json() == {"created": True}
    # the route serves POST only; another path is not served at all
    assert httpx.get(f"{base}/orders", timeout=10).status_code == 405
    assert httpx.post(f"{base}/nothing/here", json={}, timeout=10).status_code == 404


def test_no_reply_within_the_wait_time_answers_504(group) -> None:
    doc = flow(
        {
            "in": ("HTTPInput", {"path": "/silent", "maxClientWaitTime": 1}),
            "t": ("Trace", {"destination": "none", "pattern": "nothing"}),
        },
        ["in.out -> t"],
        name="Silent",
    )
    group.deploy(doc)
    started = time.monotonic()
    response = httpx.post(f"{_base(group)}/silent", content=b"x", timeout=20)
    assert response.status_code == 504
    assert "did not reply within 1 seconds" in response.text
    assert time.monotonic() - started < 15


def test_the_timeout_terminal_may_answer_in_place_of_the_flow(group) -> None:
    late = """CREATE COMPUTE MODULE Late
      CREATE FUNCTION Main() RETURNS BOOLEAN
      BEGIN
        SET OutputLocalEnvironment = InputLocalEnvironment;
        SET OutputLocalEnvironment.Destination.HTTP.ReplyStatusCode = 202;
        SET OutputRoot.JSON.Data.status = 'accepted, still working';
        RETURN TRUE;
      END;
    END MODULE;
    """
    doc = flow(
        {
            "in": ("HTTPInput", {"path": "/slow", "maxClientWaitTime": 1}),
            "t": ("Trace", {"destination": "none", "pattern": "nothing"}),
            "late": ("Compute", {"esql": late, "computeMode": "LocalEnvironmentAndMessage"}),
            "reply": ("HTTPReply", {}),
        },
        ["in.out -> t", "in.timeout -> late", "late.out -> reply"],
        name="SlowWithTimeoutPath",
    )
    group.deploy(doc)
    response = httpx.post(f"{_base(group)}/slow", content=b"x", timeout=20)
    assert response.status_code == 202
    assert response.json() == {"status": "accepted, still working"}


def test_additional_instances_serve_requests_concurrently(group) -> None:
    # each invocation waits 0.5 s; four requests at once are answered together only when four
    # flow threads take them, and the flow threads that answered are told apart by name
    sleepy = """CREATE COMPUTE MODULE Sleepy
      CREATE FUNCTION Main() RETURNS BOOLEAN
      BEGIN
        SET OutputRoot = InputRoot;
        RETURN TRUE;
      END;
    END MODULE;
    """
    doc = _http_flow("Concurrent", "/work", sleepy, maxPendingRequests=10)
    doc["properties"] = {"additionalInstances": 3}
    group.deploy(doc)
    deployed = group.flows["Concurrent"]
    compute = deployed.compiled.nodes["c"]
    inside: list[int] = []
    most = [0]
    lock = threading.Lock()
    original = compute.evaluate

    def slow_evaluate(assembly, terminal):  # counts invocations running at once
        with lock:
            inside.append(1)
            most[0] = max(most[0], len(inside))
        time.sleep(0.5)
        with lock:
            inside.pop()
        return original(assembly, terminal)

    compute.evaluate = slow_evaluate
    results: list[int] = []
    base = _base(group)

    def call(i: int) -> None:
        results.append(httpx.post(f"{base}/work", json={"name": str(i)}, timeout=20).status_code)

    callers = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(20)
    assert results == [200, 200, 200, 200]
    assert most[0] == 4
    assert group.statistics()["Concurrent"]["threads"] == 4


def test_more_requests_than_the_queue_holds_are_refused_with_503(group) -> None:
    hold = threading.Event()
    doc = _http_flow("Busy", "/busy", maxPendingRequests=1)
    group.deploy(doc)
    compute = group.flows["Busy"].compiled.nodes["c"]
    original = compute.evaluate

    def blocked(assembly, terminal):
        hold.wait(20)
        return original(assembly, terminal)

    compute.evaluate = blocked
    base = _base(group)
    statuses: list[int] = []

    def call() -> None:
        statuses.append(httpx.post(f"{base}/busy", json={"name": "x"}, timeout=30).status_code)

    first = threading.Thread(target=call)
    first.start()
    deadline = time.monotonic() + 10
    while group.http.pending() < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # the one flow thread has taken the first request
    second = threading.Thread(target=call)
    second.start()
    while group.http.pending() < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    refused = httpx.post(f"{base}/busy", json={"name": "y"}, timeout=10)
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    hold.set()
    first.join(20)
    second.join(20)
    assert statuses == [200, 200]


def test_a_malformed_body_answers_400_with_the_parser_error_and_no_traceback(group) -> None:
    group.deploy(_http_flow("Strict", "/strict/{id}"))
    response = httpx.post(
        f"{_base(group)}/strict/1",
        content=b'{"name": "Ada",',
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    assert response.status_code == 400
    assert response.text.startswith("400 Bad Request: ")
    assert "JSON" in response.text
    assert "Traceback" not in response.text and "File " not in response.text
    assert group.statistics()["Strict"]["errors"] >= 1


def test_the_failure_terminal_gets_the_exception_list_and_may_answer(group) -> None:
    complain = """CREATE COMPUTE MODULE Complain
      CREATE FUNCTION Main() RETURNS BOOLEAN
      BEGIN
        SET OutputLocalEnvironment = InputLocalEnvironment;
        SET OutputLocalEnvironment.Destination.HTTP.ReplyStatusCode = 422;
        SET OutputRoot.JSON.Data.error = InputExceptionList.*[1].Label;
        RETURN TRUE;
      END;
    END MODULE;
    """
    doc = flow(
        {
            "in": ("HTTPInput", {"path": "/validated", "messageDomain": "JSON"}),
            "c": ("Compute", {"esql": GREET}),
            "reply": ("HTTPReply", {}),
            "complain": ("Compute", {"esql": complain, "computeMode": "All"}),
            "error_reply": ("HTTPReply", {}),
        },
        ["in.out -> c", "c.out -> reply", "in.failure -> complain", "complain.out -> error_reply"],
        name="Validated",
    )
    group.deploy(doc)
    response = httpx.post(f"{_base(group)}/validated", content=b"{not json", timeout=10)
    assert response.status_code == 422
    assert response.json() == {"error": "c"}


def test_an_oversized_body_is_refused_with_413_before_the_flow_runs(group) -> None:
    group.deploy(_http_flow("Small", "/small"))
    group.http.max_body_bytes = 1024
    response = httpx.post(f"{_base(group)}/small", content=b"x" * 4096, timeout=10)
    assert response.status_code == 413
    # streamed without a Content-Length, it is cut off as it arrives
    response = httpx.post(f"{_base(group)}/small", content=iter([b"x" * 800, b"x" * 800]), timeout=10)
    assert response.status_code == 413
    assert group.statistics()["Small"]["messages_in"] == 0


def test_queue_puts_commit_when_the_flow_ends_and_back_out_when_it_fails(group, qm, queues) -> None:
    out = queues("HTTP.OUT")
    fail_second = """CREATE COMPUTE MODULE MaybeFail
      CREATE FUNCTION Main() RETURNS BOOLEAN
      BEGIN
        IF InputRoot.JSON.Data.fail THEN
          THROW USER EXCEPTION VALUES ('asked to fail');
        END IF;
        SET OutputRoot = InputRoot;
        RETURN TRUE;
      END;
    END MODULE;
    """
    doc = flow(
        {
            "in": ("HTTPInput", {"path": "/put", "messageDomain": "JSON"}),
            "o": ("MQOutput", {"queueName": out}),
            "c": ("Compute", {"esql": fail_second}),
            "reply": ("HTTPReply", {}),
        },
        ["in.out -> o", "o.out -> c", "c.out -> reply"],
        name="PutThenReply",
    )
    group.deploy(doc)
    base = _base(group)
    assert httpx.post(f"{base}/put", json={"fail": False}, timeout=10).status_code == 200
    failed = httpx.post(f"{base}/put", json={"fail": True}, timeout=10)
    assert failed.status_code == 500 and "Traceback" not in failed.text
    got = get_all(qm, out, 2, wait=2.0)
    assert [json.loads(m.body) for m in got] == [{"fail": False}]


def test_two_flows_cannot_serve_the_same_route(group) -> None:
    group.deploy(_http_flow("First", "/same"))
    with pytest.raises(FlowCompileError) as raised:
        group.deploy(_http_flow("Second", "/same"))
    (problem,) = raised.value.problems
    assert problem.node == "in" and problem.property == "path"
    assert problem.message == "ANY /same is already served by node in of flow First"
    # the same flow deployed again keeps its route
    group.deploy(_http_flow("First", "/same"))
    assert httpx.post(f"{_base(group)}/same", json={"name": "B"}, timeout=10).json()["greeting"] == "hello B"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("orders", "the path must begin with '/', got 'orders'"),
        ("/a/*/b", "'*' must be the last segment of the path '/a/*/b'"),
        ("/a/{1x}", "a path parameter must look like {name}, got '{1x}'"),
        ("/a b", "character ' ' is not allowed in the path segment 'a b'"),
    ],
)
def test_a_bad_path_is_a_deploy_problem_on_the_path_property(group, path: str, message: str) -> None:
    with pytest.raises(FlowCompileError) as raised:
        group.deploy(_http_flow("BadPath", path))
    assert [(p.node, p.property, p.message) for p in raised.value.problems] == [("in", "path", message)]


def test_a_flow_with_only_an_http_input_node_compiles() -> None:
    from flowbroker.runtime.compiler import compile_flow

    compiled = compile_flow(_http_flow("OnlyHttp", "/only"))
    assert [n.id for n in compiled.input_nodes()] == ["in"]
    with pytest.raises(FlowCompileError) as raised:
        compile_flow(flow({"c": ("Compute", {"esql": GREET})}, [], name="NoInput"))
    assert raised.value.problems[-1].message.startswith("a flow needs at least one input node to run (")


def test_the_route_is_served_from_deploy_until_the_flow_stops(tmp_path) -> None:
    from flowbroker.runtime.engine import ExecutionGroupRuntime

    def slow_connect() -> object:
        time.sleep(1.0)  # a queue manager slow to answer: the flow threads start late
        return object()

    group = ExecutionGroupRuntime(slow_connect, trace_dir=tmp_path)
    try:
        # asked at once after the deploy, before any flow thread runs, the request waits for one
        # rather than being told that no flow serves the path
        group.deploy(_http_flow("Prompt", "/prompt"))
        base = _base(group)
        assert httpx.post(f"{base}/prompt", json={"name": "A"}, timeout=10).status_code == 200
        group.stop_flow("Prompt")
        assert httpx.post(f"{base}/prompt", json={"name": "B"}, timeout=10).status_code == 404
        group.start_flow("Prompt")
        assert httpx.post(f"{base}/prompt", json={"name": "C"}, timeout=10).json()["greeting"] == "hello C"
    finally:
        group.shutdown(timeout=10)


def test_a_flow_that_puts_nothing_answers_while_the_queue_manager_is_unreachable(tmp_path) -> None:
    from flowbroker.runtime.engine import ExecutionGroupRuntime

    def unreachable() -> object:
        raise ConnectionRefusedError(111, "Connection refused")

    group = ExecutionGroupRuntime(unreachable, trace_dir=tmp_path)
    try:
        group.deploy(_http_flow("NoQueues", "/no-queues"))
        putting = flow(
            {
                "in": ("HTTPInput", {"path": "/puts"}),
                "o": ("MQOutput", {"queueName": "ANY.QUEUE"}),
                "reply": ("HTTPReply", {}),
            },
            ["in.out -> o", "o.out -> reply"],
            name="Puts",
        )
        group.deploy(putting)
        base = _base(group)
        answered = httpx.post(f"{base}/no-queues", json={"name": "Q"}, timeout=10)
        assert answered.status_code == 200 and answered.json()["greeting"] == "hello Q"
        # a flow that puts needs the queue manager: its request fails, with no traceback
        failed = httpx.post(f"{base}/puts", content=b"x", timeout=10)
        assert failed.status_code == 500
        assert failed.text == "500 Internal Server Error: the flow failed to process it\n"
    finally:
        group.shutdown(timeout=10)


def test_two_nodes_of_one_flow_cannot_serve_the_same_route(group) -> None:
    doc = flow(
        {
            "a": ("HTTPInput", {"path": "/twice", "method": "POST"}),
            "b": ("HTTPInput", {"path": "/twice/", "method": "ANY"}),
            "reply": ("HTTPReply", {}),
        },
        ["a.out -> reply", "b.out -> reply"],
        name="TwoInputs",
    )
    with pytest.raises(FlowCompileError) as raised:
        group.deploy(doc)
    assert [(p.node, p.property, p.message) for p in raised.value.problems] == [
        ("b", "path", "ANY /twice is already served by node a of flow TwoInputs")
    ]
