"""What compiled ESQL calls at run time: the execution context, field-reference navigation, tree statements.

Generated code reaches only the names this module exports into its restricted globals (see
:func:`runtime_globals`); everything an ESQL program can do to a message tree goes through the
helpers here, so their semantics (SET to NULL deletes, a path SET creates what is missing,
``[<]`` counts from the end …) live in one place.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

from esql.tree import NAME, NAME_VALUE, SHAPE, VALUE, ChildCursor, Element, _copy_children, renamed

#: Field-type constants usable in type qualifiers ``(XMLNSC.Attribute)`` and ``TYPE`` clauses.
#: Attribute-like types share one value so a qualifier matches every spelling of it.
FOLDER = 0x01000000
FIELD = NAME_VALUE
VALUE_TYPE = 0x02000000
ATTRIBUTE = 0x03000100
NAMESPACE_DECL = 0x03000102
XML_DECLARATION = 0x01000400
COMMENT = 0x02000400
PROCESSING_INSTRUCTION = 0x03000401
CDATA_FIELD = 0x03000001
JSON_ARRAY = 0x01001000

FIELD_TYPES: dict[str, int] = {}
for _name, _value in {
    "Folder": FOLDER,
    "Element": FOLDER,
    "Field": FIELD,
    "PCDataField": FIELD,
    "HybridField": FIELD,
    "Value": VALUE_TYPE,
    "PCDataValue": VALUE_TYPE,
    "CDataValue": 0x02000001,
    "CDataField": CDATA_FIELD,
    "Attribute": ATTRIBUTE,
    "SingleAttribute": ATTRIBUTE,
    "DoubleAttribute": ATTRIBUTE,
    "NamespaceDecl": NAMESPACE_DECL,
    "SingleNamespaceDecl": NAMESPACE_DECL,
    "DoubleNamespaceDecl": NAMESPACE_DECL,
    "XmlDeclaration": XML_DECLARATION,
    "Comment": COMMENT,
    "ProcessingInstruction": PROCESSING_INSTRUCTION,
    "DocumentType": 0x01000300,
    "EntityDefinition": 0x01000301,
    "SingleEntityDefinition": 0x01000301,
    "EntityReference": 0x01000302,
    "Bitstream": 0x02000402,
    "BitStream": 0x02000402,
}.items():
    FIELD_TYPES[f"XMLNSC.{_name}"] = _value
    FIELD_TYPES[f"XMLNS.{_name}"] = _value
    FIELD_TYPES[f"XML.{_name}"] = _value
    FIELD_TYPES[f"SOAP.{_name}"] = _value
FIELD_TYPES.update(
    {
        "XML.attr": ATTRIBUTE,
        "XML.tag": FOLDER,
        "XML.content": VALUE_TYPE,
        "XML.ParserRoot": FOLDER,
        "XML.XmlDecl": XML_DECLARATION,
        "XML.pcdata": VALUE_TYPE,
        "JSON.Array": JSON_ARRAY,
        "JSON.Object": FOLDER,
        "JSON.Value": FIELD,
        "MQRFH2.Field": FIELD,
        "MQRFH2.Folder": FOLDER,
        "MRM.Field": FIELD,
        "DFDL.Field": FIELD,
        "Name": 0x01000000,
        "NameValue": NAME_VALUE,
    }
)
try:
    from esql.fieldtypes import FIELD_TYPES as _DOMAIN_FIELD_TYPES
except ImportError:  # the shared table is optional; the names above cover what ESQL code uses
    _DOMAIN_FIELD_TYPES = {}
FIELD_TYPES.update(_DOMAIN_FIELD_TYPES)
ATTRIBUTE_TYPES = frozenset({ATTRIBUTE, 0x03000101, NAMESPACE_DECL, 0x03000103})

#: Integer terminal numbers of PROPAGATE TO TERMINAL n.
TERMINAL_NUMBERS = {-2: "nowhere", -1: "failure", 0: "out", 1: "out1", 2: "out2", 3: "out3", 4: "out4"}


class EsqlRuntimeError(Exception):
    """A run-time failure of an ESQL program, with the source position of the failing statement."""

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.sqlstate = "U11"

    def __str__(self) -> str:
        if self.line is not None:
            return f"line {self.line}, column {self.column}: {self.message}"
        return self.message


class UserException(EsqlRuntimeError):
    """THROW USER EXCEPTION: severity, catalog, message number and inserts, as an exception list."""

    def __init__(
        self,
        message: str,
        *,
        severity: Any = 3,
        catalog: Any = "BIPmsgs",
        number: Any = 2951,
        values: list[Any] | None = None,
        user: bool = True,
    ) -> None:
        super().__init__(message)
        self.severity = severity
        self.catalog = catalog
        self.number = number
        self.values = values or []
        self.user = user
        # IBM: the SQL state of a thrown exception is its second insert, as is.
        second = self.values[1] if len(self.values) > 1 else None
        self.sqlstate = "" if second is None else str(second)

    @property
    def inserts(self) -> list[Any]:
        """The VALUES of the THROW, in order (the ExceptionList's Insert fields)."""
        return self.values

    def exception_list(self) -> Element:
        """The ExceptionList tree IBM's brokers build for a user exception."""
        root = Element("ExceptionList")
        user = root.add("UserException")
        user.add("Catalog", self.catalog)
        user.add("Severity", self.severity)
        user.add("Number", self.number)
        user.add("Text", self.message)
        for value in self.values:
            user.add("Insert").add("Text", value)
        return root


class StopRequested(EsqlRuntimeError):
    """The runtime asked the program to stop (flow stopping, runaway loop)."""


class BudgetExceeded(StopRequested):
    """A node invocation's ESQL went past its CPU time or memory budget; no handler can catch it."""


class Budget:
    """What one node invocation's ESQL may spend: CPU time of its thread and the size of one value.

    Loop back-edges call :meth:`tick` (a countdown: the clock is read every :attr:`CHECK_EVERY`
    ticks, the stop request at every one), routine entries :meth:`call` (the same countdown, so
    recursion is bounded too, without the stop request: a node still runs while its flow stops); code that
    builds a character string or BLOB larger than :data:`esql.values.SIZE_CHECKED_FROM` asks
    :meth:`check_size` first. Zero means no limit.

    A routine's CPU budget counts from the first clock check, CHECK_EVERY statements or calls in,
    not from its start: reading the thread's CPU clock is a system call on some hosts, and most
    routines end before that check.
    """

    __slots__ = ("_deadline", "_left", "cpu_limit_ms", "memory_limit_bytes", "node_name", "stop")

    CHECK_EVERY = 64

    def __init__(
        self, stop: Any, cpu_limit_ms: int = 0, memory_limit_bytes: int = 0, node_name: str = ""
    ) -> None:
        self.stop = stop
        self.cpu_limit_ms = cpu_limit_ms
        self.memory_limit_bytes = memory_limit_bytes
        self.node_name = node_name
        self._left = self.CHECK_EVERY
        self._deadline: float | None = None

    def restart(self) -> None:
        """A reused context's next run: the countdown and the CPU deadline start afresh."""
        self._left = self.CHECK_EVERY
        self._deadline = None

    def tick(self) -> None:
        self._left -= 1
        if self._left <= 0 or self.stop.is_set():
            self._check()

    def call(self) -> None:
        self._left -= 1
        if self._left <= 0:
            self._check_cpu()

    def _check(self) -> None:
        check_stop(self.stop)
        self._check_cpu()

    def _check_cpu(self) -> None:
        self._left = self.CHECK_EVERY
        if self._deadline is None:
            if self.cpu_limit_ms:
                self._deadline = time.thread_time() + self.cpu_limit_ms / 1000
            return
        if time.thread_time() > self._deadline:
            raise BudgetExceeded(f"{self._who()} exceeded its CPU budget of {self.cpu_limit_ms} ms")

    def exclude(self, seconds: float) -> None:
        """Leave ``seconds`` of CPU time out of the budget (nodes a PROPAGATE ran have their own)."""
        if self._deadline is not None:
            self._deadline += seconds

    def check_size(self, size: int, what: str) -> None:
        if self.memory_limit_bytes and size > self.memory_limit_bytes:
            raise BudgetExceeded(
                f"{self._who()} exceeded its memory budget of {self.memory_limit_bytes} bytes: "
                f"{what} would build a value of {size} characters or bytes"
            )

    def _who(self) -> str:
        return f"ESQL in node '{self.node_name}'" if self.node_name else "ESQL"


class LeaveSignal(Exception):
    """LEAVE of a label that is not the innermost loop: unwinds to the labelled statement."""

    def __init__(self, label: int) -> None:
        super().__init__(label)
        self.label = label


class IterateSignal(Exception):
    """ITERATE of a label that is not the innermost loop."""

    def __init__(self, label: int) -> None:
        super().__init__(label)
        self.label = label


class Reference:
    """A REFERENCE variable: the element it points at and whether its last MOVE succeeded."""

    __slots__ = ("element", "lastmove")

    def __init__(self, element: Element | None) -> None:
        if element is None:
            raise EsqlRuntimeError("a REFERENCE must point at an existing field")
        self.element = element
        self.lastmove = True

    def __repr__(self) -> str:
        return f"Reference({self.element.path()})"


class _NeverStop:
    __slots__ = ()

    def is_set(self) -> bool:
        return False


_NEVER = _NeverStop()
_NO_BROKER: Mapping[str, object] = {}


class ExecutionContext:
    """The message assembly and services one execution of a routine sees."""

    def __init__(
        self,
        input_root: Element | None = None,
        input_local_environment: Element | None = None,
        input_exception_list: Element | None = None,
        environment: Element | None = None,
        output_root: Element | None = None,
        output_local_environment: Element | None = None,
        output_exception_list: Element | None = None,
        input_destination_list: Element | None = None,
        propagate: Callable[[str, bool, Element, Element, Element], None] | None = None,
        data_source: Any = None,
        externals: dict[str, object] | None = None,
        stop: threading.Event | None = None,
        log: Callable[[str], None] | None = None,
        node_name: str = "",
        cpu_limit_ms: int = 0,
        memory_limit_bytes: int = 0,
        broker: Mapping[str, object] | None = None,
        interrupt: threading.Event | None = None,
    ) -> None:
        self.input_root = input_root if input_root is not None else Element("Root")
        self.input_local_environment = (
            input_local_environment if input_local_environment is not None else Element("LocalEnvironment")
        )
        self.input_exception_list = (
            input_exception_list if input_exception_list is not None else Element("ExceptionList")
        )
        self.environment = environment if environment is not None else Element("Environment")
        self.output_root = output_root if output_root is not None else Element("Root")
        # made on first use when not given: a Compute node building only the message never reads them
        self._output_local_environment = output_local_environment
        self._output_exception_list = output_exception_list
        self.input_destination_list = input_destination_list
        self.propagate = propagate
        self.data_source = data_source
        self.externals = dict(externals or {})
        #: The flow's stop request, which SLEEP wakes on and INSTANCESTOPPING reports.
        self.stop: Any = stop if stop is not None else _NEVER
        #: The invocation's CPU time and memory budget (0: unlimited), checked by the generated code;
        #: its loops end at ``interrupt`` (a stopping flow's grace is over), else at ``stop``.
        self.budget = Budget(
            interrupt if interrupt is not None else self.stop, cpu_limit_ms, memory_limit_bytes, node_name
        )
        self.log = log
        self.node_name = node_name
        #: The broker attributes of the running flow (BrokerName, ExecutionGroupLabel,
        #: MessageFlowLabel, QueueManagerName, WorkPath …); shared, never copied per message.
        self.broker: Mapping[str, object] = broker if broker is not None else _NO_BROKER
        self.sqlcode = 0
        self.sqlstate = "00000"
        self.sqlerrortext = ""
        self.sqlnativeerror = 0
        self.propagated = 0
        #: (terminal, is_label, root, local environment, exception list) of each PROPAGATE when no
        #: ``propagate`` callback is given (``flowbroker esql run`` prints them).
        self.propagations: list[tuple[str, bool, Element, Element, Element]] = []

    def renew(
        self,
        input_root: Element,
        input_local_environment: Element,
        input_exception_list: Element,
        environment: Element,
        output_root: Element,
        propagate: Callable[[str, bool, Element, Element, Element], None] | None,
        data_source: Any,
    ) -> None:
        """Make this context a new invocation's, of the same node on the same flow thread (its
        externals, stop request, log, limits and broker attributes stay): the trees, the PROPAGATE
        callback and the data source are the new ones, the output LocalEnvironment and
        ExceptionList are made again on first use, the SQL state, the PROPAGATE count and the
        budget start afresh. The module's message variables are made by each run."""
        self.input_root = input_root
        self.input_local_environment = input_local_environment
        self.input_exception_list = input_exception_list
        self.environment = environment
        self.output_root = output_root
        self._output_local_environment = None
        self._output_exception_list = None
        self.input_destination_list = None
        self.propagate = propagate
        self.data_source = data_source
        self.sqlcode = 0
        self.sqlstate = "00000"
        self.sqlerrortext = ""
        self.sqlnativeerror = 0
        self.propagated = 0
        if self.propagations:
            self.propagations = []
        self.budget.restart()

    @property
    def output_local_environment(self) -> Element:
        element = self._output_local_environment
        if element is None:
            element = self._output_local_environment = Element("LocalEnvironment")
        return element

    @output_local_environment.setter
    def output_local_environment(self, element: Element) -> None:
        self._output_local_environment = element

    @property
    def output_exception_list(self) -> Element:
        element = self._output_exception_list
        if element is None:
            element = self._output_exception_list = Element("ExceptionList")
        return element

    @output_exception_list.setter
    def output_exception_list(self, element: Element) -> None:
        self._output_exception_list = element

    @property
    def input_body(self) -> Element | None:
        return self.input_root.last_child

    @property
    def input_properties(self) -> Element | None:
        return self.input_root.child("Properties")


# ------------------------------------------------------------------ navigation


def child(e: Element | None, name: str) -> Element | None:
    """The first child named ``name`` in no namespace (the common, fast path step)."""
    if e is None:
        return None
    node = e._first if e._lazy is None else e.first_child
    while node is not None:
        if node.name == name and not node.namespace:
            return node
        node = node.next_sibling
    return None


def _matches(node: Element, name: str | None, ns: str | None, ftype: int | None) -> bool:
    if name is not None and node.name != name:
        return False
    if ns is not None and node.namespace != ns:
        return False
    if ftype is not None and node.type != ftype:
        # A generic qualifier matches its single-quoted variant too (Attribute, NamespaceDecl).
        return _type_matches(node.type, ftype)
    return True


def step(
    e: Element | None, name: str | None, ns: str | None, index: int, ftype: int | None
) -> Element | None:
    """The ``index``-th child matching name/namespace/type (negative counts from the end)."""
    if e is None:
        return None
    if index.__class__ is not int:
        index = _index(index)
    if index > 0 and ns == "" and ftype is None and name is not None:
        # The common case (a plain name with an index) without the general matcher, from where
        # the element's cursor left off when it is still valid and not past the index.
        if e._lazy is not None:
            e._materialize()
        cursor = getattr(e, "_cursor", None)
        if (
            cursor is not None
            and 0 < cursor.index <= index
            and cursor.shape == SHAPE[0]
            and cursor.name == name
        ):
            node = cursor.node
            seen = cursor.index
            while seen != index:
                node = node.next_sibling
                if node is None:
                    return None
                if node.name == name and not node.namespace:
                    seen += 1
            cursor.index = index
            cursor.node = node
            return node
        seen = 0
        node = e._first
        while node is not None:
            if node.name == name and not node.namespace:
                seen += 1
                if seen == index:
                    if index > 1:
                        _remember(e, cursor, name, index, node)
                    return node
            node = node.next_sibling
        return None
    if index > 0:
        seen = 0
        node = e._first if e._lazy is None else e.first_child
        while node is not None:
            if _matches(node, name, ns, ftype):
                seen += 1
                if seen == index:
                    return node
            node = node.next_sibling
        return None
    if index == 0:
        raise EsqlRuntimeError("field index 0 is not valid; indexes start at 1")
    seen = 0
    node = e.last_child
    while node is not None:
        if _matches(node, name, ns, ftype):
            seen -= 1
            if seen == index:
                return node
        node = node.prev_sibling
    return None


def peek_child(e: Element | None, name: str) -> Element | None:
    """:func:`child` when it parses nothing: None when ``e`` is None or its children are unparsed.

    What a loop's shared path prefix is resolved with before a statement (esql.codegen.pathcache):
    the statement itself then walks the step, parsing or not, as it always would.
    """
    if e is None or e._lazy is not None:
        return None
    node = e._first
    while node is not None:
        if node.name == name and not node.namespace:
            return node
        node = node.next_sibling
    return None


def peek_step(e: Element | None, name: str, index: Any) -> Element | None:
    """``step(e, name, '', index, None)`` when it parses nothing and cannot fail: None when ``e``
    is None or unparsed, or ``index`` is not an INTEGER of at least 1 (the statement's own walk
    then raises as it always would)."""
    if e is None or e._lazy is not None or index.__class__ is not int or index < 1:
        return None
    return step(e, name, "", index, None)


def step_all(e: Element | None, name: str | None, ns: str | None, ftype: int | None) -> list[Element]:
    if e is None:
        return []
    out = []
    node = e._first if e._lazy is None else e.first_child
    while node is not None:
        if _matches(node, name, ns, ftype):
            out.append(node)
        node = node.next_sibling
    return out


def step_list(
    elements: list[Element], name: str | None, ns: str | None, index: int, ftype: int | None
) -> Any:
    return [found for e in elements if (found := step(e, name, ns, index, ftype)) is not None]


def count(e: Element | None, name: str | None, ns: str | None, ftype: int | None) -> int:
    """CARDINALITY of ``e.name[]`` without building the list."""
    if e is None:
        return 0
    total = 0
    if ns == "" and ftype is None and name is not None:
        # counted again only when the tree changed since: CARDINALITY in a WHILE condition
        if e._lazy is not None:
            e._materialize()
        cursor = getattr(e, "_cursor", None)
        last = e._last
        shape = SHAPE[0]
        if cursor is not None and cursor.shape == shape and cursor.name == name:
            if cursor.last is last and cursor.total >= 0:
                return cursor.total
        else:
            cursor = e._cursor = ChildCursor(shape, name, 0, None)
        node = e._first
        while node is not None:
            if node.name == name and not node.namespace:
                total += 1
            node = node.next_sibling
        cursor.total = total
        cursor.last = last
        return total
    node = e._first if e._lazy is None else e.first_child
    while node is not None:
        if _matches(node, name, ns, ftype):
            total += 1
        node = node.next_sibling
    return total


def ensure(e: Element, name: str | None, ns: str | None, index: int, ftype: int | None) -> Element:
    """The ``index``-th matching child of ``e``, created (appended) when it is the next one."""
    if index.__class__ is not int:
        index = _index(index)
    if index > 0 and ns == "" and name is not None:
        if ftype is None:
            return _ensure_plain(e, name, index)
        seen = 0
        node = e._first if e._lazy is None else e.first_child
        while node is not None:
            if (
                node.name == name
                and not node.namespace
                and (ftype is None or _type_matches(node.type, ftype))
            ):
                seen += 1
                if seen == index:
                    return node
            node = node.next_sibling
        if index != seen + 1:
            raise EsqlRuntimeError(
                f"cannot create {e.path()}.{name}[{index}]: only {seen} such field(s) exist"
            )
        return new_child(e, name, "", ftype if ftype is not None else _created_type(e))
    if index > 0:
        seen = 0
        node = e._first if e._lazy is None else e.first_child
        while node is not None:
            if _matches(node, name, ns, ftype):
                seen += 1
                if seen == index:
                    return node
            node = node.next_sibling
        if index != seen + 1:
            raise EsqlRuntimeError(
                f"cannot create {e.path()}.{name or '*'}[{index}]: only {seen} such field(s) exist"
            )
    else:
        found = step(e, name, ns, index, ftype)
        if found is not None:
            return found
        if index != -1:
            raise EsqlRuntimeError(f"cannot create {e.path()}.{name or '*'}[<{-index}]: no such field")
    if name is None:
        # A wildcard target (SET OutputRoot.*[i] = …) is created nameless and takes the source's name.
        return e.add("", namespace=ns or "", type=ftype if ftype is not None else NAME_VALUE)
    return e.add(name, namespace=ns or "", type=ftype if ftype is not None else _created_type(e))


def _ensure_plain(e: Element, name: str, index: int) -> Element:
    """:func:`ensure` of ``name[index]`` (a plain name, index > 0), from the element's cursor when
    it is valid and not past the index; a created field is remembered as the ``index``-th."""
    if e._lazy is not None:
        e._materialize()
    cursor = getattr(e, "_cursor", None)
    if cursor is not None and 0 < cursor.index <= index and cursor.shape == SHAPE[0] and cursor.name == name:
        node: Element | None = cursor.node
        seen = cursor.index
        while seen != index:
            node = node.next_sibling  # type: ignore[union-attr]
            if node is None:
                break
            if node.name == name and not node.namespace:
                seen += 1
    else:
        seen = 0
        node = e._first
        while node is not None:
            if node.name == name and not node.namespace:
                seen += 1
                if seen == index:
                    break
            node = node.next_sibling
        if node is not None:
            if index > 1:
                _remember(e, cursor, name, index, node)
            return node
        cursor = None
    if node is not None:
        cursor.index = index  # type: ignore[union-attr]
        cursor.node = node  # type: ignore[union-attr]
        return node
    if index != seen + 1:
        raise EsqlRuntimeError(f"cannot create {e.path()}.{name}[{index}]: only {seen} such field(s) exist")
    last = e._last
    node = new_child(e, name, "", _created_type(e))
    if cursor is not None:
        # an append: the cursor stays valid, and a count taken at the old last child grows by one
        cursor.index = index
        cursor.node = node
        if cursor.total >= 0 and cursor.last is last:
            cursor.total += 1
            cursor.last = node
    elif index > 1:
        _remember(e, None, name, index, node)
    return node


def _remember(e: Element, cursor: ChildCursor | None, name: str, index: int, node: Element) -> None:
    """Record in ``e``'s cursor that ``node`` is its ``index``-th child named ``name``."""
    shape = SHAPE[0]
    if cursor is None or cursor.shape != shape or cursor.name != name:
        e._cursor = ChildCursor(shape, name, index, node)
    else:
        cursor.index = index
        cursor.node = node


def ensure_child(e: Element, name: str) -> Element:
    """Fast path of :func:`ensure` for a plain name and no index."""
    node = e._first if e._lazy is None else e.first_child
    while node is not None:
        if node.name == name and not node.namespace:
            return node
        node = node.next_sibling
    # SET creates most of a built message's fields here (the type test is _created_type's, inline)
    return new_child(e, name, "", NAME if e.parent is None and e.name == "Root" else NAME_VALUE)


def set_member(e: Element, name: str, value: Any) -> None:
    """SET e.name = a scalar that is not NULL (``name`` plain: no index, namespace or type).

    When ``e``'s children are still unparsed content whose parser offers
    ``set_member(element, content, name, value) -> bool`` (the JSON domain's unread objects do),
    the parser may take the value into that content without building the level: it must leave
    the tree exactly as building the level and setting the field would, once read. Otherwise the
    field is found or created and its value replaced, as ``SET`` always does.
    """
    lazy = e._lazy
    if lazy is not None:
        setter = getattr(lazy.parser, "set_member", None)
        if setter is not None and setter(e, lazy, name, value):
            return
    ensure_child(e, name).value = value


def assign_member(e: Element, name: str, value: Any, to_element_value: Callable[[Any], Any]) -> None:
    """SET e.name = an expression's non-NULL value: :func:`set_member` for a plain scalar, else
    :func:`assign_value` on the field."""
    kind = type(value)
    if kind is str or kind is int or kind is Decimal or kind is float or kind is bool:
        if e._lazy is None:  # a built level (most SETs): ensure_child's scan, inline
            node = e._first
            while node is not None:
                if node.name == name and not node.namespace:
                    node.value = value
                    return
                node = node.next_sibling
            new_child(
                e, name, "", NAME if e.parent is None and e.name == "Root" else NAME_VALUE
            ).value = value
        else:
            set_member(e, name, value)
        return
    assign_value(ensure_child(e, name), value, to_element_value)


def assign_member_tree(e: Element, name: str, source: Element) -> None:
    """SET e.name = a field (``source``, already snapshot and not NULL): :func:`assign_tree` on
    the field ``ensure_child`` gives, a new field taking a leaf's value and type directly."""
    if e._lazy is None:
        node = e._first
        while node is not None:
            if node.name == name and not node.namespace:
                assign_tree(node, source)
                return
            node = node.next_sibling
        if name and source._first is None and source._lazy is None:
            # what assign_tree does to a new, named, childless field
            node = new_child(e, name, "", source.type)
            node.value = source.value
            return
    assign_tree(ensure_child(e, name), source)


def assign_member_own(e: Element, name: str, source: Element) -> None:
    """:func:`assign_member_tree` of what :func:`snapshot_own` gave: a leaf (the source itself or
    not, its value and type are taken), else a private copy whose children move in."""
    if source._first is None and source._lazy is None:
        assign_member_tree(e, name, source)
        return
    adopt_tree(ensure_child(e, name), source)


def _created_type(parent: Element) -> int:
    """The type of a field SET creates: a header or body folder (IBM's Name type) below a message
    Root, a name-value field anywhere else."""
    if parent.parent is None and parent.name == "Root":
        return NAME
    return NAME_VALUE


def new_child(e: Element, name: str, ns: str, ftype: int) -> Element:
    """Append a new field to ``e`` (already materialised by the caller's scan), linking it directly."""
    node = _new_element(Element)
    node.name = name
    node.namespace = ns
    node.type = ftype
    node.value = None
    node._first = node._last = node._lazy = node._cursor = None
    node.next_sibling = None
    last = e._last
    node.parent = e
    node.prev_sibling = last
    if last is None:
        e._first = node
    else:
        last.next_sibling = node
    e._last = node
    return node


def _type_matches(actual: int, wanted: int) -> bool:
    return actual == wanted or (wanted in (ATTRIBUTE, NAMESPACE_DECL) and actual == wanted + 1)


def _index(value: Any) -> int:
    """A field index from an expression: an INTEGER, or a whole DECIMAL/FLOAT/numeric text."""
    if isinstance(value, bool) or value is None:
        raise EsqlRuntimeError(f"a field index must be an INTEGER, not {type_label(value)}")
    try:
        as_int = int(value)
    except (TypeError, ValueError):
        raise EsqlRuntimeError(f"a field index must be an INTEGER, not '{value}'") from None
    if as_int != value and not isinstance(value, str):
        raise EsqlRuntimeError(f"a field index must be a whole number, not {value}")
    return as_int


def child_value(e: Element | None, name: str) -> Any:
    """``value_of(child(e, name))`` in one call: a plain last step read as a scalar."""
    if e is None:
        return None
    node = e._first if e._lazy is None else e.first_child
    while node is not None:
        if node.name == name and not node.namespace:
            value = node.value
            if value is None and node.type == NAME:
                return _content_of(node)
            return value
        node = node.next_sibling
    return None


def value_of(e: Element | None) -> Any:
    """The value of a field reference used as a scalar (NULL when absent).

    A name element that holds its text in unnamed value children, as the XML and XMLNS parsers
    build ``<F01>abc</F01>``, has that text as its value, as in IBM's brokers.
    """
    if e is None:
        return None
    value = e.value
    if value is None and e.type == NAME:
        return _content_of(e)
    return value


#: Value-only elements that carry an element's text: plain text and CDATA (not comments or PIs).
_CONTENT_TYPES = frozenset({VALUE, VALUE + 1})


def _content_of(e: Element) -> Any:
    parts: list[Any] = []
    child = e.first_child
    while child is not None:
        if not child.name and child.type in _CONTENT_TYPES and child.value is not None:
            parts.append(child.value)
        child = child.next_sibling
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return "".join(str(part) for part in parts)


def values_of(elements: list[Element]) -> list[Any]:
    return [value_of(e) for e in elements]


def deref(r: Any) -> Element | None:
    """The element a reference-ish value denotes (REFERENCE, ROW element or None)."""
    if isinstance(r, Reference):
        return r.element
    if isinstance(r, Element) or r is None:
        return r
    raise EsqlRuntimeError(f"a field reference was expected, found a {type_label(r)} value")


def type_label(value: Any) -> str:
    names = {
        str: "CHARACTER",
        int: "INTEGER",
        float: "FLOAT",
        bool: "BOOLEAN",
        bytes: "BLOB",
        list: "LIST",
    }
    return names.get(type(value), type(value).__name__.upper())


# ------------------------------------------------------------------ tree statements


def assign_value(target: Element, value: Any, to_element_value: Callable[[Any], Any]) -> None:
    """SET field = scalar: a NULL deletes the field, anything else replaces its value."""
    kind = type(value)
    if kind is str or kind is Decimal or kind is int:
        target.value = value  # stored as they are (to_element_value's first case), without the call
        return
    if value is None:
        target.detach()
        return
    if isinstance(value, Element):
        assign_tree(target, value)
        return
    if isinstance(value, Reference):
        assign_tree(target, value.element)
        return
    if isinstance(value, list):
        raise EsqlRuntimeError("a LIST can only be assigned to a field reference ending in []")
    target.value = to_element_value(value)


def assign_tree(target: Element, source: Element | None) -> None:
    """SET field = field: the target keeps its name and takes the source's value, type and children."""
    if source is None:
        target.detach()
        return
    if source is target:
        return
    if source._first is None and source._lazy is None:
        # A leaf (the common case): no subtree to copy, so no aliasing to guard against.
        if not target.name:
            _rename(target, source.name, source.namespace)
        target.value = source.value
        target.type = source.type
        if target._first is not None or target._lazy is not None:
            target.clear_children()
        return
    if _is_ancestor(target, source):
        source = source.copy()
    if not target.name:
        _rename(target, source.name, source.namespace)
    target.value = source.value
    target.type = source.type
    copy_children(target, source)


def adopt_tree(target: Element, fresh: Element) -> None:
    """:func:`assign_tree` from a copy :func:`snapshot` just made: its children move, not copied again.

    ``fresh`` must be that private, detached copy (nothing else refers to it); it is left empty.
    """
    if not target.name:
        _rename(target, fresh.name, fresh.namespace)
    target.value = fresh.value
    target.type = fresh.type
    target.clear_children()
    fresh._cursor = None  # its children leave it without the shape stamp changing
    if fresh._lazy is not None:
        target._lazy = fresh._lazy
        fresh._lazy = None
        return
    node = fresh._first
    if node is None:
        return
    target._first, target._last = node, fresh._last
    fresh._first = fresh._last = None
    while node is not None:
        node.parent = target
        node = node.next_sibling


def _rename(e: Element, name: str, namespace: str) -> None:
    """Give ``e`` a name and namespace (its parent's index cursor is forgotten)."""
    e.name = name
    e.namespace = namespace
    renamed(e)


def snapshot(source: Element | None, target_base: Element | None) -> Element | None:
    """``source`` itself, or a copy when it has descendants and lives in the target's tree."""
    if source is None or target_base is None or (source._first is None and source._lazy is None):
        return source  # a leaf (has_children, inline) is assigned by value: never copied
    if source.root() is target_base.root():
        return source.copy()
    return source


def snapshot_own(source: Element | None) -> Element | None:
    """:func:`snapshot` of a source the compiler knows lives in the target's tree (both walked
    from one correlation name): a copy when it has descendants, without finding the roots."""
    if source is None or (source._first is None and source._lazy is None):
        return source
    return source.copy()


def copy_children(target: Element, source: Element) -> None:
    """Replace ``target``'s children by a deep copy of ``source``'s (an unparsed subtree is shared)."""
    target.clear_children()
    if source._lazy is not None:
        target._lazy = source._lazy
        return
    _copy_children(target, source)


_new_element = object.__new__


def _is_ancestor(node: Element, maybe_descendant: Element) -> bool:
    p: Element | None = maybe_descendant
    while p is not None:
        if p is node:
            return True
        p = p.parent
    return False


def assign_list(
    parent: Element,
    name: str | None,
    ns: str | None,
    ftype: int | None,
    items: Any,
    to_element_value: Callable[[Any], Any],
) -> None:
    """SET a.b[] = list: replace every ``b`` under ``a`` by one field per item."""
    if items is None:
        items = []
    if isinstance(items, Element):
        items = [items]
    sources = [(i.element if isinstance(i, Reference) else i) for i in items]
    copies = [s.copy() if isinstance(s, Element) else s for s in sources]
    existing = step_all(parent, name, ns, ftype)
    anchor = existing[0].prev_sibling if existing else None
    anchor_parent_first = bool(existing) and existing[0].prev_sibling is None
    for old in existing:
        old.detach()
    new_name = name or (existing[0].name if existing else None)
    if new_name is None:
        raise EsqlRuntimeError("cannot assign a list to a wildcard field reference")
    made = []
    for item in copies:
        node = Element(new_name, namespace=ns or "", type=ftype if ftype is not None else NAME_VALUE)
        if isinstance(item, Element):
            node.value = item.value
            node.type = ftype if ftype is not None else item.type
            node.copy_children_from(item)
        elif item is not None:
            node.value = to_element_value(item)
        made.append(node)
    for node in made:
        if anchor is not None:
            anchor.insert_after(node)
            anchor = node
        elif anchor_parent_first and parent.first_child is not None:
            parent.first_child.insert_before(node)
            anchor = node
        else:
            parent.append(node)
            anchor = node


def delete(e: Element | None) -> None:
    if e is not None:
        e.detach()


def relative(e: Element | None, relation: str) -> Element | None:
    if e is None:
        return None
    if relation == "FIRSTCHILD":
        return e.first_child
    if relation == "LASTCHILD":
        return e.last_child
    if relation == "PREVIOUSSIBLING":
        return e.prev_sibling
    if relation == "NEXTSIBLING":
        return e.next_sibling
    return e.parent


def place(anchor: Element, relation: str, node: Element) -> Element:
    """Put ``node`` as FIRSTCHILD/LASTCHILD/PREVIOUSSIBLING/NEXTSIBLING of ``anchor``."""
    if relation == "FIRSTCHILD":
        return anchor.prepend(node)
    if relation == "LASTCHILD":
        return anchor.append(node)
    if anchor.parent is None:
        raise EsqlRuntimeError(f"cannot add a sibling of {anchor.path()}: it has no parent")
    if relation == "PREVIOUSSIBLING":
        return anchor.insert_before(node)
    return anchor.insert_after(node)


def new_last_child(anchor: Element, name: str = "") -> Element:
    """CREATE LASTCHILD OF anchor [NAME 'literal']: a new name-value field linked as the last child.

    The same field as ``place(anchor, 'LASTCHILD', new_field(None))`` followed by SET … NAME, made
    and linked directly (the field is new: nothing to detach).
    """
    if anchor._lazy is not None:
        anchor._materialize()
    return new_child(anchor, name, "", NAME_VALUE)


def move(
    ref: Reference,
    relation: str,
    name: str | None = None,
    ns: str | None = None,
    ftype: int | None = None,
    repeat_type: bool = False,
    repeat_name: bool = False,
) -> None:
    """MOVE ref FIRSTCHILD/… [TYPE t] [NAMESPACE n] [NAME n] | REPEAT TYPE NAME; sets LASTMOVE."""
    start = ref.element
    if repeat_type and repeat_name and relation == "NEXTSIBLING":
        # MOVE r NEXTSIBLING REPEAT TYPE NAME, the loop over repeated fields: compared inline
        ftype, name, ns = start.type, start.name, start.namespace
        node = start.next_sibling
        while node is not None and not (
            node.name == name
            and node.namespace == ns
            and (node.type == ftype or _type_matches(node.type, ftype))
        ):
            node = node.next_sibling
        if node is None:
            ref.lastmove = False
        else:
            ref.element = node
            ref.lastmove = True
        return
    if repeat_type:
        ftype = start.type
    if repeat_name:
        name = start.name
        ns = start.namespace
    node = relative(start, relation)
    forward = relation in ("FIRSTCHILD", "NEXTSIBLING")
    if relation != "PARENT":
        while node is not None and not _matches(node, name, ns, ftype):
            node = node.next_sibling if forward else node.prev_sibling
    if node is None:
        ref.lastmove = False
    else:
        ref.element = node
        ref.lastmove = True


def move_to(ref: Reference, target: Element | None) -> None:
    if target is None:
        ref.lastmove = False
    else:
        ref.element = target
        ref.lastmove = True


def attach(source: Element | None, anchor: Element | None, relation: str) -> None:
    if source is None or anchor is None:
        raise EsqlRuntimeError("ATTACH needs an existing field and an existing target")
    if _is_ancestor(source, anchor):
        raise EsqlRuntimeError("cannot ATTACH a field below itself")
    place(anchor, relation, source)


def iter_refs(elements: list[Element]) -> Iterator[Reference]:
    for e in elements:
        yield Reference(e)


def new_row() -> Element:
    return Element("Row")


#: The name of an item of a SELECT or ROW: a plain name, None (derived), or a path of
#: (name, namespace, field type) steps from ``AS a.b.(type)c``.
AliasName = str | None | list[tuple[Any, Any, Any]]


def row_of(fields: Sequence[tuple[AliasName, Any]], to_element_value: Callable[[Any], Any]) -> Element:
    """ROW(expr AS name, …) and a SELECT result row: a detached tree with one field per item.

    A path name (``AS Info.Name``) creates the levels above the last name, sharing them between
    items (``AS Info.Name, … AS Info.Qty`` give one Info). An unnamed LIST of rows (ROW(SELECT …))
    puts each row in the new row.
    """
    row = Element("Row")
    for position, (name, value) in enumerate(fields, 1):
        if value is None:
            continue
        if isinstance(value, Reference):
            value = value.element
        parent, ftype = row, None
        if isinstance(name, list):
            for step_name, step_ns, step_type in name[:-1]:
                parent = ensure(parent, str(step_name), step_ns or "", 1, step_type)
            last_name, last_ns, ftype = name[-1]
            name = str(last_name) if last_name is not None else None
            ns = last_ns or ""
        else:
            ns = ""
        if isinstance(value, list) and name is None:
            for item in value:
                item = item.element if isinstance(item, Reference) else item
                if isinstance(item, Element):
                    assign_tree(parent.add(item.name or "Row"), item)
                elif item is not None:
                    parent.add(f"Column{position}", to_element_value(item))
            continue
        if isinstance(value, Element):
            node = parent.add(name or value.name or f"Column{position}", namespace=ns)
            assign_tree(node, value)
        else:
            node = parent.add(name or f"Column{position}", to_element_value(value), namespace=ns)
        if ftype is not None:
            node.type = ftype
    return row


def check_stop(stop: Any) -> None:
    if stop.is_set():
        raise StopRequested("stop requested: the program was interrupted between statements")


class SharedState:
    """SHARED and schema/module-level variables of one compiled program, with the ATOMIC lock."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.values: dict[str, Any] = {}
        self.initialised = False


def values_module() -> Any:
    """``esql.values``: the one home of ESQL's value semantics (operators, CHARACTER forms, literals)."""
    import esql.values as values

    return values


def functions_environment() -> dict[str, Any]:
    """``esql.functions.ENVIRONMENT`` (name → FunctionDef) when installed, else empty."""
    try:
        import esql.functions as functions
    except ImportError:
        return {}
    return dict(functions.ENVIRONMENT)


#: The Python definitions of the tree steps :func:`_use_native_steps` may replace, kept as the
#: compiled module's fallback and for the tests that compare the two.
PYTHON_STEPS: dict[str, Callable[..., Any]] = {
    "child": child,
    "child_value": child_value,
    "ensure_child": ensure_child,
    "new_child": new_child,
    "new_last_child": new_last_child,
    "assign_member": assign_member,
    "peek_child": peek_child,
    "assign_member_tree": assign_member_tree,
}


def native_steps() -> dict[str, Callable[..., Any]] | None:
    """The same steps compiled in C (``esql/_tree_native.c``), when that module was built and
    ``FLOWBROKER_PURE_PYTHON`` is not set; each does what its Python function does, and calls it
    for every case it does not take itself (unparsed content, values other than plain scalars)."""
    from esql.native import compiled

    _tree_native = compiled("esql._tree_native")
    if _tree_native is None:
        return None
    python = PYTHON_STEPS  # never the module's globals: those may be the compiled steps already
    _tree_native.configure(
        Element,
        NAME,
        NAME_VALUE,
        Decimal,
        python["child"],
        python["child_value"],
        python["ensure_child"],
        python["assign_member"],
        python["new_last_child"],
        python["new_child"],
        python["peek_child"],
        python["assign_member_tree"],
    )
    return {name: getattr(_tree_native, name) for name in PYTHON_STEPS}


def _use_native_steps() -> None:
    steps = native_steps()
    if steps is not None:
        globals().update(steps)


_use_native_steps()
