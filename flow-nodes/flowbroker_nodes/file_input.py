"""FileInput: polls a directory below the file roots and starts the flow on each file, as ACE's node.

Each regular file whose name matches the pattern is claimed by moving it into the directory's
``mqsitransit`` subdirectory (so several flow threads never take the same file), then
propagated as one message, or as one message per record (each line with a delimited record
detection, each ``recordLength`` bytes with a fixed length one, the last record of a file whose
size is not a multiple of the length being the shorter rest, as in ACE), its body parsed in the
node's domain; a last message with an empty body goes to ``endOfData``
when that terminal is connected. Each message runs in its own unit of work: its queue and
coordinated database work commits when it has been through the flow. A file all of whose
messages were processed moves to ``mqsiarchive`` (or is deleted); one whose processing failed
(unreadable, unparseable, or a record's flow failing with nothing on catch / failure to take
it) moves to ``mqsibackout`` with the records after the failing one left unprocessed.
Symbolic links, directories, FIFOs and other non-regular files are never read. A file left in
``mqsitransit`` by a process that stopped before finishing it is processed again when the node
starts (the records it had committed are propagated again: at least once, never lost).
``LocalEnvironment.File`` (Directory, Name, LastModified, Record, Offset) and
``LocalEnvironment.Wildcard.WildcardMatch`` describe where the message came from.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import stat
import threading
import time
from pathlib import Path

from esql.tree import Element

from flowbroker_nodes import files
from flowbroker_nodes.base import (
    ArrivedDescriptor,
    ArrivedMessage,
    Assembly,
    DeployProblem,
    FlowServices,
    NodeError,
    describe_exception_list,
)
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

MAX_RECORD_LENGTH = 100 * 1024 * 1024  # ACE's upper bound for a fixed record length

SPEC = NodeSpec(
    type="FileInput",
    role="input",
    label="FileInput",
    category="input",
    icon="file-in",
    extra={
        "namesMessageSet": {"property": "messageSet", "when": {"messageDomain": "MRM"}},
        "testInput": "file",
    },
    description="Polls a directory below the execution group's file roots for files matching a pattern "
    "and propagates each file, or each line of it, as a message; processed files move to mqsiarchive "
    "(or are deleted), failed ones to mqsibackout.",
    outputs=(
        Terminal("out", "out", "Out"),
        Terminal("endOfData", "out", "End of Data"),
        Terminal("failure", "failure", "Failure"),
        Terminal("catch", "catch", "Catch"),
    ),
    properties=(
        Property(
            "directory",
            "string",
            "Input directory",
            required=True,
            description="The directory polled: absolute, or relative to the first file root; it must lie "
            "below a file root (FLOWBROKER_FILE_ROOTS).",
        ),
        Property(
            "filePattern",
            "string",
            "File name or pattern",
            default="*",
            description="Which file names are processed: * matches any characters, ? one.",
        ),
        Property(
            "recordDetection",
            "enum",
            "Record detection",
            default="wholeFile",
            enum=("wholeFile", "delimited", "fixedLength"),
            description="wholeFile: the file is one message; delimited: each line (LF or CR LF ended) is one; "
            "fixedLength: each run of Length bytes is one.",
        ),
        Property(
            "recordLength",
            "integer",
            "Length (bytes)",
            default=80,
            minimum=1,
            maximum=MAX_RECORD_LENGTH,
            description="With fixedLength record detection, the bytes in each record (1 byte to 100 MB). "
            "When the file's size is not a multiple of it, the last record is the shorter rest of the "
            "file and is propagated like the others (a parser that needs the whole record fails it, and "
            "the file goes to mqsibackout after the records before it).",
        ),
        Property(
            "actionOnSuccess",
            "enum",
            "Action on successful processing",
            default="archive",
            enum=("archive", "archiveWithTimestamp", "delete"),
            description="Move the processed file to mqsiarchive (replacing one of the same name), move it "
            "there with a time stamp prefixed, or delete it.",
        ),
        Property(
            "pollingInterval",
            "integer",
            "Polling interval (ms)",
            default=5000,
            minimum=10,
            maximum=3_600_000,
            description="How long the node waits after finding no file before it looks again.",
        ),
        Property(
            "maxFileSize",
            "integer",
            "Largest file (bytes)",
            default=64 * 1024 * 1024,
            minimum=1,
            description="A larger file is not read: it goes to mqsibackout.",
        ),
        Property(
            "messageDomain",
            "enum",
            "Message domain",
            default="BLOB",
            enum=("BLOB", "XMLNSC", "XMLNS", "XML", "JSON", "MRM"),
            description="The domain each message body is parsed in.",
        ),
        Property("messageSet", "string", "Message set", default="", description="Message set (MRM)."),
        Property("messageType", "string", "Message type", default="", description="Message type (MRM)."),
        Property("messageFormat", "string", "Message format", default="", description="Format (MRM)."),
    ),
)


class Node(BaseNode):
    """The polling loop of each flow thread of the node."""

    SPEC = SPEC

    def prepare(self) -> None:
        props = self.properties
        problem = files.directory_problem(str(props.get("directory") or ""))
        if problem:
            raise DeployProblem(problem, property="directory")
        pattern = str(props.get("filePattern") or "*").strip()
        problem = files.file_name_problem(pattern, pattern=True)
        if problem:
            raise DeployProblem(problem, property="filePattern")
        self.directory = str(props["directory"]).strip()
        self.pattern = pattern
        self.detection = str(props.get("recordDetection") or "wholeFile")
        self.record_length = _record_length(props.get("recordLength", 80))
        self.on_success = str(props.get("actionOnSuccess") or "archive")
        self.poll_s = int(props.get("pollingInterval") or 5000) / 1000.0
        self.max_size = int(props.get("maxFileSize") or 64 * 1024 * 1024)
        self.settle_ns = _settle_ms() * 1_000_000
        self._recovery = threading.Lock()
        self._recovered = False
        self.template = {
            "domain": str(props.get("messageDomain") or "BLOB"),
            "set": str(props.get("messageSet") or ""),
            "type": str(props.get("messageType") or ""),
            "format": str(props.get("messageFormat") or ""),
        }

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        # a message injected on this node (tests, the designer's "inject") starts the flow here
        self.propagate("out", assembly)

    # -- the flow threads ------------------------------------------------------------------------

    def open_input(self, flow: FlowServices) -> _Directory:
        return _Directory(self, flow)

    def _recover(self, directory: Path, transit: Path) -> None:
        """Put back the files a stopped process had claimed but not finished, to be processed again."""
        for name in self._candidates(transit):
            if not (directory / name).exists():
                os.replace(transit / name, directory / name)
                self.flow.log(f"{self.name}: file {name} left in {files.TRANSIT} is processed again")

    def _candidates(self, directory: Path, settle_ns: int = 0) -> list[str]:
        """The files to process, oldest first; with ``settle_ns``, none modified more recently than
        that (a file still being written is taken at a later poll, whole)."""
        names: list[tuple[float, str]] = []
        now = time.time_ns()
        with os.scandir(directory) as entries:
            for entry in entries:
                if not fnmatch.fnmatchcase(entry.name, self.pattern) or entry.name.startswith("."):
                    continue
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode) and now - info.st_mtime_ns >= settle_ns:
                    names.append((info.st_mtime, entry.name))
        return [name for _, name in sorted(names)]

    def _read(self, claimed: Path) -> tuple[bytes, float]:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(claimed, flags)
        except OSError as exc:
            raise NodeError(f"cannot read {claimed.name}: {exc.strerror or exc}", number=3320) from exc
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise NodeError(f"{claimed.name} is not a regular file", number=3320)
            if info.st_size > self.max_size:
                raise NodeError(
                    f"{claimed.name} has {info.st_size} bytes, more than the node's largest file "
                    f"({self.max_size})",
                    number=3321,
                )
            with os.fdopen(fd, "rb", closefd=False) as source:
                data = source.read(self.max_size + 1)
            if len(data) > self.max_size:
                raise NodeError(f"{claimed.name} grew past the node's largest file", number=3321)
            return data, info.st_mtime
        except OSError as exc:
            raise NodeError(f"cannot read {claimed.name}: {exc.strerror or exc}", number=3320) from exc
        finally:
            os.close(fd)

    def _back_out_file(self, directory: Path, name: str, claimed: Path, reason: str) -> None:
        flow = self.flow
        try:
            backout = files.subdirectory(directory, files.BACKOUT)
            os.replace(claimed, backout / name)
            flow.log(f"{self.name}: file {name} moved to {files.BACKOUT}: {reason}")
        except (OSError, NodeError) as exc:
            flow.log(
                f"{self.name}: file {name} failed ({reason}) and cannot be moved to {files.BACKOUT}: {exc}"
            )


@dataclasses.dataclass
class _Record:
    """One message of a claimed file: a record, the whole file, or its end of data."""

    directory: Path
    name: str
    claimed: Path
    modified: float
    number: int
    offset: int
    body: bytes
    end: bool = False

    def message(self) -> ArrivedMessage:
        return ArrivedMessage(ArrivedDescriptor(persistence=1), {}, self.body)


class _Directory:
    """One flow thread's polling of the node's directory: the messages of the next file it claims;
    archives (or deletes) a file all of whose messages were processed, backs out the others."""

    transactional = True

    def __init__(self, node: Node, flow: FlowServices) -> None:
        self.node = node
        self.flow = flow
        self.directory = files.confined_directory(node.directory, flow.file_roots())
        self.transit = files.subdirectory(self.directory, files.TRANSIT)
        with node._recovery:
            if not node._recovered:
                node._recover(self.directory, self.transit)
                node._recovered = True
        self.waiting: list[str] = []
        self.failed = ""

    def next(self) -> list[_Record]:
        node = self.node
        if not self.waiting:
            self.waiting = node._candidates(self.directory, node.settle_ns)
            if not self.waiting:
                self.flow.stop.wait(node.poll_s)
                return []
        name = self.waiting.pop(0)
        claimed = self.transit / name
        try:
            os.rename(self.directory / name, claimed)
        except FileNotFoundError:
            return []  # another flow thread took it
        try:
            data, modified = node._read(claimed)
        except NodeError as exc:
            node._back_out_file(self.directory, name, claimed, str(exc))
            return []
        if node.detection == "delimited":
            chunks = _records(data)
        elif node.detection == "fixedLength":
            chunks = _fixed_records(data, node.record_length)
        else:
            chunks = [(0, data)]
        found = [
            _Record(self.directory, name, claimed, modified, number, offset, body)
            for number, (offset, body) in enumerate(chunks, 1)
        ]
        if node.is_connected("endOfData"):
            found.append(
                _Record(self.directory, name, claimed, modified, len(chunks) + 1, len(data), b"", end=True)
            )
        self.failed = ""
        return found

    def assembly(self, record: _Record) -> tuple[str, Assembly]:
        assembly = self.flow.build_assembly(record.message(), self.node.template)  # type: ignore[arg-type]
        self._describe(assembly, record)
        return ("endOfData" if record.end else "out"), assembly

    def _describe(self, assembly: Assembly, record: _Record) -> None:
        _describe(
            assembly.local_environment,
            record.directory,
            record.name,
            record.modified,
            record.number,
            record.offset,
            self.node.pattern,
        )

    def failure_assembly(self, record: _Record, assembly: Assembly | None, errors: Element) -> Assembly:
        """The record as it was read (in the node's domain, as BLOB when even the assembly could
        not be built) with its LocalEnvironment.File and the exception list."""
        message = record.message()
        try:
            built = self.flow.build_assembly(message, self.node.template)  # type: ignore[arg-type]
        except Exception:
            built = self.flow.build_assembly(message, {"domain": "BLOB"})  # type: ignore[arg-type]
        self._describe(built, record)
        return built.replace(exception_list=errors)

    def unhandled(self, record: _Record, errors: Element, note: str) -> bool:
        self.flow.log(f"{self.node.name}: {describe_exception_list(errors)}")
        self.failed = "the end of data message failed" if record.end else f"record {record.number} failed"
        return False

    def done(self, records: list[_Record], complete: bool) -> None:
        first = records[0]
        directory, name, claimed = first.directory, first.name, first.claimed
        if not complete:
            self.node._back_out_file(directory, name, claimed, self.failed)
            return
        try:
            if self.node.on_success == "delete":
                claimed.unlink()
            else:
                archive = files.subdirectory(directory, files.ARCHIVE)
                stamp = (
                    time.strftime("%Y%m%d%H%M%S_", time.gmtime()) if self.node.on_success != "archive" else ""
                )
                os.replace(claimed, archive / f"{stamp}{name}")
        except OSError as exc:
            self.flow.log(f"{self.node.name}: processed {name} but cannot archive it: {exc}")

    def close(self) -> None:
        pass


def _records(data: bytes) -> list[tuple[int, bytes]]:
    """(offset, line) of each LF- or CR LF-ended line; a last line without its end counts too."""
    found: list[tuple[int, bytes]] = []
    offset = 0
    while offset < len(data):
        end = data.find(b"\n", offset)
        stop = len(data) if end < 0 else end + 1
        line = data[offset:stop]
        if line.endswith(b"\n"):
            line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
        found.append((offset, line))
        offset = stop
    return found


def _fixed_records(data: bytes, length: int) -> list[tuple[int, bytes]]:
    """(offset, bytes) of each ``length``-byte record; a shorter rest at the end is the last record."""
    return [(offset, data[offset : offset + length]) for offset in range(0, len(data), length)]


#: How long a file must go unmodified before a FileInput takes it (ms): a writer that creates the
#: file and then fills it is not read half way. ``FLOWBROKER_FILE_SETTLE_MS``, read on deploy.
SETTLE_MS_DEFAULT = 200


def _settle_ms() -> int:
    text = os.environ.get("FLOWBROKER_FILE_SETTLE_MS", "").strip()
    if not text:
        return SETTLE_MS_DEFAULT
    if not text.isdigit() or int(text) > 3_600_000:
        raise DeployProblem(
            f"FLOWBROKER_FILE_SETTLE_MS is {text!r}: give whole milliseconds from 0 to 3600000"
        )
    return int(text)


def _record_length(value: object) -> int:
    """The fixed record length, refused (naming ``recordLength``) outside 1 byte to 100 MB."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise DeployProblem("the record length must be a whole number of bytes", property="recordLength")
    try:
        length = int(value)
    except ValueError:
        raise DeployProblem(
            f"the record length {value!r} is not a whole number of bytes", property="recordLength"
        ) from None
    if not 1 <= length <= MAX_RECORD_LENGTH:
        raise DeployProblem(
            f"the record length must be 1 to {MAX_RECORD_LENGTH} bytes, not {length}", property="recordLength"
        )
    return length


def _describe(
    local: Element, directory: Path, name: str, modified: float, number: int, offset: int, pattern: str
) -> None:
    file = local.add("File")
    file.add("Directory", str(directory))
    file.add("Name", name)
    file.add("LastModified", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(modified)))
    file.add("Record", number)
    file.add("Offset", offset)
    match = _wildcard_match(pattern, name)
    if match is not None:
        local.add("Wildcard").add("WildcardMatch", match)


def _wildcard_match(pattern: str, name: str) -> str | None:
    """What the pattern's single * matched in ``name`` (ACE's WildcardMatch), else None."""
    if pattern.count("*") != 1 or "?" in pattern or "[" in pattern:
        return None
    head, tail = pattern.split("*")
    if name.startswith(head) and name.endswith(tail) and len(name) >= len(head) + len(tail):
        return name[len(head) : len(name) - len(tail)]
    return None
