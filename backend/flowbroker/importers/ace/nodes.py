"""The mapping table: each ACE node type, the flowbroker node type it becomes, and its properties.

A property maps by name and converter; a value the converter does not accept is dropped and
reported. ``defaults`` are ACE's documented defaults, written into the node when the XMI omits
the attribute (the Toolkit leaves out every property at its default), so the imported node
behaves as the ACE one did even where flowbroker's own default differs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Converter = Callable[[str], Any]
#: Converts one row of a table property (a child element's attributes) to the flowbroker row.
RowConverter = Callable[[dict[str, str]], dict[str, Any]]


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


def seconds_to_ms(value: str) -> int:
    return integer(value) * 1000


def tree_location(value: str) -> str:
    """ACE's ``$OutputRoot/XMLNSC/reply`` location → ``OutputRoot.XMLNSC.reply``."""
    path = value.strip().removeprefix("$")
    steps = path.replace(".", "/").split("/")
    if not path or not all(re.match(r"^[A-Za-z_][A-Za-z0-9_-]*$", s) for s in steps):
        raise Unconvertible(f"location {value!r} is not a plain path of element names")
    return ".".join(steps)


def route_row(row: dict[str, str]) -> dict[str, Any]:
    """A Route filter table row: its XPath expression rewritten in ESQL, checked by compiling it."""
    from flowbroker_nodes import route

    from flowbroker.importers.ace import xpath

    pattern = row.get("filterPattern", "")
    terminal = row.get("routingOutputTerminal", "")
    expression = xpath.to_esql(pattern)
    node = route.Node(
        "row", "row", {"filterTable": [{"filterPattern": expression, "routingOutputTerminal": terminal}]}
    )
    try:
        node.prepare()
    except Exception as exc:
        raise Unconvertible(f"rewritten as {expression!r}, which does not compile: {exc}") from None
    return {"filterPattern": expression, "routingOutputTerminal": terminal}


def trace_pattern(value: str) -> str:
    """A Trace pattern with ACE's ``${Body}`` (the last child of Root) spelt as our Trace reads it."""
    return re.sub(r"\$\{\s*Body(?=\s*[.}])", "${Root.*[<]", value)


def http_path(value: str) -> str:
    """ACE's "Path suffix for URL" (``/orders/*``) as HTTPInput's path, checked as HTTPInput checks it."""
    from flowbroker_nodes.http_input import _path_problem

    path = value.strip()
    path = path if path.startswith("/") else "/" + path
    if path.endswith("*") and not path.endswith("/*"):
        # ACE's "/api/v1*" (a REST API's generated input): everything at and below /api/v1
        path = path[:-1].rstrip("/") + "/*"
    problem = _path_problem(path)
    if problem:
        raise Unconvertible(problem)
    return path


def http_url(value: str) -> str:
    """A "Web service URL", checked as HTTPRequest checks it."""
    from flowbroker_nodes.http_request import _url_problem

    problem = _url_problem(value.strip())
    if problem:
        raise Unconvertible(problem)
    return value.strip()


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
    #: table properties held as child elements: element name → (flowbroker property, row converter)
    tables: dict[str, tuple[str, RowConverter]] = field(default_factory=dict)
    #: attribute → value → why a node so configured has no flowbroker counterpart at all (it is
    #: imported as an Unsupported node rather than as a node that would behave otherwise)
    unsupported_when: dict[str, dict[str, str]] = field(default_factory=dict)
    #: per-type reasons for dropping an attribute, before the general ones of DROP_REASONS
    reasons: dict[str, str] = field(default_factory=dict)
    #: ACE terminal (``OutTerminal.EOD``) → the flowbroker terminal, where the names differ
    terminals: dict[str, str] = field(default_factory=dict)


_TLS_SERVER = "the execution group's HTTP listener serves plain HTTP only (put a TLS proxy in front of it)"
_PROXY = "HTTPRequest connects to the server directly; set the HTTP_PROXY / HTTPS_PROXY environment of the group instead"
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
            "pattern": ("pattern", trace_pattern),
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
    "ComIbmRoute.msgnode": Mapping(
        "Route",
        {"distributionMode": ("distributionMode", choice({"all": "all", "first": "first"}))},
        defaults={"distributionMode": "all", "filterTable": []},
        tables={"filterTable": ("filterTable", route_row)},
    ),
    "ComIbmMQGet.msgnode": Mapping(
        "MQGet",
        {
            "queueName": ("queueName", text),
            "waitInterval": ("waitInterval", integer),
            "getWithCorrelID": ("getByCorrelId", boolean),
            "getWithMessageID": ("getByMessageId", boolean),
            "transactionMode": ("transactionMode", TRANSACTION),
            "outputDataLocation": ("outputDataLocation", tree_location),
            "messageDomainProperty": ("messageDomain", DOMAINS),
            "messageSetProperty": ("messageSet", text),
            "messageTypeProperty": ("messageType", text),
            "messageFormatProperty": ("messageFormat", text),
        },
        defaults={
            "waitInterval": 1000,
            "getByCorrelId": False,
            "getByMessageId": False,
            "transactionMode": "automatic",
            "outputDataLocation": "OutputRoot",
            "messageDomain": "BLOB",
        },
        harmless={
            "browse": "false",
            "inputMQMDLocation": "$InputRoot/MQMD",
            "inputMQParmsLocation": "$InputLocalEnvironment/MQ/GET",
            "resultDataLocation": "$ResultRoot",
            "copyMessage": "none",
            "copyLocalEnvironment": "copyEntireLocalEnvironment",
            "generateMode": "message",
            "validateMaster": "none",
            "validateTiming": "deferred",
            "queueManagerName": "",
        },
        reasons={
            "browse": "MQGet cannot browse: it always gets the message destructively",
            "inputMQMDLocation": "the MQMD whose ids are matched is LocalEnvironment.MQ.GET.MQMD, else the "
            "input message's",
            "inputMQParmsLocation": "the get's parameters are read from LocalEnvironment.MQ.GET only",
            "resultDataLocation": "the whole message got is placed at the output data location",
            "copyMessage": "the output message is the message got, or a copy of the input message",
            "copyLocalEnvironment": "the local environment is always copied whole",
            "generateMode": "the output message is built as the output data location says",
        },
    ),
    "ComIbmFileInput.msgnode": Mapping(
        "FileInput",
        {
            "inputDirectory": ("directory", text),
            "filenamePattern": ("filePattern", text),
            "processedFileAction": (
                "actionOnSuccess",
                choice(
                    {
                        "delete": "delete",
                        "moveToArchive": "archive",
                        "addTimeStampAndMoveToArchive": "archiveWithTimestamp",
                    }
                ),
            ),
            "recordDetection": (
                "recordDetection",
                choice({"wholeFile": "wholeFile", "delimited": "delimited", "fixedLength": "fixedLength"}),
            ),
            "recordLength": ("recordLength", integer),
            "pollingInterval": ("pollingInterval", seconds_to_ms),
            "messageDomainProperty": ("messageDomain", DOMAINS),
            "messageSetProperty": ("messageSet", text),
            "messageTypeProperty": ("messageType", text),
            "messageFormatProperty": ("messageFormat", text),
        },
        defaults={
            "filePattern": "*",
            "actionOnSuccess": "delete",
            "recordDetection": "wholeFile",
            "pollingInterval": 5000,
            "messageDomain": "BLOB",
        },
        harmless={
            "replaceDuplicateArchives": "true",
            "fileExclusionPattern": "",
            "includeSubdirectories": "false",
            "componentLevel": "flow",
            "additionalInstances": "0",
            "validateMaster": "none",
            "validateTiming": "deferred",
            "delimiterType": "lineEnd",
        },
        reasons={
            "replaceDuplicateArchives": "a file archived again always replaces the one of its name",
            "fileExclusionPattern": "files are selected by the name pattern alone",
            "includeSubdirectories": "only the directory itself is polled",
            "remoteTransferType": "no remote (FTP/SFTP) transfer: the directory is read locally",
            "fileFtpServer": "no remote (FTP/SFTP) transfer: the directory is read locally",
            "fileFtpUser": "no remote (FTP/SFTP) transfer: the directory is read locally",
        },
        terminals={"OutTerminal.EOD": "endOfData"},
    ),
    "ComIbmFileOutput.msgnode": Mapping(
        "FileOutput",
        {
            "outputDirectory": ("directory", text),
            "outputFilename": ("fileName", text),
            "outputMode": (
                "outputFileAction",
                choice(
                    {
                        "replace": "replace",
                        "archiveAndReplace": "archive",
                        "archiveAndReplaceWithTimestamp": "archive",
                        "failIfExists": "fail",
                    }
                ),
            ),
            "recordDefinition": (
                "recordDefinition",
                choice({"wholeFile": "wholeFile", "asIs": "unmodifiedData"}),
            ),
        },
        defaults={"outputFileAction": "replace", "recordDefinition": "wholeFile"},
        harmless={
            "requestDirectoryLocation": "$LocalEnvironment/Destination/File/Directory",
            "requestNameLocation": "$LocalEnvironment/Destination/File/Name",
            "replaceDuplicateArchives": "true",
            "writeMode": "stageInTransit",
            "validateMaster": "none",
            "validateTiming": "deferred",
        },
        reasons={
            "requestDirectoryLocation": "the directory is overridden from LocalEnvironment.Destination.File."
            "Directory only",
            "requestNameLocation": "the file name is overridden from LocalEnvironment.Destination.File.Name only",
            "replaceDuplicateArchives": "an archived file is given a time stamp, never replaced",
            "writeMode": "a whole file is always staged in mqsitransit, then moved into place",
            "remoteTransferType": "no remote (FTP/SFTP) transfer: the file is written locally",
            "fileFtpServer": "no remote (FTP/SFTP) transfer: the file is written locally",
            "fileFtpUser": "no remote (FTP/SFTP) transfer: the file is written locally",
            "fileFtpDirectory": "no remote (FTP/SFTP) transfer: the file is written locally",
        },
        terminals={"InTerminal.EOD": "finish", "OutTerminal.EOD": "endOfData"},
    ),
    "ComIbmTimeoutNotification.msgnode": Mapping(
        "TimeoutNotification",
        {
            "uniqueIdentifier": ("uniqueIdentifier", text),
            "operationMode": (
                "operationMode",
                choice({"automatic": "automatic", "controlled": "controlled"}),
            ),
            "timeoutInterval": ("timeoutInterval", integer),
        },
        defaults={"operationMode": "automatic", "timeoutInterval": 1},
        harmless={"transactionMode": "yes", "additionalInstances": "0"},
        reasons={"transactionMode": "each timeout's message always runs in its own unit of work"},
    ),
    "ComIbmTimeoutControl.msgnode": Mapping(
        "TimeoutControl",
        {
            "uniqueIdentifier": ("uniqueIdentifier", text),
            "requestLocation": ("requestLocation", tree_location),
        },
        defaults={"requestLocation": "InputLocalEnvironment.TimeoutRequest"},
    ),
    "ComIbmAggregateControl.msgnode": Mapping(
        "AggregateControl",
        {"aggregateName": ("aggregateName", text), "timeoutInterval": ("timeout", integer)},
        defaults={"timeout": 0},
        harmless={"timeoutLocation": "$LocalEnvironment/Aggregation/Timeout"},
        reasons={
            "timeoutLocation": "the timeout is overridden from LocalEnvironment.Aggregation.Timeout only"
        },
    ),
    "ComIbmAggregateRequest.msgnode": Mapping("AggregateRequest", {"folderName": ("folderName", text)}),
    "ComIbmXslMqsi.msgnode": Mapping(
        "XSLTransform",
        {
            # the stylesheet file is looked for below the file roots (FLOWBROKER_FILE_ROOTS)
            "stylesheetName": ("stylesheetName", text),
            "messageDomainProperty": (
                "outputDomain",
                choice({d: d for d in ("XMLNSC", "XMLNS", "XML", "JSON", "BLOB")}),
            ),
        },
    ),
    "ComIbmAggregateReply.msgnode": Mapping(
        "AggregateReply",
        {
            "aggregateName": ("aggregateName", text),
            "unknownMessageTimeout": ("unknownMessageTimeout", integer),
        },
        defaults={"unknownMessageTimeout": 0},
        harmless={"transactionMode": "yes"},
        reasons={"transactionMode": "the aggregation's state changes are always made under syncpoint"},
    ),
    "ComIbmWSInput.msgnode": Mapping(
        "HTTPInput",
        {
            "URLSpecifier": ("path", http_path),
            "messageDomainProperty": ("messageDomain", DOMAINS),
            "messageSetProperty": ("messageSet", text),
            "messageTypeProperty": ("messageType", text),
            "messageFormatProperty": ("messageFormat", text),
            "timeoutForClient": ("maxClientWaitTime", integer),
        },
        defaults={"method": "ANY", "messageDomain": "BLOB", "maxClientWaitTime": 180},
        harmless={
            "useHTTPS": "false",
            # the query string is always parsed into LocalEnvironment.HTTP.Input.QueryString
            "parseQueryString": "true",
            "setDestinationList": "false",
            "decompressInputMessage": "false",
            "componentLevel": "flow",
            "additionalInstances": "0",
            "validateMaster": "none",
            "validateTiming": "deferred",
        },
        reasons={
            "useHTTPS": _TLS_SERVER,
            "faultFormat": "a failure no path handles is answered with a one-line text/plain reason (400 "
            "when the body could not be parsed, else 500), not a SOAP, HTML or JSON fault",
            "setDestinationList": "the node adds no label of the request's path to the destination list",
            "labelPrefix": "the node adds no label of the request's path to the destination list",
            "decompressInputMessage": "request bodies are read as sent; a compressed body is not inflated",
            "identityType": "identities are not taken from HTTP requests (no security profile)",
            "identityToken": "identities are not taken from HTTP requests (no security profile)",
            "securityProfileName": "identities are not taken from HTTP requests (no security profile)",
        },
    ),
    "ComIbmWSReply.msgnode": Mapping(
        "HTTPReply",
        {
            "ignoreTransportFailures": ("ignoreTransportFailures", boolean),
            "generateDefaultHttpHeaders": ("generateDefaultHttpHeaders", boolean),
        },
        defaults={"ignoreTransportFailures": True, "generateDefaultHttpHeaders": True},
        harmless={"validateMaster": "none"},
    ),
    "ComIbmWSRequest.msgnode": Mapping(
        "HTTPRequest",
        {
            "URLSpecifier": ("webServiceURL", http_url),
            "httpMethod": (
                "httpMethod",
                choice({m: m for m in ("POST", "GET", "PUT", "DELETE", "PATCH", "HEAD")}),
            ),
            "messageDomainProperty": ("messageDomain", DOMAINS),
            "messageSetProperty": ("messageSet", text),
            "messageTypeProperty": ("messageType", text),
            "messageFormatProperty": ("messageFormat", text),
            "timeoutForServer": ("requestTimeout", integer),
            "followRedirection": ("followRedirects", boolean),
            "generateDefaultHttpHeaders": ("generateDefaultHttpHeaders", boolean),
        },
        defaults={
            "httpMethod": "POST",
            "messageDomain": "BLOB",
            "requestTimeout": 120,
            "followRedirects": False,
            "generateDefaultHttpHeaders": True,
        },
        harmless={
            "httpVersion": "1.1",
            "protocol": "TLS",
            "replaceInputMessageWithWebServiceResponse": "true",
            "replaceInputMessageWithError": "true",
            "acceptCompressedResponses": "true",
            "validateMaster": "none",
            "validateTiming": "deferred",
        },
        reasons={
            "httpProxyLocation": _PROXY,
            "protocol": "the TLS version is negotiated by the client library (TLS 1.2 or later)",
            "httpVersion": "requests are sent as HTTP/1.1",
            "sslProtocol": "the TLS version is negotiated by the client library (TLS 1.2 or later)",
            "keyAlias": "no client certificate is sent",
            "requestMsgLocationInTree": "the whole message body is sent",
            "responseMsgLocationInTree": "the response replaces the message",
            "errorMsgLocationInTree": "the error response replaces the message",
            "replaceInputMessageWithWebServiceResponse": "the response always replaces the message",
            "replaceInputMessageWithError": "the error response always replaces the message",
            "acceptCompressedResponses": "the client always offers gzip and inflates a compressed response",
            "securityProfileName": "no identity is propagated to the server (no security profile)",
        },
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
