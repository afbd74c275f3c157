"""Reading a .msgflow / .subflow document (EMF XMI) into plain node and connection records.

The parser is the hardened one of the XML domains' kind: no entity resolution, no DTD, no
network; a document that declares entities is refused before parsing (XXE, billion laughs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lxml import etree

XMI_NS = "http://www.omg.org/XMI"
XMI_TYPE = f"{{{XMI_NS}}}type"
XMI_ID = f"{{{XMI_NS}}}id"
#: The largest flow document read (a Toolkit flow of a thousand nodes is far below this).
MAX_BYTES = 16 * 1024 * 1024


class XmiError(Exception):
    """A flow document that cannot be read: file, line and column say where."""

    def __init__(self, path: str, message: str, line: int = 0, column: int = 0) -> None:
        where = f"{path}:{line}:{column}" if line else path
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line
        self.column = column
        self.reason = message


@dataclass
class XmiNode:
    """One ``<nodes>`` element: its type namespace (``ComIbmCompute.msgnode`` or a subflow's URI)."""

    id: str
    namespace: str  # the URI the xmi:type prefix stands for, or "eflow" for FCMSource/FCMSink
    kind: str  # FCMComposite_1, FCMSource, FCMSink
    name: str
    attributes: dict[str, str]
    location: tuple[int, int] | None
    line: int
    #: child elements that are rows of a table property (a Route's ``filterTable``), by element name
    rows: dict[str, list[dict[str, str]]] = field(default_factory=dict)


@dataclass
class XmiConnection:
    source: str
    source_terminal: str
    target: str
    target_terminal: str
    line: int


@dataclass
class PromotedLink:
    """A flow property promoted from a node property: setting ``feature`` sets ``attribute`` of ``nodes``."""

    feature: str
    nodes: list[str]
    attribute: str
    target: str  # what the href names: a node type (ComIbmMQOutput.msgnode) or a subflow file


@dataclass
class XmiFlow:
    """A parsed flow document: its nodes, connections and the flow-level properties.

    ``features`` are the flow's own properties with their default values: user-defined
    properties (``user_defined``), which ESQL reads as EXTERNAL variables, and properties
    promoted from nodes (``links``).
    """

    path: str
    ns_uri: str
    nodes: list[XmiNode] = field(default_factory=list)
    connections: list[XmiConnection] = field(default_factory=list)
    features: dict[str, str | None] = field(default_factory=dict)
    user_defined: set[str] = field(default_factory=set)
    links: list[PromotedLink] = field(default_factory=list)
    description: str = ""


class _NothingExternal(etree.Resolver):
    """Answers every request for an external resource (a DOCTYPE's SYSTEM DTD) with nothing.

    Without it libxml2 opens a DTD named by a local path even with ``load_dtd`` off.
    """

    def resolve(self, system_url: str, public_id: str, context: object) -> object:
        return self.resolve_string("", context)


def _parser() -> etree.XMLParser:
    parser = etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_blank_text=True,
        collect_ids=False,
    )
    parser.resolvers.add(_NothingExternal())
    return parser


def _location(value: str | None) -> tuple[int, int] | None:
    if not value:
        return None
    x, _, y = value.partition(",")
    try:
        return int(float(x)), int(float(y))
    except ValueError:
        return None


def _translation(element: etree._Element) -> str:
    for child in element:
        if child.tag == "translation":
            text = child.get("string")
            if text is None:  # a TranslatableString: the key names the node
                text = child.get("key", "")
            return str(text)
    return ""


def read_xml(data: bytes, path: str) -> etree._Element:
    """The root element of the XML document ``data`` (a flow, a message model), read hardened."""
    if len(data) > MAX_BYTES:
        raise XmiError(path, f"the document is {len(data)} bytes; at most {MAX_BYTES} are read")
    if b"<!ENTITY" in data:
        line = data[: data.find(b"<!ENTITY")].count(b"\n") + 1
        raise XmiError(path, "DTD entity declarations are not allowed", line, 1)
    try:
        return etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (exc.lineno or 0, 0)
        raise XmiError(path, f"malformed XML: {exc.msg or exc}", line, column) from None


def parse(data: bytes, path: str) -> XmiFlow:
    """The flow document ``data`` read from ``path``; :class:`XmiError` names the line when it is not one."""
    root = read_xml(data, path)
    if etree.QName(root).localname != "EPackage":
        raise XmiError(path, f"not a message flow: the root element is <{root.tag}>", root.sourceline or 1, 1)
    flow = XmiFlow(path=path, ns_uri=root.get("nsURI", ""))
    composite = None
    for child in root:
        if child.tag == "eClassifiers" and (child.get(XMI_TYPE) or "").endswith("FCMComposite"):
            composite = child
            break
    if composite is None:
        raise XmiError(path, "no eClassifiers of type eflow:FCMComposite", root.sourceline or 1, 1)
    for child in composite:
        if child.tag == "eStructuralFeatures" and child.get("name"):
            default = child.get("defaultValueLiteral")
            flow.features[str(child.get("name"))] = None if default is None else str(default)
        elif child.tag == "shortDescription":
            flow.description = str(child.get("string") or "")
        elif child.tag == "attributeLinks":
            href = ""
            for target in child:
                if target.tag == "overriddenAttribute":
                    href = str(target.get("href") or "")
            where, _, attribute = href.partition("#")
            flow.links.append(
                PromotedLink(
                    feature=str(child.get("promotedAttribute") or "").removeprefix("Property."),
                    nodes=str(child.get("overriddenNodes") or "").split(),
                    attribute=attribute.removeprefix("Property."),
                    target=where,
                )
            )
    for descriptor in composite.iter("propertyDescriptor"):
        if descriptor.get("userDefined") == "true":
            flow.user_defined.add(str(descriptor.get("describedAttribute") or "").removeprefix("Property."))
    for composition in composite.iter("composition"):
        for element in composition:
            if element.tag == "nodes":
                flow.nodes.append(_node(element, path))
            elif element.tag == "connections":
                flow.connections.append(_connection(element, path))
    for node in flow.nodes:
        # libxml2 gives the line a start tag ends on; the report names the line its xmi:id is on
        at = data.find(f'xmi:id="{node.id}"'.encode())
        if at >= 0:
            node.line = data.count(b"\n", 0, at) + 1
    return flow


def _node(element: etree._Element, path: str) -> XmiNode:
    line = element.sourceline or 0
    node_id = element.get(XMI_ID)
    xmi_type = element.get(XMI_TYPE)
    if not node_id or not xmi_type:
        raise XmiError(path, "a <nodes> element needs xmi:id and xmi:type", line, 1)
    prefix, _, kind = xmi_type.rpartition(":")
    if prefix == "eflow":
        namespace = "eflow"
    else:
        namespace = element.nsmap.get(prefix) or prefix
    attributes = {
        str(key): str(value)
        for key, value in element.attrib.items()
        if not str(key).startswith("{") and key not in ("location", "rotation")
    }
    rows: dict[str, list[dict[str, str]]] = {}
    for child in element:
        if isinstance(child.tag, str) and child.tag not in _NOT_ROWS and not len(child):
            rows.setdefault(child.tag, []).append({str(k): str(v) for k, v in child.attrib.items()})
    return XmiNode(
        id=str(node_id),
        namespace=str(namespace),
        kind=kind,
        name=_translation(element),
        attributes=attributes,
        location=_location(element.get("location")),
        line=line,
        rows=rows,
    )


#: Child elements of a node that describe its drawing or the Toolkit, not a table property.
_NOT_ROWS = {"translation", "outTerminals", "monitorEvents", "shortDescription", "longDescription"}


def _connection(element: etree._Element, path: str) -> XmiConnection:
    line = element.sourceline or 0
    values = [
        element.get(k) for k in ("sourceNode", "sourceTerminalName", "targetNode", "targetTerminalName")
    ]
    if not all(values):
        raise XmiError(
            path,
            "a <connections> element needs sourceNode, sourceTerminalName, targetNode, targetTerminalName",
            line,
            1,
        )
    source, source_terminal, target, target_terminal = (str(v) for v in values)
    return XmiConnection(source, source_terminal, target, target_terminal, line)
