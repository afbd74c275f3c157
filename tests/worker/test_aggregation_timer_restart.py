"""Aggregations and controlled timers in a real execution group: a SIGKILL mid-aggregation and the restart
lose and duplicate nothing, and timeouts that fell due while the group was down fire once it runs again."""

from __future__ import annotations

import datetime as dt
import itertools
import threading
import time

import pytest
from flowbroker.qm.protocol import MessageDescriptor
from flowbroker.runtime.harness import flow, get_all
from flowbroker.worker.harness import WorkerProcess

pytestmark = pytest.mark.timeout(180)
_ids = itertools.count(1)

TAG = """CREATE COMPUTE MODULE Tag
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot.XMLNSC.r.n = InputRoot.XMLNSC.order;
    SET OutputRoot.XMLNSC.r.folders = CARDINALITY(InputRoot.ComIbmAggregateReplyBody.*[]);
    SET OutputRoot.XMLNSC.r.price = InputRoot.ComIbmAggregateReplyBody.price.XMLNSC.price;
    SET OutputRoot.XMLNSC.r.stock = InputRoot.ComIbmAggregateReplyBody.stock.XMLNSC.stock;
    RETURN TRUE;
  END;
END MODULE;"""


def _queues(platform, *bases: str) -> list[str]:
    names = []
    with platform.qm.client() as qm:
        for base in bases:
            name = f"{base}.{next(_ids)}"
            qm.define_queue(name, replace=True)
            names.append(name)
    return names


def _group(platform, name: str) -> None:
    brokers = platform.request("GET", "/api/brokers").json()
    default = next(b for b in brokers if b["name"] == "default")
    response = platform.request("POST", f"/api/brokers/{default['id']}/groups", json={"name": name})
    assert response.status_code in (201, 409), response.text


def _fan_out(name: str, src: str, price: str, stock: str, aggregate: str, timeout: int) -> dict:
    return flow(
        {
            "in": ("MQInput", {"queueName": src, "transactionMode": "yes"}),
            "ctl": ("AggregateControl", {"aggregateName": aggregate, "timeout": timeout}),
            "p": ("MQOutput", {"queueName": price}),
            "pr": ("AggregateRequest", {"folderName": "price"}),
            "s": ("MQOutput", {"queueName": stock}),
            "sr": ("AggregateRequest", {"folderName": "stock"}),
        },
        ["in.out -> ctl", "ctl.out -> p", "p.out -> pr", "ctl.out -> s", "s.out -> sr"],
        name=name,
    )


def _fan_in(name: str, replies: str, out: str, timed_out: str, aggregate: str) -> dict:
    return flow(
        {
            "in": ("MQInput", {"queueName": replies, "messageDomain": "XMLNSC", "transactionMode": "yes"}),
            "agg": ("AggregateReply", {"aggregateName": aggregate}),
            "tag": ("Compute", {"esql": TAG}),
            "out": ("MQOutput", {"queueName": out}),
            "ttag": ("Compute", {"esql": TAG.replace("MODULE Tag", "MODULE TagTimedOut")}),
            "tout": ("MQOutput", {"queueName": timed_out}),
        },
        ["in.out -> agg", "agg.out -> tag", "tag.out -> out", "agg.timeout -> ttag", "ttag.out -> tout"],
        name=name,
    )


def _answer(qm, request, reply_queue: str, body: bytes) -> None:
    qm.put(reply_queue, body, MessageDescriptor(correl_id=request.md.msg_id, persistence=1))


def test_a_sigkill_mid_aggregation_loses_and_duplicates_nothing(platform) -> None:
    src, price, stock, replies, out, timed_out = _queues(
        platform, "AG.IN", "AG.PRICE", "AG.STOCK", "AG.REPLY", "AG.OUT", "AG.TIMEOUT"
    )
    aggregate = f"restart-{time.time_ns()}"
    _group(platform, "aggr")
    total = 40
    with WorkerProcess(platform.data, group="aggr") as crashing:
        for doc in (
            _fan_out("AggFanOut", src, price, stock, aggregate, timeout=0),
            _fan_in("AggFanIn", replies, out, timed_out, aggregate),
        ):
            created = platform.deploy(doc, group="aggr")
            assert platform.wait_status(created["id"], {"running", "failed"})["status"] == "running"
        with platform.qm.client() as qm:
            for i in range(total):
                qm.put(src, f"<order>{i}</order>".encode(), MessageDescriptor(persistence=1))
            prices = get_all(qm, price, total, wait=60)
            assert len(prices) == total

        # every price is answered while the group works through them; it is killed mid-way
        def answer_prices() -> None:
            with platform.qm.client() as producer:
                for request in prices:
                    _answer(producer, request, replies, b"<price>" + request.body[7:-8] + b"</price>")

        answering = threading.Thread(target=answer_prices)
        answering.start()
        with platform.qm.client() as qm:
            deadline = time.monotonic() + 30
            while (
                time.monotonic() < deadline
                and qm.inquire_queue("SYSTEM.BROKER.AGGR.REPLY")["current_depth"] < 8
            ):
                time.sleep(0.005)
        crashing.kill()
        answering.join()
        crashing.start()
        with platform.qm.client() as qm:
            stocks = get_all(qm, stock, total, wait=30)
            assert len(stocks) == total
            for request in stocks:
                _answer(qm, request, replies, b"<stock>s" + request.body[7:-8] + b"</stock>")
            got = get_all(qm, out, total, wait=90)
            time.sleep(1.0)
            assert qm.get(out) is None and qm.get(timed_out) is None
            for system in ("CONTROL", "REQUEST", "REPLY"):
                assert qm.inquire_queue(f"SYSTEM.BROKER.AGGR.{system}")["current_depth"] == 0, system
    # the replies carry no order number: each combined message pairs the price and stock of one order
    assert sorted(m.body for m in got) == sorted(
        f"<r><folders>2</folders><price>{i}</price><stock>s{i}</stock></r>".encode() for i in range(total)
    )


def test_a_timeout_due_while_the_group_was_down_fires_after_the_restart(platform) -> None:
    src, price, stock, replies, out, timed_out = _queues(
        platform, "AT.IN", "AT.PRICE", "AT.STOCK", "AT.REPLY", "AT.OUT", "AT.TIMEOUT"
    )
    aggregate = f"timeout-{time.time_ns()}"
    _group(platform, "aggrt")
    with WorkerProcess(platform.data, group="aggrt") as crashing:
        for doc in (
            _fan_out("AggFanOutT", src, price, stock, aggregate, timeout=3),
            _fan_in("AggFanInT", replies, out, timed_out, aggregate),
        ):
            created = platform.deploy(doc, group="aggrt")
            assert platform.wait_status(created["id"], {"running", "failed"})["status"] == "running"
        with platform.qm.client() as qm:
            qm.put(src, b"<order>9</order>", MessageDescriptor(persistence=1))
            (request,) = get_all(qm, price, 1, wait=30)
            _answer(qm, request, replies, b"<price>9</price>")
            deadline = time.monotonic() + 30
            while (
                time.monotonic() < deadline
                and qm.inquire_queue("SYSTEM.BROKER.AGGR.REPLY")["current_depth"] < 1
            ):
                time.sleep(0.01)
        crashing.kill()
        time.sleep(4.0)  # the timeout falls due while no group runs
        with platform.qm.client() as qm:
            assert qm.get(timed_out) is None
        crashing.start()
        with platform.qm.client() as qm:
            (partial,) = get_all(qm, timed_out, 1, wait=30)
            time.sleep(1.5)
            assert qm.get(timed_out) is None and qm.get(out) is None
    assert partial.body == b"<r><folders>1</folders><price>9</price></r>"


FIRED = """CREATE COMPUTE MODULE Fired
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot.XMLNSC.fired.id = InputLocalEnvironment.TimeoutRequest.Identifier;
    SET OutputRoot.XMLNSC.fired.count = InputLocalEnvironment.TimeoutNotification.Count;
    RETURN TRUE;
  END;
END MODULE;"""


def test_controlled_timeouts_set_before_a_sigkill_fire_after_the_restart(platform) -> None:
    src, dst = _queues(platform, "TM.IN", "TM.OUT")
    unique = f"restart-timers-{time.time_ns()}"
    _group(platform, "timers")
    control = flow(
        {
            "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC", "transactionMode": "yes"}),
            "tc": (
                "TimeoutControl",
                {"uniqueIdentifier": unique, "requestLocation": "InputRoot.XMLNSC.TimeoutRequest"},
            ),
        },
        ["in.out -> tc"],
        name="TimerControl",
    )
    notify = flow(
        {
            "tn": ("TimeoutNotification", {"uniqueIdentifier": unique, "operationMode": "controlled"}),
            "c": ("Compute", {"esql": FIRED}),
            "o": ("MQOutput", {"queueName": dst}),
        },
        ["tn.out -> c", "c.out -> o"],
        name="TimerNotify",
    )
    with WorkerProcess(platform.data, group="timers") as crashing:
        for doc in (control, notify):
            created = platform.deploy(doc, group="timers")
            assert platform.wait_status(created["id"], {"running", "failed"})["status"] == "running"
        soon = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=3)).strftime("%H:%M:%S")
        with platform.qm.client() as qm:
            for ident, fields in (("single", ""), ("series", "<Interval>1</Interval><Count>-1</Count>")):
                body = (
                    f"<TimeoutRequest><Action>SET</Action><Identifier>{ident}</Identifier><StartTime>{soon}</StartTime>"
                    f"{fields}</TimeoutRequest>"
                )
                qm.put(src, body.encode(), MessageDescriptor(persistence=1))
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and qm.inquire_queue(src)["current_depth"]:
                time.sleep(0.05)
            time.sleep(0.5)
        crashing.kill()
        time.sleep(4.5)  # both fall due while no group runs
        crashing.start()
        with platform.qm.client() as qm:
            got = get_all(qm, dst, 3, wait=30)
            bodies = [m.body for m in got]
            assert bodies.count(b"<fired><id>single</id><count>1</count></fired>") == 1, bodies
            # the series goes on after the restart; its missed timeouts are skipped, not replayed
            series = [b for b in bodies if b"series" in b]
            assert series and len(series) == len(set(series)), bodies
