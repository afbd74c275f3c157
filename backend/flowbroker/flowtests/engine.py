"""A private engine for flow tests: a repository, a queue manager and an execution group in a scratch directory.

One engine runs the tests of many flows: each flow is deployed to its group as a user would
deploy it, its cases put their input messages on the input node's queue (or write them as a file
into a FileInput node's directory below the engine's own file root, or send them to an HTTPInput
node on the group's own HTTP port and compare the answer) and take what arrives on the expected
queues and what FileOutput nodes write into their directories below that file root, and the flow
is undeployed before the next one. Nothing of it touches
a running system: the queue manager listens on a free loopback port and every file lives in the
scratch directory, removed at the end.
"""

from __future__ import annotations

import fnmatch
import os
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowbroker.flowtests.cases import (
    Expectation,
    MessageSetSetup,
    TestCase,
    TestSuite,
    canvas_nodes,
    starts_by,
    writes_files,
)
from flowbroker.flowtests.compare import Difference, UnparsableMessage, compare

ACTOR = "flowtest"


def case_timeout() -> float:
    """Seconds a case waits for its expected messages (FLOWBROKER_TEST_CASE_TIMEOUT, 1..600)."""
    try:
        value = float(os.environ.get("FLOWBROKER_TEST_CASE_TIMEOUT", "10"))
    except ValueError:
        value = 10.0
    return min(max(value, 1.0), 600.0)


def settle_time() -> float:
    """Seconds a case waits for messages it does not expect (FLOWBROKER_TEST_SETTLE, 0..10)."""
    try:
        value = float(os.environ.get("FLOWBROKER_TEST_SETTLE", "0.3"))
    except ValueError:
        value = 0.3
    return min(max(value, 0.0), 10.0)


@dataclass
class MessageResult:
    """One expected message of a queue: how the one that arrived differs (or why none could be compared)."""

    queue: str
    index: int
    differences: list[Difference] = field(default_factory=list)
    problem: str = ""
    #: The message that arrived, as the message view shows it (only when it differs).
    actual: dict[str, Any] | None = None
    #: The output node the message was expected from (its expectation names it), else "".
    node: str = ""
    #: For a FileOutput node's expectation: the file (its name as written, else as expected).
    file: str = ""

    @property
    def passed(self) -> bool:
        return not self.differences and not self.problem

    @property
    def where(self) -> str:
        """The output the message belongs to: ``node out (queue Q)``, or the queue, or HTTP reply."""
        return f"node {self.node} (queue {self.queue})" if self.node else self.queue

    @property
    def label(self) -> str:
        """How a report line names it: ``node out (queue Q) message 2``, ``node fo file a.xml``."""
        if self.file:
            return f"node {self.node} file {self.file}"
        return f"{self.where} message {self.index + 1}"

    def to_json(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "node": self.node,
            "file": self.file,
            "index": self.index,
            "passed": self.passed,
            "problem": self.problem,
            "differences": [d.to_json() for d in self.differences],
            "actual": self.actual,
        }


@dataclass
class CaseResult:
    flow: str
    case: str
    seconds: float = 0.0
    messages: list[MessageResult] = field(default_factory=list)
    #: Problems not tied to one expected message: a message too many, a flow that did not deploy.
    problems: list[str] = field(default_factory=list)
    #: ``error``: the case could not be run (deploy failed, engine gone); else pass or fail.
    error: str = ""

    @property
    def passed(self) -> bool:
        return not self.error and not self.problems and all(m.passed for m in self.messages)

    def report_lines(self) -> list[str]:
        """What went wrong, one line each (empty when the case passed)."""
        lines = [self.error] if self.error else []
        lines += self.problems
        for message in self.messages:
            where = message.label
            if message.problem:
                lines.append(f"{where}: {message.problem}")
            lines += [f"{where}: {d.describe()}" for d in message.differences]
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "flow": self.flow,
            "case": self.case,
            "passed": self.passed,
            "seconds": round(self.seconds, 3),
            "error": self.error,
            "problems": self.problems,
            "messages": [m.to_json() for m in self.messages],
        }


#: The largest file a case compares (a bigger one is reported, not read).
MAX_FILE_BYTES = 64 * 1024 * 1024

#: How much of a differing output message a result shows: its diff names every difference anyway.
VIEW_LIMITS_FIELDS = 2000
VIEW_LIMITS_BODY = 64 * 1024


def actual_view(message: Any, domain: str) -> dict[str, Any] | None:
    """The message view (trees with types and values, serialized body) of an output message, bounded."""
    from flowbroker_nodes.base import Assembly

    from flowbroker.flowtests.compare import root_of
    from flowbroker.runtime import message_view

    limits = message_view.Limits(max_fields=VIEW_LIMITS_FIELDS, max_body_bytes=VIEW_LIMITS_BODY)
    try:
        return message_view.view_assembly(Assembly(root_of(message.md, message.body, domain)), limits)
    except Exception:  # a body that does not parse: its problem is reported; the view is left out
        return None


#: The Content-Type of a test's HTTP request body by the input node's domain, unless the case sets one.
_CONTENT_TYPES = {
    "JSON": "application/json",
    "XMLNSC": "application/xml",
    "XMLNS": "application/xml",
    "XML": "application/xml",
}


def _free_port() -> int:
    """A loopback port free now, for the engine group's HTTP listener."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class TestEngine:
    """Start with ``with TestEngine() as engine:``; then :meth:`run_suite` for each flow."""

    __test__ = False  # not a pytest class

    def __init__(self, *, scratch: Path | None = None) -> None:
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._scratch = scratch
        self.data = Path()
        self.qm: Any = None
        self.worker: Any = None
        self.settings: Any = None
        self._repo: Any = None
        self.http_port = 0

    def __enter__(self) -> TestEngine:
        from flowbroker.commands.platform import prepare_repository
        from flowbroker.qm.harness import QueueManagerProcess
        from flowbroker.repository import db
        from flowbroker.settings import Settings
        from flowbroker.worker.harness import WorkerProcess

        if self._scratch is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="flowbroker-test-")
            self.data = Path(self._tmp.name)
        else:
            self.data = self._scratch
            self.data.mkdir(parents=True, exist_ok=True)
        try:
            self.settings = Settings(data=self.data, database_url="", admin_password="flow-tests-only-0000")
            prepare_repository(self.settings)
            self._repo = db.engine_from_settings(self.settings)
            self.qm = QueueManagerProcess(self.data, fsync=False).start()
            self.files.mkdir(exist_ok=True)
            self.http_port = _free_port()
            # the group's own environment: the scratch directory, its queue manager, not the caller's
            env = {
                "FLOWBROKER_DATA": str(self.data),
                "FLOWBROKER_DATABASE_URL": "",
                "FLOWBROKER_CELERY_BROKER": "",
                "FLOWBROKER_QM": "",
                "FLOWBROKER_FILE_ROOTS": str(self.files),
                "FLOWBROKER_HTTP_HOST": "127.0.0.1",
                "FLOWBROKER_HTTP_PORT": str(self.http_port),
            }
            self.worker = WorkerProcess(self.data, env=env).start(timeout=60)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.worker is not None:
            self.worker.stop(timeout=20)
        if self.qm is not None:
            self.qm.stop()
        if self._repo is not None:
            self._repo.dispose()
        if self._tmp is not None:
            self._tmp.cleanup()

    @property
    def files(self) -> Path:
        """The file root of the engine's group: FileInput directories of the flows lie below it."""
        return self.data / "files"

    def worker_log(self) -> str:
        return str(self.worker.log_tail(2000)) if self.worker is not None else ""

    # -- one flow ----------------------------------------------------------------------------------

    def run_suite(self, document: dict[str, Any], suite: TestSuite) -> list[CaseResult]:
        """Deploy ``document``, run every case of ``suite`` against it, undeploy it."""
        name = str(document.get("name"))
        document = {key: value for key, value in document.items() if key not in ("tests", "version")}
        started = time.monotonic()
        try:
            self._prepare(document, suite)
            deployment_id = self._deploy(document)
        except RuntimeError as exc:
            return [
                CaseResult(name, case.name, time.monotonic() - started, error=str(exc))
                for case in suite.cases
            ]
        try:
            results = [self._run_or_report(document, case) for case in suite.cases]
        finally:
            self._undeploy(deployment_id, timeout=0)
        return results

    def _session(self) -> Any:
        from flowbroker.repository import db

        return db.session_scope(db.session_factory(self._repo))

    def _prepare(self, document: dict[str, Any], suite: TestSuite) -> None:
        import sqlalchemy as sa

        from flowbroker.services import datasources
        from flowbroker.services.errors import NotFound

        for source in suite.data_sources:
            path = self.data / "datasources" / f"{document['name']}-{source.name}.db"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.unlink(missing_ok=True)
            url = f"sqlite:///{path}"
            engine = sa.create_engine(url)
            try:
                with engine.begin() as conn:
                    for statement in source.statements:
                        conn.execute(sa.text(statement))
            except sa.exc.SQLAlchemyError as exc:
                raise RuntimeError(
                    f"data source {source.name}: setup statement failed: {getattr(exc, 'orig', None) or exc}"
                ) from None
            finally:
                engine.dispose()
            with self._session() as session:
                try:
                    existing = datasources.by_name(session, source.name)
                    datasources.update(session, ACTOR, existing.id, {"url": url})
                except NotFound:
                    datasources.create(session, ACTOR, source.name, url, "flow test")
        for message_set in suite.message_sets:
            self._install_message_set(message_set)
        # the relative directories the flow's file nodes (in its subflows too) read and write
        for node in canvas_nodes(document).values():
            directory = str((node.get("properties") or {}).get("directory") or "").strip()
            wanted = starts_by(node) == "file" or writes_files(node)
            if wanted and directory and not Path(directory).is_absolute() and ".." not in directory:
                (self.files / directory).mkdir(parents=True, exist_ok=True)
        with self.qm.client() as qm:
            for subscription in suite.subscriptions:
                qm.define_queue(subscription.queue, replace=True)
                qm.subscribe(subscription.topic, subscription.queue, name=f"flowtest.{subscription.queue}")

    def _install_message_set(self, setup: MessageSetSetup) -> None:
        """Import the copybook and store it as the set's current version, as `msgset import --save` does."""
        from esql.domains import DomainError

        from flowbroker.formats.copybook import ImportFault, library_beside, source_text
        from flowbroker.formats.importing import import_layout, merge
        from flowbroker.services import messagesets
        from flowbroker.services.errors import ServiceError

        try:
            text = source_text(setup.copybook.read_bytes())
            fragment = import_layout(
                text,
                "copybook",
                setup.name,
                setup.type or None,
                str(setup.copybook),
                library_beside(str(setup.copybook)),
            )
            with self._session() as session:
                messagesets.upsert(session, ACTOR, setup.name, merge(None, fragment), "flow test")
        except (OSError, ImportFault, DomainError, ServiceError) as exc:
            raise RuntimeError(f"message set {setup.name}: {exc}") from None

    def _deploy(self, document: dict[str, Any], timeout: float = 60.0) -> int:
        from flowbroker.services import deploy
        from flowbroker.services.errors import ServiceError

        try:
            with self._session() as session:
                row = deploy.create(session, ACTOR, document=document, data=self.data, define_queues=True)
                deployment_id, status, diagnostics = row.id, row.status, row.diagnostics
        except ServiceError as exc:
            details = "; ".join(
                f"{p.get('node') or p.get('pointer') or 'flow'}: {p.get('message')}"
                for p in (exc.detail if isinstance(exc.detail, list) else [])
                if isinstance(p, dict)
            )
            raise RuntimeError(f"the flow was refused: {exc}{': ' + details if details else ''}") from None
        deadline = time.monotonic() + timeout
        while status in ("pending", "compiling") and time.monotonic() < deadline:
            time.sleep(0.05)
            with self._session() as session:
                found = deploy.get(session, deployment_id)
                status, diagnostics = found.status, found.diagnostics
        if status != "running":
            problems = "; ".join(str(d.get("message", "")) for d in diagnostics or [])
            raise RuntimeError(
                f"the flow did not start: deployment {status}{': ' + problems if problems else ''}"
            )
        return int(deployment_id)

    def _undeploy(self, deployment_id: int, timeout: float = 30.0) -> None:
        """Undeploy; without waiting, since the group carries out its control tasks in order.

        The next flow's deployment is seen running only after this undeploy was carried out, so
        two flows reading one queue never run at once.
        """
        from flowbroker.services import deploy

        with self._session() as session:
            deploy.undeploy(session, ACTOR, deployment_id, data=self.data)
        if timeout <= 0:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._session() as session:
                if deploy.get(session, deployment_id).status in ("undeployed", "failed"):
                    return
            time.sleep(0.05)

    # -- one case ----------------------------------------------------------------------------------

    def _run_or_report(self, document: dict[str, Any], case: TestCase) -> CaseResult:
        """:meth:`run_case`, with a queue manager that fails meanwhile reported as the case's error."""
        from flowbroker.qm.protocol import QMError

        try:
            return self.run_case(document, case)
        except (QMError, OSError) as exc:
            return CaseResult(
                str(document.get("name")), case.name, error=f"the test engine's queue manager: {exc}"
            )

    def run_case(self, document: dict[str, Any], case: TestCase) -> CaseResult:
        from flowbroker.qm.protocol import MessageDescriptor

        result = CaseResult(str(document.get("name")), case.name)
        started = time.monotonic()
        node = next(n for n in document["nodes"] if n.get("id") == case.input_node)
        with self.qm.client() as qm:
            for expectation in case.expect:
                if expectation.writes_files:
                    self._clear_files(expectation.directory)
                else:
                    self._drain(qm, expectation.queue)
            message = case.input
            if case.input_file:
                self._write_file(str(node["properties"]["directory"]), case.input_file, message.body)
            elif case.request is not None:
                result.messages.append(self._call(case))
            else:
                qm.put(
                    str(node["properties"]["queueName"]),
                    message.wire_body(),
                    MessageDescriptor(**message.descriptor_fields()),
                    properties=message.properties or None,
                )
            deadline = time.monotonic() + case_timeout()
            by_queue: dict[str, list[Expectation]] = {}
            for expectation in case.expect:
                if not expectation.writes_files:
                    by_queue.setdefault(expectation.queue, []).append(expectation)
            for expectations in by_queue.values():
                self._collect(qm, expectations, case, deadline, result)
        for expectation in case.expect:
            if expectation.writes_files:
                self._collect_files(expectation, case, deadline, result)
        result.seconds = time.monotonic() - started
        return result

    def _call(self, case: TestCase) -> MessageResult:
        """Send the case's HTTP request to the group's listener; how the answer differs from the reply."""
        import httpx

        from flowbroker.flowtests.compare import Difference
        from flowbroker.qm.protocol import MessageDescriptor

        assert case.request is not None and case.reply is not None
        request, reply = case.request, case.reply
        outcome = MessageResult("HTTP reply", 0)
        headers = dict(request.headers)
        if case.input.body and not any(name.lower() == "content-type" for name in headers):
            headers["Content-Type"] = _CONTENT_TYPES.get(case.input.domain, "application/octet-stream")
        try:
            answer = httpx.request(
                request.method,
                f"http://127.0.0.1:{self.http_port}{request.path}",
                content=case.input.body,
                headers=headers,
                timeout=case_timeout(),
            )
        except httpx.HTTPError as exc:
            outcome.problem = f"{request.method} {request.path}: no answer: {exc}"
            return outcome
        if answer.status_code != reply.status:
            outcome.differences.append(
                Difference("HTTP.StatusCode", "changed", str(reply.status), str(answer.status_code))
            )
        for name, value in reply.headers:
            got = answer.headers.get(name)
            if got != value:
                kind = "missing" if got is None else "changed"
                outcome.differences.append(Difference(f"HTTP.Header.{name}", kind, value, got))
        if reply.message is not None:
            try:
                outcome.differences += compare(
                    reply.message, MessageDescriptor(), answer.content, case.ignore
                )
            except UnparsableMessage as exc:
                outcome.problem = f"{exc} (answer {answer.status_code}: {answer.text[:200]!r})"
        return outcome

    def _write_file(self, directory: str, name: str, body: bytes) -> None:
        """Write the input file aside (a hidden name the node skips) and rename it into place whole."""
        target = self.files / directory
        target.mkdir(parents=True, exist_ok=True)
        aside = target / f".{name}.flowtest"
        aside.write_bytes(body)
        os.replace(aside, target / name)

    def _written_files(self, directory: str) -> list[Path]:
        """The files in place in an output directory (not hidden, not in mqsitransit or mqsiarchive)."""
        where = self.files / directory
        if not where.is_dir():
            return []
        return sorted(
            (p for p in where.iterdir() if p.is_file() and not p.is_symlink() and not p.name.startswith(".")),
            key=lambda p: p.name,
        )

    def _clear_files(self, directory: str) -> None:
        """Remove what an earlier case left in an output directory, so what is found was written now."""
        for path in self._written_files(directory):
            path.unlink(missing_ok=True)

    def _collect_files(
        self, expectation: Expectation, case: TestCase, deadline: float, result: CaseResult
    ) -> None:
        """Wait for the files ``expectation`` names in its directory and compare their content.

        Each expected file takes the first file written whose name matches it (in name order);
        a file no entry takes is reported as not expected, naming the node and the file.
        """
        from flowbroker.qm.protocol import MessageDescriptor

        def assign(found: list[Path]) -> list[Path | None]:
            free = list(found)
            taken: list[Path | None] = []
            for wanted in expectation.files:
                match = next((p for p in free if fnmatch.fnmatchcase(p.name, wanted.name)), None)
                if match is not None:
                    free.remove(match)
                taken.append(match)
            return taken

        while time.monotonic() < deadline and None in assign(self._written_files(expectation.directory)):
            time.sleep(0.05)
        time.sleep(settle_time())
        found = self._written_files(expectation.directory)
        taken = assign(found)
        for n, (wanted, path) in enumerate(zip(expectation.files, taken, strict=True)):
            outcome = MessageResult("", n, node=expectation.node, file=path.name if path else wanted.name)
            if path is None:
                outcome.problem = f"no file was written within {case_timeout():.0f}s"
            else:
                try:
                    size = path.stat().st_size
                    if size > MAX_FILE_BYTES:
                        outcome.problem = (
                            f"the file is {size:,} bytes; a test compares at most {MAX_FILE_BYTES:,}"
                        )
                        result.messages.append(outcome)
                        continue
                    content = path.read_bytes()
                    outcome.differences = compare(wanted.content, MessageDescriptor(), content, case.ignore)
                except OSError as exc:
                    outcome.problem = f"cannot read {path.name}: {exc.strerror or exc}"
                except UnparsableMessage as exc:
                    outcome.problem = str(exc).replace("output message", "file")
            result.messages.append(outcome)
        for path in found:
            if path not in taken:
                result.problems.append(
                    f"node {expectation.node} file {path.name}: written, but no expected file names it"
                )

    @staticmethod
    def _drain(qm: Any, queue: str) -> None:
        from flowbroker.qm.protocol import QMError

        try:
            qm.purge(queue)
        except QMError:
            qm.define_queue(queue)

    def _collect(
        self,
        qm: Any,
        expectations: list[Expectation],
        case: TestCase,
        deadline: float,
        result: CaseResult,
    ) -> None:
        """Take what arrives on the queue of ``expectations`` and compare it.

        Several output nodes may put to one queue: each message that arrives goes to the first
        expectation still waiting whose next message it matches (else to the first still waiting),
        so the report names the node a wrong message was expected from.
        """
        queue = expectations[0].queue
        wanted_total = sum(len(e.messages) for e in expectations)
        arrived: list[Any] = []
        while len(arrived) < wanted_total:
            wait = deadline - time.monotonic()
            if wait <= 0:
                break
            message = qm.get(queue, wait=min(wait, 1.0))
            if message is not None:
                arrived.append(message)
        extra = qm.get(queue, wait=settle_time())
        given: list[list[Any]] = [[] for _ in expectations]
        for got in arrived:
            waiting = [n for n, e in enumerate(expectations) if len(given[n]) < len(e.messages)]
            chosen = next(
                (n for n in waiting if self._matches(expectations[n].messages[len(given[n])], got, case)),
                waiting[0],
            )
            given[chosen].append(got)
        for expectation, messages in zip(expectations, given, strict=True):
            for n, wanted in enumerate(expectation.messages):
                outcome = MessageResult(queue, n, node=expectation.node)
                if n >= len(messages):
                    outcome.problem = (
                        f"no message arrived within {case_timeout():.0f}s "
                        f"({len(messages)} of {len(expectation.messages)} expected)"
                    )
                else:
                    got = messages[n]
                    try:
                        outcome.differences = compare(wanted, got.md, got.body, case.ignore, got.properties)
                    except UnparsableMessage as exc:
                        outcome.problem = str(exc)
                    if not outcome.passed:
                        outcome.actual = actual_view(got, wanted.domain)
                result.messages.append(outcome)
        if extra is not None:
            more = 1
            while qm.get(queue) is not None:
                more += 1
            result.problems.append(f"{queue}: {more} more message(s) than the {wanted_total} expected")

    @staticmethod
    def _matches(wanted: Any, got: Any, case: TestCase) -> bool:
        try:
            return not compare(wanted, got.md, got.body, case.ignore, got.properties)
        except UnparsableMessage:
            return False

    # -- making a case -----------------------------------------------------------------------------

    def record_case(
        self,
        document: dict[str, Any],
        suite: TestSuite,
        name: str,
        input_node: str,
        message: Any,
        queues: list[str],
        *,
        ignore: list[str] | None = None,
    ) -> dict[str, Any]:
        """Run ``message`` (a :class:`TestMessage`) through the flow and make a case of what came out.

        Every message that arrives on ``queues`` within the settle time becomes an expected one;
        the case is what :func:`flowbroker.flowtests.cases.case_from_messages` makes of them.
        """
        from flowbroker.flowtests.cases import case_from_messages
        from flowbroker.qm.protocol import Message, MessageDescriptor

        document = {key: value for key, value in document.items() if key not in ("tests", "version")}
        self._prepare(document, suite)
        deployment_id = self._deploy(document)
        node = next(n for n in document["nodes"] if n.get("id") == input_node)
        outputs: dict[str, list[Any]] = {}
        try:
            with self.qm.client() as qm:
                for queue in queues:
                    self._drain(qm, queue)
                md = MessageDescriptor(**message.descriptor_fields())
                qm.put(
                    str(node["properties"]["queueName"]),
                    message.wire_body(),
                    md,
                    properties=message.properties or None,
                )
                for queue in queues:
                    first = qm.get(queue, wait=case_timeout())
                    outputs[queue] = [first] if first is not None else []
                    while first is not None and (more := qm.get(queue, wait=settle_time())) is not None:
                        outputs[queue].append(more)
        finally:
            self._undeploy(deployment_id)
        from flowbroker.flowtests.cases import MQMD_FIELDS

        given = {MQMD_FIELDS[key]: value for key, value in message.mqmd.items()}
        sent = Message(MessageDescriptor(**given), message.properties, message.body)
        case = case_from_messages(
            name, sent, outputs, input_node=input_node, ignore=ignore, domain=message.domain
        )
        if message.rfh2 is not None:
            case["input"]["rfh2"] = message.rfh2
        return case
