"""`flowbroker bench convert`: seed 004 Table 1, converting a 4 KB 30-field message between Generic XML, CWF and MRM XML.

The message set, the inputs, the Compute node's ESQL and the check of an output are also what
the Appendix B §7.6 cases of ``flowbroker bench seed004`` deploy and send, at 4, 16 and 64 KB.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from esql.tree import Element

from flowbroker_bench.core import Row, Scenario

SET_NAME = "CONV"
TYPE_NAME = "Msg"
MESSAGE_BYTES = 4096
#: Appendix B §7.6's message sizes: one message type per size, the same 30 fields, padded.
SIZES = (4096, 16384, 65536)
FORMATS = ("Generic XML", "CWF", "MRM XML")
#: How seed 004's §7.6 table ids name the formats.
TABLE_NAMES = {"Generic XML": "xml", "CWF": "cwf", "MRM XML": "mrmxml"}

#: Seed 004 Table 1: messages/s (input/output rate) when converting FROM (row) TO (column).
SEED_TABLE_1 = {
    ("Generic XML", "Generic XML"): 164.00,
    ("Generic XML", "CWF"): 109.00,
    ("Generic XML", "MRM XML"): 107.00,
    ("CWF", "Generic XML"): 78.70,
    ("CWF", "CWF"): 47.80,
    ("CWF", "MRM XML"): 47.80,
    ("MRM XML", "Generic XML"): 94.80,
    ("MRM XML", "CWF"): 66.40,
    ("MRM XML", "MRM XML"): 66.80,
}

_FIELDS = [(f"S{i}", "string") for i in range(1, 11)]
_FIELDS += [(f"F{i}", "float") for i in range(1, 11)]
_FIELDS += [(f"I{i}", "integer") for i in range(1, 11)]


def type_name(size: int = MESSAGE_BYTES) -> str:
    """The message type of one size: ``Msg`` is the report's 4 KB one."""
    return TYPE_NAME if size == MESSAGE_BYTES else f"{TYPE_NAME}{size}"


def message_set() -> dict[str, Any]:
    """The report's message type: 10 strings of 12 characters, 10 floats, 10 integers; CWF padded to size.

    One type per size of :data:`SIZES`, differing only in the filler that pads the CWF record.
    """
    cwf = {"string": {"repr": "string", "length": 12}, "float": {"repr": "float", "length": 8}}
    cwf["integer"] = {"repr": "binary", "length": 4}
    used = 10 * 12 + 10 * 8 + 10 * 4
    types = {}
    for size in SIZES:
        elements: list[dict[str, Any]] = [{"name": n, "type": t, "cwf": cwf[t]} for n, t in _FIELDS]
        elements.append({"type": "filler", "cwf": {"repr": "string", "length": size - used}})
        types[type_name(size)] = {"elements": elements}
    return {"name": SET_NAME, "types": types}


def sample_values(seed: int = 4) -> dict[str, Any]:
    rng = random.Random(seed)
    values: dict[str, Any] = {}
    for name, kind in _FIELDS:
        if kind == "string":
            values[name] = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(12))
        elif kind == "float":
            values[name] = round(rng.uniform(-1e6, 1e6), 4)
        else:
            values[name] = rng.randint(-(2**31), 2**31 - 1)
    return values


def _xml(values: dict[str, Any], size: int = MESSAGE_BYTES) -> bytes:
    """The message as XML, indented and padded with trailing white space to size like the seed's."""
    body = (
        "<Msg>"
        + "".join(
            f"\n    <{k}>{v!r}</{k}>" if not isinstance(v, str) else f"\n    <{k}>{v}</{k}>"
            for k, v in values.items()
        )
        + "\n</Msg>"
    )
    raw = body.encode("utf-8")
    return raw + b"\n" * (size - len(raw)) if len(raw) < size else raw


@dataclass
class Cell:
    source: str
    target: str
    body: bytes
    descriptor: Any


class _Descriptor:
    """The queue manager's descriptor fields for a non-persistent MQHRF2 message."""

    def __init__(self) -> None:
        self.msg_id = b"\x00" * 24
        self.correl_id = b"\x00" * 24
        self.persistence = 0
        self.priority = 0
        self.expiry = -1
        self.reply_to_q = ""
        self.reply_to_q_mgr = ""
        self.format = "MQHRF2  "
        self.encoding = 546
        self.coded_char_set_id = 1208
        self.put_time = 0.0
        self.backout_count = 0
        self.group_id = b"\x00" * 24


def _template(fmt: str, size: int = MESSAGE_BYTES) -> tuple[str, str, str, str]:
    if fmt == "Generic XML":
        return "xmlnsc", "", "", ""
    return "mrm", SET_NAME, type_name(size), "CWF" if fmt == "CWF" else "XML"


def build_inputs(size: int = MESSAGE_BYTES) -> dict[str, bytes]:
    """The same message in each input format, each behind an MQRFH2 whose <mcd> names its template."""
    from esql.tree import Element
    from flowbroker.formats import load_all, rfh2
    from flowbroker.formats.mrm import cwf, xmlformat
    from flowbroker.formats.mrm.model import compile_set

    load_all()
    values = sample_values()
    mtype = compile_set(message_set()).message_type(type_name(size))
    tree = Element("MRM")
    for key, value in values.items():
        tree.add(key, value)
    bodies = {
        "Generic XML": _xml(values, size),
        "CWF": cwf.Writer(ccsid=1208, encoding=546).record(mtype, tree),
        "MRM XML": xmlformat.write(mtype, tree, ccsid=1208),
    }
    if len(bodies["MRM XML"]) < size:
        bodies["MRM XML"] += b" " * (size - len(bodies["MRM XML"]))
    out = {}
    for fmt, body in bodies.items():
        header = Element("MQRFH2")
        for name, value in (
            ("Version", 2),
            ("Format", "        "),
            ("Encoding", 546),
            ("CodedCharSetId", 1208),
        ):
            header.add(name, value)
        header.add("Flags", 0)
        header.add("NameValueCCSID", 1208)
        domain, set_, type_, fmt_ = _template(fmt, size)
        rfh2.set_template(header, domain, set_, type_, fmt_)
        out[fmt] = rfh2.serialize(header, encoding=546, ccsid=1208) + body
    return out


def _esql(source: str, target: str, size: int = MESSAGE_BYTES) -> str:
    src = "InputRoot.XMLNSC.Msg" if source == "Generic XML" else "InputRoot.MRM"
    lines = ["SET OutputRoot.Properties = InputRoot.Properties;", "SET OutputRoot.MQMD = InputRoot.MQMD;"]
    lines.append("SET OutputRoot.MQRFH2 = InputRoot.MQRFH2;")
    if source != "Generic XML":
        # Read a field first, as the seed's Compute node did: without it an MRM → MRM copy of the
        # same set, type and format would pass the unparsed bit stream through untouched.
        lines.append("DECLARE first CHARACTER InputRoot.MRM.S1;")
    if target == "Generic XML":
        lines += ["SET OutputRoot.Properties.MessageSet = '';", "SET OutputRoot.Properties.MessageType = '';"]
        lines += ["SET OutputRoot.Properties.MessageFormat = '';", f"SET OutputRoot.XMLNSC.Msg = {src};"]
    else:
        fmt = "CWF" if target == "CWF" else "XML"
        lines += [f"SET OutputRoot.Properties.MessageSet = '{SET_NAME}';"]
        lines += [f"SET OutputRoot.Properties.MessageType = '{type_name(size)}';"]
        lines += [f"SET OutputRoot.Properties.MessageFormat = '{fmt}';", f"SET OutputRoot.MRM = {src};"]
    return "\n".join(lines) + "\n"


def _direct(source: str, target: str) -> Callable[[Element], Element]:
    """The parse → tree copy → serialise path the ESQL above performs, without the compiler."""
    src_domain = "XMLNSC" if source == "Generic XML" else "MRM"
    _d, set_, type_, fmt = _template(target)

    def compute(root: Element) -> Element:
        out = Element("Root", type=0x01000000)
        for header in ("Properties", "MQMD", "MQRFH2"):
            found = root.child(header)
            if found is not None:
                out.append(found.copy())
        props = out.child("Properties")
        assert props is not None
        for name, value in (("MessageSet", set_), ("MessageType", type_), ("MessageFormat", fmt)):
            props.child(name).value = value  # type: ignore[union-attr]
        body = root.child(src_domain)
        assert body is not None
        if src_domain == "XMLNSC":
            body = body.child("Msg")
            assert body is not None
        else:
            _ = body.first_child  # the ESQL reads below InputRoot.MRM, which parses it
        if target == "Generic XML":
            target_el = out.add("XMLNSC", type=0x01000000).add("Msg", type=0x01000000)
        else:
            target_el = out.add("MRM", type=0x01000000)
        target_el.copy_children_from(body)
        return out

    return compute


def _esql_compute(source: str, target: str) -> Callable[[Element], Element]:
    from esql.compiler import compile_program
    from esql.runtime import ExecutionContext

    routine = compile_program(_esql(source, target), filename="convert.esql").main_module(None, "COMPUTE")

    def compute(root: Element) -> Element:
        out = Element("Root", type=0x01000000)
        ctx = ExecutionContext(
            input_root=root,
            input_local_environment=Element("LocalEnvironment"),
            input_exception_list=Element("ExceptionList"),
            environment=Element("Environment"),
            output_root=out,
            output_local_environment=Element("LocalEnvironment"),
            output_exception_list=Element("ExceptionList"),
        )
        routine.run(ctx)
        return ctx.output_root if getattr(ctx, "output_root", None) is not None else out

    return compute


@cache
def request(source: str, size: int) -> bytes:
    """The request body of one §7.6 row: the message in ``source`` format at ``size`` bytes."""
    return build_inputs(size)[source]


def check_reply(source: str, target: str, body: bytes, size: int) -> None:
    """ValueError unless ``body`` is the §7.6 message converted to ``target`` with its 30 values."""
    from flowbroker.formats import load_all
    from flowbroker.formats.mrm import CATALOG

    load_all()
    if SET_NAME not in CATALOG.names():
        CATALOG.install(SET_NAME, message_set())
    _check(source, target, body, sample_values(), size)


def _check(source: str, target: str, body: bytes, values: dict[str, Any], size: int = MESSAGE_BYTES) -> None:
    """The output must carry the input's 30 values: parse it back in the target format and compare."""
    from flowbroker.formats import assembly, rfh2

    descriptor = _Descriptor()
    header, _rest = rfh2.parse(body, encoding=546, ccsid=1208)
    template = rfh2.template(header)
    expected = _template(target, size)
    got = (
        template.get("domain", ""),
        template.get("set", ""),
        template.get("type", ""),
        template.get("format", ""),
    )
    if got != expected:
        raise ValueError(f"{source} → {target}: output <mcd> is {got}, expected {expected}")
    root = assembly.build_root(descriptor, body)
    dom = root.last_child
    assert dom is not None
    tree = dom.child("Msg") if target == "Generic XML" else dom
    for name, value in values.items():
        field = tree.child(name) if tree is not None else None
        have = None if field is None else field.value
        if have is None or (str(have) != str(value) and float(have) != float(value)):
            raise ValueError(f"{source} → {target}: field {name} is {have!r}, expected {value!r}")


def run(args: argparse.Namespace) -> list[Row]:
    from flowbroker.formats import assembly, load_all
    from flowbroker.formats.mrm import CATALOG

    load_all()
    if args.cpu is not None:
        try:
            os.sched_setaffinity(0, {args.cpu})  # one core, as the seed's broker had
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot pin to CPU {args.cpu}: {exc}") from None
    CATALOG.install(SET_NAME, message_set())
    inputs = build_inputs()
    values = sample_values()
    wanted = args.path
    rows: list[Row] = []
    for source in FORMATS:
        for target in FORMATS:
            path = "direct"
            compute = _direct(source, target)
            note = "parse → tree copy → serialise (no ESQL compiler)"
            if wanted in ("auto", "esql"):
                try:
                    compute = _esql_compute(source, target)
                    path, note = "esql", "Compute node ESQL: " + _esql(source, target).splitlines()[-1]
                    _one(compute, inputs[source])
                except Exception as exc:  # the compiler is optional here; say why it was not used
                    if wanted == "esql":
                        raise ValueError(f"ESQL path unavailable: {type(exc).__name__}: {exc}") from None
                    compute = _direct(source, target)
                    path = "direct"
                    note = f"parse → tree copy → serialise (ESQL compiler unusable: {type(exc).__name__})"
            out_body = _one(compute, inputs[source])
            _check(source, target, out_body, values)
            rate, cpu_us = _measure(compute, inputs[source], args.seconds)
            rows.append(
                {
                    "from": source,
                    "to": target,
                    "conversions/s": rate,
                    "cpu µs/conv": cpu_us,
                    # What one core would do if this process had it to itself: robust on a busy machine.
                    "per CPU-s": 1e6 / cpu_us if cpu_us else 0.0,
                    "seed msgs/s": SEED_TABLE_1[(source, target)],
                    "wall ≥5000": "yes" if rate >= 5000 else "NO",
                    "CPU ≥5000": "yes" if cpu_us and 1e6 / cpu_us >= 5000 else "NO",
                    "in bytes": len(inputs[source]),
                    "out bytes": len(out_body),
                    "path": path,
                }
            )
            if args.verbose:
                rows[-1]["note"] = note
    del assembly
    return rows


def _one(compute: Callable[[Element], Element], body: bytes) -> bytes:
    from flowbroker.formats import assembly

    root = assembly.build_root(_Descriptor(), body)
    _fields, out = assembly.to_message(compute(root))
    return out


def _measure(compute: Callable[[Element], Element], body: bytes, seconds: float) -> tuple[float, float]:
    from flowbroker.formats import assembly

    descriptor = _Descriptor()
    build, emit = assembly.build_root, assembly.to_message
    for _ in range(200):  # warm up
        emit(compute(build(descriptor, body)))
    count = 0
    start, cpu0 = time.perf_counter(), time.process_time()
    deadline = start + seconds
    while True:
        for _ in range(100):
            emit(compute(build(descriptor, body)))
        count += 100
        now = time.perf_counter()
        if now >= deadline:
            break
    cpu = time.process_time() - cpu0
    return count / (now - start), cpu / count * 1e6


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=3.0, help="measuring window per cell (default 3)")
    parser.add_argument(
        "--path",
        choices=("auto", "esql", "direct"),
        default="auto",
        help="convert through the ESQL compiler (esql), without it (direct), or ESQL when usable (auto)",
    )
    parser.add_argument("--verbose", action="store_true", help="add a note per cell saying what ran")
    parser.add_argument("--cpu", type=int, default=None, help="pin the measurement to this CPU")


SCENARIOS = {
    "convert": Scenario(
        "convert",
        "seed 004 Table 1: Generic XML / CWF / MRM XML each to each, 4 KB 30-field message, one core",
        run,
        add_arguments,
        tags=("seed004", "formats"),
    )
}
