"""A flow's test cases: run them on a private engine, add one made from messages seen."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from pydantic import Field

from flowbroker.api.deps import DbSession, FlowEditor
from flowbroker.api.errors import AUTHENTICATED, responses
from flowbroker.api.schemas import Body, Id, Out
from flowbroker.services import flow_tests, flows

router = APIRouter(prefix="/api/flows", tags=["flow tests"], responses=responses(*AUTHENTICATED))


class TestRunIn(Body):
    cases: list[Annotated[str, Field(max_length=200)]] = Field(
        default_factory=list, max_length=500, description="names of the cases to run (none: all)"
    )
    version: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="the flow version (default: current)"
    )


class DifferenceOut(Out):
    path: str
    kind: str = Field(
        description="changed, missing (expected, not there) or unexpected (there, not expected)"
    )
    expected: str | None
    actual: str | None


class MessageResultOut(Out):
    queue: str
    node: str = Field(default="", description="the output node the message was expected from, if named")
    file: str = Field(
        default="",
        description="for a FileOutput node's expectation: the file written (else the name expected)",
    )
    index: int
    passed: bool
    problem: str
    differences: list[DifferenceOut]
    actual: dict[str, Any] | None = Field(
        description="the message that arrived as the message view shows it, when it differs from the expected"
    )


class CaseResultOut(Out):
    flow: str
    case: str
    passed: bool
    seconds: float
    error: str
    problems: list[str]
    messages: list[MessageResultOut]


class TestRunOut(Out):
    flow: str
    version: int | None
    passed: bool
    seconds: float
    results: list[CaseResultOut]


class CaseMessageIn(Body):
    """A message in a test file's form: body as text (or base64, hex), MQMD fields, RFH2 folders."""

    body: Any = None
    body_base64: str | None = None
    body_hex: str | None = None
    mqmd: dict[str, Any] | None = None
    rfh2: dict[str, dict[str, Any]] | None = None
    properties: dict[str, Any] | None = None
    domain: str | None = None

    def as_case_json(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True, by_alias=True)


class TestCaseIn(Body):
    """A case from an input message and what came out, per queue (e.g. taken from a recording)."""

    name: Annotated[str, Field(min_length=1, max_length=200)]
    input_node: Annotated[str, Field(max_length=64)] | None = None
    input: CaseMessageIn
    outputs: dict[str, list[CaseMessageIn]] = Field(
        description="queue name → the messages expected on it, in order (an empty list: none may arrive)"
    )
    ignore: list[Annotated[str, Field(max_length=500)]] = Field(
        default_factory=list, max_length=200, description="tree paths left out of the comparison"
    )


@router.post("/{flow_id}/tests/run", responses=responses(404, 409, 422, 503), response_model=TestRunOut)
def run_tests(flow_id: Id, body: TestRunIn, user: FlowEditor, session: DbSession) -> Any:
    """Run the flow's test cases on a private queue manager and execution group; each case's result.

    Takes as long as starting that engine and running the cases (seconds); one run at a time.
    """
    flow = flows.get(session, flow_id)
    document = dict(flows.version(session, flow, body.version).document)
    session.close()  # the run takes seconds: no connection is held meanwhile
    return flow_tests.run(document, body.cases or None)


class AddedTestOut(Out):
    flow_id: int
    version: int
    case: dict[str, Any]


@router.post(
    "/{flow_id}/tests", responses=responses(404, 409, 422), status_code=201, response_model=AddedTestOut
)
def add_test(flow_id: Id, body: TestCaseIn, request: Request, user: FlowEditor, session: DbSession) -> Any:
    """Add a test case made from an input message and the output messages seen; the flow's next version.

    The run-dependent MQMD fields (MsgId, PutDate, PutTime, Expiry, BackoutCount) are ignored
    besides the paths given.
    """
    from flowbroker.flowtests.cases import case_from_views

    case = case_from_views(
        body.name,
        body.input.as_case_json(),
        {queue: [m.as_case_json() for m in messages] for queue, messages in body.outputs.items()},
        input_node=body.input_node,
        ignore=body.ignore,
    )
    state = flow_tests.add_case(session, user.username, flow_id, case, lookup=request.app.state.node_lookup)
    return AddedTestOut(flow_id=state.id, version=state.current_version, case=case)
