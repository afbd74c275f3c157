"""The mapping table: each ACE node type, the flowbroker node type it becomes, and its properties.

A property maps by name and converter; a value the converter does not accept is dropped and
reported. ``defaults`` are ACE's documented defaults, written into the node when the XMI omits
the attribute (the Toolkit leaves out every property at its default), so the imported node
behaves as the ACE one did even where flowbroker's own default differs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Converter = Callable[[str], Any]


class Unconvertible(ValueError):
    """The value has no flowbroker equivalent; the message says why."""


def text(value: str) -> str:
    return value


def integer(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise Unconvertible(f"{value!r} is not an integer") from None


def boolean(value: str) -> bool:
    if value.lower() in ("true", "yes"):
        return True
    if value.lower() in ("false", "no"):
        return False
    raise Unconvertible(f"{value!r} is not true or false")


def choice(table: dict[str, str]) -> Converter:
    def convert(value: str) -> str:
        if value in table:
            return table[value]
        supported = ", ".join(key for key in table if key)
        raise Unconvertible(f"value {value!r} is not supported (supported: {supported})")

    return convert


DOMAINS = choice({d: d for d in ("BLOB", "XMLNSC", "XMLNS", "XML", "JSON", "MRM")} | {"": "BLOB"})
TRANSACTION = choice({"automatic": "automatic", "yes": "yes", "no": "no"})
PERSISTENCE = choice({"automatic": "asMessage", "yes": "persistent", "no": "nonPersistent"})


@dataclass(frozen=True)
class Mapping:
    type: str
    properties: dict[str, tuple[str, Converter]] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    esql: str = ""  # the attribute holding the esql://routine/… reference
    #: ACE attributes with no flowbroker counterpart but no effect worth a warning at their value
    harmless: dict[str, str] = field(default_factory=dict)


_CLIENT = "this node reaches only its broker's queue manager (no client connection or remote queue manager)"

MAPPINGS: dict[str, Mapping] = {
    "ComIbmMQInput.msgnode": Mapping(
        "MQInput",
        {
            "queueName": ("queueName", text),
            "transactionMode": ("transactionMode", TRANSACTION),
            "messageDomainProperty": ("messageDomain", DOMAINS),
            "messageSetProperty": ("messageSet", text),
            "messageTypeProperty": ("messageType", text),
            "messageFormatProperty": ("messageFormat", text),
            "orderMode": ("orderMode", choice({"default": "default", "byQueueOrder": "byQueueOrder"})),
        },
        defaults={"transactionMode": "yes", "messageDomain": "BLOB", "orderMode": "default"},
        harmless={
            "componentLevel": "flow",
            "browse": "false",
            "validateMaster": "none",
            "validateTiming": "deferred",
        },
    ),
    "ComIbmMQOutput.msgnode": Mapping(
        "MQOutput",
        {
            "queueName": ("queueName", text),
            "destinationMode": (
                "destinationMode",
                choice({"queueName": "queueName", "list": "destinationList", "reply": "replyToQueue"}),
            ),
            "transactionMode": ("transactionMode", TRANSACTION),
            "persistenceMode": ("persistenceMode", PERSISTENCE),
            "newMsgId": ("newMsgId", boolean),
            "newCorrelID": ("newCorrelId", boolean),
        },
        defaults={
            "destinationMode": "queueName",
            "transactionMode": "automatic",
            "persistenceMode": "asMessage",
            "newMsgId": False,
            "newCorrelId": False,
        },
        harmless={
            "queueManagerName": "",
            "destinationQueueManagerName": "",
            "validateMaster": "none",
            "messageContext": "default",
            "request": "false",
            "replyToQ": "",
            "replyToQMgr": "",
        },
    ),
    "ComIbmMQReply.msgnode": Mapping(
        "MQReply",
        {
            "transactionMode": ("transactionMode", TRANSACTION),
            "persistenceMode": ("persistenceMode", PERSISTENCE),
        },
        defaults={"transactionMode": "automatic", "persistenceMode": "asMessage"},
        harmless={"validateMaster": "none", "destinationQueueManagerName": ""},
    ),
    "ComIbmCompute.msgnode": Mapping(
        "Compute",
        {
            "computeMode": (
                "computeMode",
                choice(
                    {
                        "message": "Message",
                        "destination": "LocalEnvironment",
                        "destinationAndMessage": "LocalEnvironmentAndMessage",
                        "exception": "Exception",
                        "exceptionAndMessage": "ExceptionAndMessage",
                        "exceptionAndDestination": "ExceptionAndLocalEnvironment",
                        "all": "All",
                    }
                ),
            ),
            "dataSource": ("dataSource", text),
            "throwExceptionOnDatabaseError": ("throwExceptionOnDatabaseError", boolean),
        },
        defaults={"computeMode": "Message", "throwExceptionOnDatabaseError": True},
        esql="computeExpression",
        harmless={
            "transaction": "automatic",
            "connectDatasourceBeforeFlowStarts": "false",
            "treatWarningsAsErrors": "false",
            "validateMaster": "none",
        },
    ),
    "ComIbmFilter.msgnode": Mapping(
        "Filter",
        {"dataSource": ("dataSource", text)},
        esql="filterExpression",
        harmless={
            "transaction": "automatic",
            "throwExceptionOnDatabaseError": "true",
            "treatWarningsAsErrors": "false",
            "connectDatasourceBeforeFlowStarts": "false",
        },
    ),
    "ComIbmDatabase.msgnode": Mapping(
        "Database",
        {
            "dataSource": ("dataSource", text),
            "transaction": ("transaction", choice({"automatic": "automatic", "commit": "commit"})),
        },
        defaults={"transaction": "automatic"},
        esql="statement",
        harmless={
            "throwExceptionOnDatabaseError": "true",
            "treatWarningsAsErrors": "false",
            "connectDatasourceBeforeFlowStarts": "false",
        },
    ),
    "ComIbmPublication.msgnode": Mapping("Publication", harmless={"implicitStreamNaming": "false"}),
    "ComIbmTrace.msgnode": Mapping(
        "Trace",
        {
            "destination": (
                "destination",
                choice({"none": "none", "userTrace": "userTrace", "file": "file", "localError": "log"}),
            ),
            "filePath": ("filePath", text),
            "pattern": ("pattern", text),
        },
        defaults={"destination": "userTrace", "pattern": ""},
    ),
    "ComIbmTryCatch.msgnode": Mapping("TryCatch"),
    "ComIbmThrow.msgnode": Mapping(
        "Throw",
        {"messageNumber": ("messageNumber", integer), "messageText": ("messageText", text)},
        defaults={"messageNumber": 3001},
        harmless={"messageCatalog": ""},
    ),
    "ComIbmLabel.msgnode": Mapping("Label", {"labelName": ("labelName", text)}),
    "ComIbmRouteToLabel.msgnode": Mapping(
        "RouteToLabel",
        {"mode": ("mode", choice({"routeToFirst": "routeToFirst", "routeToLast": "routeToLast"}))},
        defaults={"mode": "routeToFirst"},
    ),
    "ComIbmFlowOrder.msgnode": Mapping("FlowOrder"),
    "ComIbmPassthru.msgnode": Mapping("Passthrough"),
    "ComIbmResetContentDescriptor.msgnode": Mapping(
        "ResetContentDescriptor",
        {
            "messageDomain": ("messageDomain", DOMAINS),
            "resetMessageDomain": ("resetMessageDomain", boolean),
            "messageSet": ("messageSet", text),
            "resetMessageSet": ("resetMessageSet", boolean),
            "messageType": ("messageType", text),
            "resetMessageType": ("resetMessageType", boolean),
            "messageFormat": ("messageFormat", text),
            "resetMessageFormat": ("resetMessageFormat", boolean),
        },
        defaults={
            "resetMessageDomain": False,
            "resetMessageSet": False,
            "resetMessageType": False,
            "resetMessageFormat": False,
        },
        harmless={"validateMaster": "none", "validateTiming": "deferred"},
    ),
}

#: Attributes of every node that describe the drawing or the Toolkit, not the node's behaviour.
DRAWING = frozenset({"location", "rotation"})

#: Why a whole node attribute group is dropped, by attribute name (any node type).
DROP_REASONS = {
    "queueManagerName": _CLIENT,
    "destinationQueueManagerName": _CLIENT,
    "connection": _CLIENT,
    "queueManagerHostname": _CLIENT,
    "listenerPortNumber": _CLIENT,
    "channelName": _CLIENT,
    "useSSL": _CLIENT,
    "validateMaster": "message validation against a model is not supported",
    "validateTiming": "message validation against a model is not supported",
    "browse": "MQInput cannot browse: it always gets messages destructively",
    "transaction": "the node's ESQL runs in the flow's unit of work; commit-per-node is only on Database",
}

#: Terminals whose ACE and flowbroker names differ.
TERMINALS: dict[str, str] = {}


def terminal(name: str) -> str:
    """``OutTerminal.out`` → ``out``; ``InTerminal.Input_1`` → ``Input_1``."""
    for prefix in ("OutTerminal.", "InTerminal."):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return TERMINALS.get(name, name)


def short_type(namespace: str) -> str:
    """``ComIbmHTTPInput.msgnode`` → ``HTTPInput`` (the name ACE's palette shows)."""
    folder, _, base = namespace.removesuffix(".msgnode").rpartition("/")
    base = base.removeprefix("ComIbm")
    return f"{folder}/{base}" if folder else base
