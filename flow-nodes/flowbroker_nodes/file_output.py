"""FileOutput: writes message bodies to a file in a directory below the file roots, as ACE's node.

With record definition ``wholeFile`` each message is one file: written in the directory's
``mqsitransit`` subdirectory, then moved into place. With ``unmodifiedData`` each message is a
record appended to the file in ``mqsitransit``; a message arriving on the ``finish`` (Finish
File) terminal moves that file into place and goes on to ``endOfData``. A file already in place
is replaced, moved to ``mqsiarchive`` first, or makes the write fail, as the output file action
says. ``LocalEnvironment.Destination.File.Directory`` and ``.Name`` override the properties,
and ``LocalEnvironment.WrittenDestination.File`` tells the nodes on ``out`` / ``endOfData``
what was written. A ``*`` in the file name is replaced by ``LocalEnvironment.Wildcard.WildcardMatch``
(what a FileInput node matched), so a file can be written back under its own name.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

from flowbroker_nodes import files
from flowbroker_nodes.base import Assembly, DeployProblem, NodeError, field, field_value
from flowbroker_nodes.base import Node as BaseNode
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

SPEC = NodeSpec(
    type="FileOutput",
    role="output",
    label="FileOutput",
    category="output",
    icon="file-out",
    extra={"testOutput": "file"},
    description="Writes the message body as a whole file, or appends it as a record to a file that a "
    "message on Finish File completes, in a directory below the execution group's file roots.",
    inputs=(Terminal("in", "in", "In"), Terminal("finish", "in", "Finish File")),
    outputs=(
        Terminal("out", "out", "Out"),
        Terminal("endOfData", "out", "End of Data"),
        Terminal("failure", "failure", "Failure"),
    ),
    properties=(
        Property(
            "directory",
            "string",
            "Directory",
            required=True,
            description="Where files are written: absolute, or relative to the first file root; it must "
            "exist and lie below a file root (FLOWBROKER_FILE_ROOTS). "
            "LocalEnvironment.Destination.File.Directory overrides it.",
        ),
        Property(
            "fileName",
            "string",
            "File name or pattern",
            default="",
            description="One file name; a * in it is replaced by LocalEnvironment.Wildcard.WildcardMatch. "
            "LocalEnvironment.Destination.File.Name overrides it; left empty, every message must name its "
            "file there (as ACE allows), else it goes to failure.",
        ),
        Property(
            "recordDefinition",
            "enum",
            "Record definition",
            default="wholeFile",
            enum=("wholeFile", "unmodifiedData"),
            description="wholeFile: each message is a file; unmodifiedData: each message is appended as is, "
            "and a message on Finish File completes the file.",
        ),
        Property(
            "outputFileAction",
            "enum",
            "Output file action",
            default="replace",
            enum=("replace", "archive", "fail"),
            description="When the file already exists: replace it, move it to mqsiarchive first (its name "
            "given a time stamp), or fail.",
        ),
    ),
)


class Node(BaseNode):
    """See the module docstring; writes and moves of one file are serialised across flow threads."""

    SPEC = SPEC

    def prepare(self) -> None:
        props = self.properties
        problem = files.directory_problem(str(props.get("directory") or ""))
        if problem:
            raise DeployProblem(problem, property="directory")
        name = str(props.get("fileName") or "").strip()
        problem = files.file_name_problem(name.replace("*", "x")) if name else ""
        if problem or name.count("*") > 1:
            raise DeployProblem(problem or "at most one * in the file name", property="fileName")
        self.directory = str(props["directory"]).strip()
        self.file_name = name
        self.append = props.get("recordDefinition") == "unmodifiedData"
        self.action = str(props.get("outputFileAction") or "replace")
        self._lock = threading.Lock()

    def evaluate(self, assembly: Assembly, terminal: str) -> None:
        directory, name = self._target(assembly)
        if terminal == "finish":
            with self._lock:
                staged = files.subdirectory(directory, files.TRANSIT) / name
                done = self._move_into_place(staged, directory, name) if staged.exists() else ""
            self.propagate("endOfData", self._written(assembly, directory, name, done or "None"))
            return
        _, _, body = self.flow.message_parts(assembly.root)
        with self._lock:
            transit = files.subdirectory(directory, files.TRANSIT)
            if self.append:
                _write(transit / name, body, append=True)
                action = "Append"
            else:
                staged = transit / f".{name}.{uuid.uuid4().hex}"
                _write(staged, body, append=False)
                try:
                    action = self._move_into_place(staged, directory, name)
                finally:
                    staged.unlink(missing_ok=True)
        self.propagate("out", self._written(assembly, directory, name, action))

    def _target(self, assembly: Assembly) -> tuple[Path, str]:
        local = assembly.local_environment
        directory = str(field_value(local, "Destination", "File", "Directory") or "") or self.directory
        name = str(field_value(local, "Destination", "File", "Name") or "") or self.file_name
        if not name:
            raise NodeError(
                f"{self.name}: no file name: the node's fileName is empty and "
                "LocalEnvironment.Destination.File.Name is not set",
                number=3303,
                inserts=("",),
            )
        if "*" in name:
            match = str(field_value(local, "Wildcard", "WildcardMatch") or "")
            name = name.replace("*", match, 1)
        return files.confined_directory(directory, self.flow.file_roots()), files.safe_file_name(name)

    def _move_into_place(self, staged: Path, directory: Path, name: str) -> str:
        try:
            return self._replace(staged, directory, name)
        except OSError as exc:
            raise NodeError(
                f"cannot move the file into place as {directory / name}: {exc.strerror or exc}", number=3312
            ) from exc

    def _replace(self, staged: Path, directory: Path, name: str) -> str:
        target = directory / name
        exists = target.exists() or target.is_symlink()
        if exists and self.action == "fail":
            raise NodeError(f"file {target} already exists (output file action: fail)", number=3310)
        if exists and self.action == "archive":
            archive = files.subdirectory(directory, files.ARCHIVE)
            stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
            os.replace(target, archive / f"{stamp}_{uuid.uuid4().hex[:8]}_{name}")
        os.replace(staged, target)
        return "Replace" if exists else "Create"

    def _written(self, assembly: Assembly, directory: Path, name: str, action: str) -> Assembly:
        local = assembly.local_environment.copy()
        written = field(local, "WrittenDestination") or local.add("WrittenDestination")
        found = written.child("File")
        if found is not None:
            found.detach()
        file = written.add("File")
        file.add("Directory", str(directory))
        file.add("Name", name)
        file.add("Action", action)
        return assembly.replace(local_environment=local)


def _write(path: Path, data: bytes, *, append: bool) -> None:
    """Write ``data`` to ``path`` without following a symbolic link planted there."""
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    flags |= os.O_APPEND if append else os.O_EXCL
    try:
        fd = os.open(path, flags, 0o640)
    except OSError as exc:
        raise NodeError(f"cannot write {path}: {exc.strerror or exc}", number=3311) from exc
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
    except OSError as exc:
        raise NodeError(f"cannot write {path}: {exc.strerror or exc}", number=3311) from exc
