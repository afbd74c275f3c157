"""A deployment carries its subflows and message sets to a real execution group process."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from flowbroker.formats.mrm.cwf import pack_decimal
from flowbroker.runtime.harness import flow, get_all
from flowbroker.worker.harness import WorkerProcess

pytestmark = pytest.mark.timeout(240)
_ids = itertools.count(1)


@pytest.fixture(scope="module")
def worker(platform):
    with WorkerProcess(platform.data) as process:
        yield process


def _queues(platform, *bases: str) -> list[str]:
    names = []
    with platform.qm.client() as qm:
        for base in bases:
            name = f"{base}.DEP{next(_ids)}"
            qm.define_queue(name, replace=True)
            names.append(name)
    return names


def _order_set(id_length: int) -> dict[str, Any]:
    return {
        "types": {
            "Order": {
                "elements": [
                    {"name": "Id", "type": "string", "cwf": {"length": id_length}},
                    {
                        "name": "Qty",
                        "type": "integer",
                        "cwf": {"repr": "display", "length": 3, "signed": False},
                    },
                    {"name": "Price", "type": "decimal", "scale": 2, "cwf": {"repr": "packed", "length": 3}},
                ]
            }
        }
    }


TO_XML = """CREATE COMPUTE MODULE CwfToXml
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot.MQMD = InputRoot.MQMD;
    SET OutputRoot.XMLNSC.Order = InputRoot.MRM;
    RETURN TRUE;
  END;
END MODULE;"""


def _cwf_flow(name: str, src: str, dst: str, message_set: str) -> dict[str, Any]:
    return flow(
        {
            "in": (
                "MQInput",
                {
                    "queueName": src,
                    "messageDomain": "MRM",
                    "messageSet": message_set,
                    "messageType": "Order",
                    "messageFormat": "CWF",
                },
            ),
            "c": ("Compute", {"esql": TO_XML}),
            "out": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> c", "c.out -> out"],
        name=name,
    )


def _record(order_id: bytes, qty: int, cents: int) -> bytes:
    packed = pack_decimal(cents, 3, True)
    assert packed is not None
    return order_id + str(qty).rjust(3, "0").encode() + packed


def test_an_mrm_flow_deployed_over_rest_converts_cwf_to_xml_in_the_worker(platform, worker) -> None:
    n = next(_ids)
    set_name = f"ORDERS{n}"
    created = platform.request(
        "POST", "/api/message-sets", json={"name": set_name, "document": _order_set(4)}
    )
    assert created.status_code == 201, created.text
    src, dst = _queues(platform, "CWF.IN", "XML.OUT")
    deployment = platform.deploy(_cwf_flow(f"Cwf{n}", src, dst, set_name))
    assert platform.wait_status(deployment["id"], {"running", "failed"})["status"] == "running"
    with platform.qm.client() as qm:
        qm.put(src, _record(b"AB12", 7, 1234))
        (out,) = get_all(qm, dst, 1, wait=30)
    assert out.body == b"<Order><Id>AB12</Id><Qty>7</Qty><Price>12.34</Price></Order>"

    # a new version of the set reaches the group with the next deployment
    saved = platform.request(
        "PUT", f"/api/message-sets/{created.json()['id']}", json={"document": _order_set(6)}
    )
    assert saved.status_code == 200, saved.text
    again = platform.deploy(_cwf_flow(f"Cwf{n}", src, dst, set_name))
    assert platform.wait_status(again["id"], {"running", "failed"})["status"] == "running"
    with platform.qm.client() as qm:
        qm.put(src, _record(b"ABCD56", 12, -5))
        (out,) = get_all(qm, dst, 1, wait=30)
    assert out.body == b"<Order><Id>ABCD56</Id><Qty>12</Qty><Price>-0.05</Price></Order>"


def test_a_flow_naming_a_set_the_repository_lacks_fails_at_deploy(platform) -> None:
    src, dst = _queues(platform, "CWF.IN", "XML.OUT")
    failed = platform.deploy(_cwf_flow("NoSuchSet", src, dst, "NOT.A.SET"))
    assert failed["status"] == "failed"
    assert failed["diagnostics"] == [
        {
            "node": "in",
            "property": "messageSet",
            "line": 0,
            "column": 0,
            "pointer": "",
            "message": "message set 'NOT.A.SET': there is no message set of that name in the repository",
        }
    ]


def _stamp(name: str, mark: str) -> dict[str, Any]:
    esql = (
        "CREATE COMPUTE MODULE Stamp\n  CREATE FUNCTION Main() RETURNS BOOLEAN\n  BEGIN\n"
        f"    SET OutputRoot = InputRoot;\n    SET OutputRoot.XMLNSC.doc.stamp = '{mark}';\n"
        "    RETURN TRUE;\n  END;\nEND MODULE;"
    )
    return flow(
        {"i": ("Input", {}), "c": ("Compute", {"esql": esql}), "o": ("Output", {})},
        ["i.out -> c", "c.out -> o"],
        name=name,
    )


def _main(name: str, src: str, dst: str, ref: dict[str, Any]) -> dict[str, Any]:
    return flow(
        {
            "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC"}),
            "s": ("Subflow", {"flow": ref}),
            "out": ("MQOutput", {"queueName": dst}),
        },
        ["in.out -> s", "s.out -> out"],
        name=name,
    )


def _through(platform, src: str, dst: str) -> bytes:
    with platform.qm.client() as qm:
        qm.put(src, b"<doc/>")
        (out,) = get_all(qm, dst, 1, wait=30)
    return bytes(out.body)


def test_a_saved_subflow_named_by_a_flow_is_deployed_with_it(platform) -> None:
    n = next(_ids)
    sub = f"Stamp{n}"
    saved = platform.request("POST", "/api/flows", json=_stamp(sub, "v1"))
    assert saved.status_code == 201, saved.text
    sub_id = saved.json()["id"]
    latest_in, latest_out, pinned_in, pinned_out = _queues(
        platform, "LATEST.IN", "LATEST.OUT", "PIN.IN", "PIN.OUT"
    )
    _group(platform, "subflows")
    with WorkerProcess(platform.data, group="subflows") as process:
        latest = platform.deploy(
            _main(f"UsesLatest{n}", latest_in, latest_out, {"name": sub}), group="subflows"
        )
        assert platform.wait_status(latest["id"], {"running", "failed"})["status"] == "running", latest
        assert _through(platform, latest_in, latest_out) == b"<doc><stamp>v1</stamp></doc>"

        # a newer version in the repository changes nothing until the flow is deployed again,
        # not even across a restart of the group: the deployment carries the subflow it was given
        changed = platform.request("PUT", f"/api/flows/{sub_id}", json=_stamp(sub, "v2"))
        assert changed.status_code == 200, changed.text
        process.stop()
        process.start()
        assert _through(platform, latest_in, latest_out) == b"<doc><stamp>v1</stamp></doc>"

        again = platform.deploy(
            _main(f"UsesLatest{n}", latest_in, latest_out, {"name": sub}), group="subflows"
        )
        assert platform.wait_status(again["id"], {"running", "failed"})["status"] == "running"
        assert _through(platform, latest_in, latest_out) == b"<doc><stamp>v2</stamp></doc>"

        pinned = platform.deploy(
            _main(f"UsesPinned{n}", pinned_in, pinned_out, {"name": sub, "version": 1}), group="subflows"
        )
        assert platform.wait_status(pinned["id"], {"running", "failed"})["status"] == "running"
        assert _through(platform, pinned_in, pinned_out) == b"<doc><stamp>v1</stamp></doc>"

    missing = platform.deploy(_main(f"UsesMissing{n}", pinned_in, pinned_out, {"name": sub, "version": 9}))
    assert missing["status"] == "failed"
    assert [(d["node"], d["property"]) for d in missing["diagnostics"]] == [("s", "flow")]
    assert missing["diagnostics"][0]["message"] == f"subflow '{sub}' version 9 was not found"


def _group(platform, name: str) -> None:
    brokers = platform.request("GET", "/api/brokers").json()
    default = next(b for b in brokers if b["name"] == "default")
    response = platform.request("POST", f"/api/brokers/{default['id']}/groups", json={"name": name})
    assert response.status_code in (201, 409), response.text
