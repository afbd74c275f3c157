"""The Root of a message with no MQRFH2, built in C (``_assembly_native.plain_root``), is the Root
``_plain_root`` and the general ``build_root`` path build: the same elements, links, unparsed
contents, options and Relay, and the same outcome when it is then read, written and relayed. What
the C code does not take (another parser, a descriptor value ``int()`` would convert, an attribute
that raises, an unknown domain) it leaves to ``_plain_root``, whose errors are then the ones raised.
"""

from __future__ import annotations

import enum
import itertools
import types
from collections.abc import Callable, Iterator
from typing import Any

import esql.domains
import flowbroker.formats
import pytest
from esql.native import compiled
from esql.tree import Element, LazyContent
from flowbroker.formats import assembly as formats_assembly
from flowbroker.formats import json as json_domain
from flowbroker.formats.assembly import FOLDER, Relay, Template
from flowbroker.qm.protocol import Message, MessageDescriptor
from flowbroker_nodes.base import ArrivedDescriptor
from native_support import require_compiled

Native = Callable[[Any, bytes, Template, bool, Any], Element | None]


def _native() -> Native:
    return require_compiled(formats_assembly._native_plain_root, "flowbroker.formats._assembly_native")


class _Encoding(enum.IntEnum):
    NATIVE = 546


class _Raising:
    """A descriptor whose attribute raises something other than AttributeError."""

    format = "MQSTR   "

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __getattribute__(self, name: str) -> Any:
        if name == object.__getattribute__(self, "attribute"):
            raise RuntimeError(f"no {name} today")
        return object.__getattribute__(self, name)


# (label, descriptor, whether the C code leaves it to Python)
DESCRIPTORS: list[tuple[str, Any, bool]] = [
    ("arrived", ArrivedDescriptor(put_time=1_700_000_000.5), False),
    ("arrived-persistent", ArrivedDescriptor(put_time=1_700_000_000.0, persistence=1), False),
    ("qm-default", MessageDescriptor(), False),
    (
        "qm-full",
        MessageDescriptor(
            msg_id=b"M" * 24,
            correl_id=b"C" * 24,
            persistence=1,
            priority=7,
            format="MQSTR   ",
            encoding=273,
            coded_char_set_id=819,
            put_time=1_600_000_000.25,
            backout_count=2,
            reply_to_q="REPLY.Q",
        ),
        False,
    ),
    ("qm-as-queue-def", MessageDescriptor(persistence=2, priority=0, correl_id=b"short"), False),
    ("qm-ebcdic", MessageDescriptor(coded_char_set_id=500, encoding=785), False),
    ("missing-everything", types.SimpleNamespace(), False),
    ("odd-values", types.SimpleNamespace(persistence="1", priority=None, correl_id="text"), False),
    ("bool-persistence", types.SimpleNamespace(persistence=True, priority=9), False),
    ("float-persistence", types.SimpleNamespace(persistence=1.0), False),
    ("huge-encoding", types.SimpleNamespace(encoding=2**70), False),
    ("str-encoding", types.SimpleNamespace(encoding="546"), True),
    ("bool-encoding", types.SimpleNamespace(encoding=True), True),
    ("enum-encoding", types.SimpleNamespace(encoding=_Encoding.NATIVE), True),
    ("float-ccsid", types.SimpleNamespace(coded_char_set_id=1208.0), True),
    ("none-encoding", types.SimpleNamespace(encoding=None), True),
    ("raising-encoding", _Raising("encoding"), True),
    ("raising-priority", _Raising("priority"), True),
]

# (template, body, whether the C code leaves it to Python)
BODIES: list[tuple[Template, bytes, bool]] = [
    (Template("JSON"), b'{"a": 1, "b": [true, "x", 1.5], "c": {"d": null}}', False),
    (Template("json"), b'{"n": 12345678901234567890123}', False),
    (Template("JSON"), b"{not json", False),
    (Template("XMLNSC"), b"<a><b>1</b><c x='y'>t</c></a>", False),
    (Template("XMLNSC", "SET1", "msg", "XML1"), b"<?xml version='1.0'?><a><!-- c --><b>2</b></a>", False),
    (Template("XMLNSC"), b"<a>", False),
    (Template("XMLNS"), b'<a xmlns="urn:x" xmlns:p="urn:p"><p:b>1</p:b> text </a>', False),
    (Template("XML"), b"<a><b k='v'>1</b></a>", False),
    (Template("BLOB"), b"\x00\x01raw bytes\xff", False),
    (Template("NONE"), b"raw", False),
    (Template(""), b"", False),
    (Template("MRM", "ORDERS", "Order", "CWF1"), b"0001", True),
    (Template("NOSUCH"), b"x", True),
]


def _relay_for(descriptor: Any, body: bytes, given: bool) -> Any:
    if not given:
        return None
    if isinstance(descriptor, MessageDescriptor):
        return Message(descriptor, {}, body)
    return types.SimpleNamespace(md=descriptor, body=body)


def _slots(cls: type) -> list[str]:
    return sorted({name for klass in cls.__mro__ for name in getattr(klass, "__slots__", ())})


def _describe(obj: Any, seen: dict[int, int], inputs: dict[int, str]) -> Any:
    """Everything about ``obj``: plain values by type and value; the tree's elements, unparsed
    contents, relays, dicts and tuples by all their slots or items, each labelled where first met
    (so links and shared objects compare too); the inputs by which one they are."""
    if obj is None or type(obj) in (str, int, bool, float, bytes):
        return (type(obj).__name__, obj)
    key = id(obj)
    if key in inputs:
        return ("input", inputs[key])
    if key in seen:
        return ("ref", seen[key])
    if isinstance(obj, Element | LazyContent | Relay | dict | tuple | list):
        label = seen[key] = len(seen)
        if isinstance(obj, dict):
            return ("dict", label, [(k, _describe(v, seen, inputs)) for k, v in obj.items()])
        if isinstance(obj, tuple | list):
            return (type(obj).__name__, label, [_describe(v, seen, inputs) for v in obj])
        slots = []
        for name in _slots(type(obj)):
            try:
                value = object.__getattribute__(obj, name)
            except AttributeError:
                slots.append((name, "<unset>"))
                continue
            slots.append((name, _describe(value, seen, inputs)))
        return (type(obj).__name__, label, slots)
    return (type(obj).__qualname__, repr(obj))


def _inputs(*objects: Any) -> dict[int, str]:
    named = {
        "properties-filler": formats_assembly._PROPERTIES,
        "mqmd-filler": flowbroker.formats.mqmd._FILLER,
        **{f"parser-{name}": parser for name, parser in esql.domains._PARSERS.items()},
    }
    named.update({f"input-{i}": obj for i, obj in enumerate(objects)})
    return {id(obj): name for name, obj in named.items()}


def _outcome(action: Callable[[], Any], inputs: dict[int, str]) -> Any:
    try:
        result = action()
    except Exception as exc:  # the error itself is what is compared
        return ("raised", type(exc).__name__, str(exc))
    return ("gave", _describe(result, {}, inputs))


def _read_all(node: Element) -> Element:
    for kid in node.children():
        _read_all(kid)
    return node


def _actions() -> Iterator[tuple[str, Callable[[Element], Any]]]:
    yield "tree", lambda root: root
    yield "to_body", formats_assembly.to_body
    yield "to_message", formats_assembly.to_message
    yield "relay_of", lambda root: (formats_assembly.relay_of(root), root)
    yield "copy", lambda root: (formats_assembly.relay_of(root.copy()), formats_assembly.to_body(root.copy()))
    yield "filled", _read_all
    yield "filled_to_message", lambda root: (formats_assembly.to_message(_read_all(root)), root)
    yield "filled_relay_of", lambda root: formats_assembly.relay_of(_read_all(root))


def _compare(makers: dict[str, Callable[[], Element]], inputs: dict[int, str]) -> None:
    """Each action on a fresh Root from each maker has the same outcome."""
    for name, action in _actions():
        outcomes = {
            label: _outcome(lambda act=action, mk=make: act(mk()), inputs)  # type: ignore[misc]
            for label, make in makers.items()
        }
        first = next(iter(outcomes.values()))
        for label, outcome in outcomes.items():
            assert outcome == first, f"{name}: {label} differs"


CASES = [
    pytest.param(d, i, relay, tx, id=f"{d}-{t.domain or 'empty'}{i}-{'relay' if relay else 'norelay'}-{tx}")
    for d, (i, (t, _b, _r)), relay, tx in itertools.product(
        [label for label, _d, _r in DESCRIPTORS], enumerate(BODIES), (True, False), (True, False)
    )
    if (relay or tx) or i % 3 == 0  # the no-relay, non-transactional corner on a third of the bodies
]


@pytest.mark.parametrize(("label", "body_index", "relay_given", "transactional"), CASES)
def test_the_c_root_is_the_python_root(
    label: str, body_index: int, relay_given: bool, transactional: bool
) -> None:
    native = _native()
    descriptor, refused = next((d, r) for lab, d, r in DESCRIPTORS if lab == label)
    template, data, body_refused = BODIES[body_index]
    relay = _relay_for(descriptor, data, relay_given)
    inputs = _inputs(descriptor, data, template, relay, transactional)
    taken = native(descriptor, data, template, transactional, relay)
    assert (taken is None) == (refused or body_refused)
    makers: dict[str, Callable[[], Element]] = {
        "python": lambda: formats_assembly._plain_root(descriptor, data, template, transactional, relay),
        "general": lambda: formats_assembly.build_root(
            descriptor, data, template, transactional=transactional, options={}, relay=relay
        ),
        "build_root": lambda: formats_assembly.build_root(
            descriptor, data, template, transactional=transactional, relay=relay
        ),
    }
    if label == "raising-priority" and template.domain == "NOSUCH":
        del makers["general"]  # it reads the descriptor before it looks the domain up: another error first
    if taken is not None:
        makers["c"] = lambda: native(descriptor, data, template, transactional, relay)  # type: ignore[return-value]
    _compare(makers, inputs)


def test_many_templates_each_get_their_own_plan() -> None:
    """More templates than the C code keeps plans for, in turn: each Root is its template's."""
    native = _native()
    templates = [Template(("JSON", "XMLNSC", "BLOB")[i % 3], f"S{i}", f"T{i}", f"F{i}") for i in range(300)]
    descriptor = MessageDescriptor()
    for _round in range(2):
        for template in templates:
            relay = Message(descriptor, {}, b"{}")
            inputs = _inputs(descriptor, b"{}", template, relay)
            c = native(descriptor, b"{}", template, True, relay)
            py = formats_assembly._plain_root(descriptor, b"{}", template, True, relay)
            assert _describe(c, {}, inputs) == _describe(py, {}, inputs)


class _OwnAttach(json_domain.JsonParser):
    """A JSON parser whose attach is its own: the C code must call it, not make the content itself."""

    def attach(
        self, element: Element, data: bytes, *, ccsid: int, encoding: int, options: dict[str, Any]
    ) -> None:
        element.set_lazy(
            LazyContent(self, bytes(data), ccsid=ccsid, encoding=encoding, options={"own": True})
        )


@pytest.fixture
def _json_restored() -> Iterator[None]:
    original = esql.domains._PARSERS["JSON"]
    yield
    esql.domains.register(original)


@pytest.mark.usefixtures("_json_restored")
def test_a_parser_registered_again_is_the_one_used() -> None:
    native = _native()
    descriptor, template = ArrivedDescriptor(), Template("JSON")
    assert native(descriptor, b"{}", template, True, None) is not None

    other = esql.domains.register(json_domain.JsonParser())  # another plain parser: taken, and used
    root = native(descriptor, b"{}", template, True, None)
    assert root is not None and root.child("JSON").lazy.parser is other  # type: ignore[union-attr]

    own = esql.domains.register(_OwnAttach())  # its own attach: left to Python, which calls it
    assert native(descriptor, b"{}", template, True, None) is None
    root = formats_assembly.build_root(descriptor, b"{}", template)
    lazy = root.child("JSON").lazy  # type: ignore[union-attr]
    assert lazy.parser is own and lazy.options == {"own": True}  # type: ignore[union-attr]

    shadowed = json_domain.JsonParser()  # the plain attach, shadowed on the instance
    shadowed.attach = own.attach  # type: ignore[method-assign]
    esql.domains.register(shadowed)
    assert native(descriptor, b"{}", template, True, None) is None
    assert root.child("JSON") is not None


def test_nothing_is_taken_before_the_parsers_are_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    native = _native()
    monkeypatch.setattr(flowbroker.formats, "_LOADED", False)
    assert native(ArrivedDescriptor(), b"{}", Template("JSON"), True, None) is None
    root = formats_assembly.build_root(ArrivedDescriptor(), b"{}", Template("JSON"))
    assert root.child("JSON") is not None  # _plain_root loaded them


def test_a_body_that_is_not_exactly_bytes_is_left_to_python() -> None:
    native = _native()
    descriptor, template = ArrivedDescriptor(), Template("BLOB")
    assert native(descriptor, bytearray(b"ab"), template, True, None) is None  # type: ignore[arg-type]
    root = formats_assembly.build_root(descriptor, bytearray(b"ab"), template)  # type: ignore[arg-type]
    assert type(root.child("BLOB").lazy.data) is bytes  # type: ignore[union-attr]


def test_build_root_uses_the_c_root() -> None:
    _native()
    root = formats_assembly.build_root(ArrivedDescriptor(), b"{}", Template("JSON"))
    assert getattr(root, "_source", None) is None
    # made in C: no Element.__init__ ran, so the slot it leaves unset is unset here too
    with pytest.raises(AttributeError):
        object.__getattribute__(root, "_source")


def test_configure_refuses_classes_whose_slots_are_not_plain_object_slots() -> None:
    _native()
    module = compiled("flowbroker.formats._assembly_native")
    assert module is not None

    class Plain:
        """Element's names, but as class attributes: no slots."""

        name = namespace = type = value = parent = prev_sibling = next_sibling = None
        _first = _last = _lazy = _cursor = None

    others = (
        FOLDER,
        formats_assembly._PROPERTIES,
        flowbroker.formats.mqmd._FILLER,
        esql.domains._PARSERS,
        esql.domains.attach_unparsed,
        formats_assembly._plan,
        vars(flowbroker.formats),
    )
    for classes in ((Plain, LazyContent, Relay), (Element, Plain, Relay), (Element, LazyContent, Plain)):
        with pytest.raises(TypeError, match="is not a slot"):
            module.configure(*classes, *others)
    # refused, it keeps what it had
    assert _native()(ArrivedDescriptor(), b"{}", Template("JSON"), True, None) is not None
