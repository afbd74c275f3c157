"""A deployed flow given an XML message past the attribute limit: a parser exception through the
failure path (here the dead-letter queue, with its reason), and the next message flows."""

from __future__ import annotations

import pytest
from flowbroker.runtime.harness import flow, get_all

pytestmark = pytest.mark.timeout(120)


def test_too_many_attributes_is_a_parser_exception_and_the_flow_goes_on(qm, queues, group) -> None:
    src, dst = queues("IN"), queues("OUT")
    qm.purge("SYSTEM.DEAD.LETTER.QUEUE")
    group.deploy(
        flow(
            {
                "in": ("MQInput", {"queueName": src, "messageDomain": "XMLNSC", "transactionMode": "no"}),
                "read": ("Trace", {"destination": "log", "pattern": "${Root.XMLNSC.doc}"}),
                "out": ("MQOutput", {"queueName": dst}),
            },
            ["in.out -> read", "read.out -> out"],
            name="XmlLimits",
        )
    )
    wide = ("<doc " + " ".join(f'a{i}="{i}"' for i in range(10_001)) + "/>").encode()
    qm.put(src, wide)
    qm.put(src, b'<doc a="1"/>')
    assert [m.body for m in get_all(qm, dst, 1)] == [b'<doc a="1"/>']
    (dead,) = get_all(qm, "SYSTEM.DEAD.LETTER.QUEUE", 1)
    assert dead.body == wide
    assert dead.properties["flowbroker.reason"].endswith(
        "; caused by ParserException in read: XMLNSC: element Root.XMLNSC.doc (line 1) has 10001 attributes, "
        "more than the limit of 10000 per element (FLOWBROKER_XML_MAX_ATTRIBUTES)"
    ), dead.properties["flowbroker.reason"]
