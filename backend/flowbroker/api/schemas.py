"""Request and response bodies of the configuration manager's own resources (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Path
from flowbroker_nodes.spec import PropertyType, TerminalKind
from pydantic import BaseModel, ConfigDict, Field, Strict, StrictBool, field_validator
from pydantic.alias_generators import to_camel
from pydantic.json_schema import SkipJsonSchema

Role = Literal["viewer", "developer", "operator", "admin"]
#: Database ids are 32-bit on every backend; a larger number cannot name anything.
MAX_ID = 2_147_483_647
Id = Annotated[int, Path(ge=1, le=MAX_ID)]
RefId = Annotated[int, Strict(), Field(ge=1, le=MAX_ID)]
#: An integer of a request body: JSON true and false are not 1 and 0, nor is "1" or 1.0 a number.
StrictInt = Annotated[int, Strict()]


class Body(BaseModel):
    """Inputs: unknown fields are refused so a misspelt field is an error, not a silent no-op."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=False, extra="forbid")


class Out(BaseModel):
    """Answers: a field with a default is still always sent, so the schema lists it as required."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        from_attributes=True,
        json_schema_serialization_defaults_required=True,
    )


class ErrorBody(BaseModel):
    """Every refusal's body: a stable code, a sentence, and detail (e.g. one {pointer, message} per field)."""

    code: str
    message: str
    detail: Any = None


class LoginIn(Body):
    username: str = Field(min_length=1, max_length=64)
    password: str = Field(min_length=1, max_length=1024)


class TokenOut(Out):
    access_token: str
    token_type: str = "bearer"
    username: str
    role: str
    expires_at: datetime | None = None
    permissions: list[str] = Field(
        default_factory=list, description="what the role permits (see GET /api/auth/me)"
    )


class UserOut(Out):
    id: int
    username: str
    role: str
    active: bool
    created_at: datetime


class MeOut(UserOut):
    """The caller's account and what its role permits; the designer shows only the actions allowed."""

    permissions: list[str] = Field(description="names from the permission table, e.g. deploy, flows.edit")


class UserIn(Body):
    username: str = Field(min_length=1, max_length=64)
    password: str = Field(min_length=1, max_length=1024)
    role: Role


class UserPatch(Body):
    role: Role | None = None
    password: str | None = Field(default=None, min_length=1, max_length=1024)
    active: bool | None = None


class PasswordIn(Body):
    current_password: str = Field(min_length=1, max_length=1024)
    new_password: str = Field(min_length=1, max_length=1024)


class Doc(BaseModel):
    """Parts of a flow document: the fields the validator knows, nothing else.

    An optional field may be left out but not sent as null (the validator refuses null), so the
    schema says "optional string", not "string or null": the None default is kept out of it.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Position(Doc):
    x: float | SkipJsonSchema[None] = Field(default=None)
    y: float | SkipJsonSchema[None] = Field(default=None)


class FlowNodeDoc(Doc):
    """One node of a flow: its type names the spec its properties follow."""

    id: str = Field(description="1-64 letters, digits, . _ -; unique in the flow")
    type: str = Field(description="a node type of GET /api/node-types")
    name: str | SkipJsonSchema[None] = Field(default=None)
    description: str | SkipJsonSchema[None] = Field(default=None)
    properties: dict[str, Any] | SkipJsonSchema[None] = Field(
        default=None, description="values of the spec's properties"
    )
    position: Position | None = None
    ui: dict[str, Any] | SkipJsonSchema[None] = Field(
        default=None, description="designer-only state kept with the node"
    )


class TerminalRef(Doc):
    node: str
    terminal: str


class ConnectionDoc(Doc):
    from_: TerminalRef = Field(alias="from")
    to: TerminalRef
    id: str | SkipJsonSchema[None] = Field(default=None)


class FlowProperties(Doc):
    coordinated_transaction: bool | SkipJsonSchema[None] = Field(default=None)
    additional_instances: StrictInt | SkipJsonSchema[None] = Field(default=None, ge=0)
    commit_count: StrictInt | SkipJsonSchema[None] = Field(default=None, ge=0)
    #: CPU time (ms) and largest string or BLOB (bytes) one node invocation's ESQL may use; 0: no limit.
    esql_cpu_limit_ms: StrictInt | SkipJsonSchema[None] = Field(default=None, ge=0)
    esql_memory_limit_bytes: StrictInt | SkipJsonSchema[None] = Field(default=None, ge=0)


class FlowDocument(Doc):
    """A message flow: the one JSON shape of the designer, the API, the repository and deploy archives.

    The API checks a saved document against the node specs and reports every problem with its
    JSON pointer; this model describes the shape those checks accept.
    """

    name: str
    version: StrictInt | SkipJsonSchema[None] = Field(default=None, ge=0)
    description: str | SkipJsonSchema[None] = Field(default=None)
    properties: FlowProperties | SkipJsonSchema[None] = Field(default=None)
    nodes: list[FlowNodeDoc]
    connections: list[ConnectionDoc] | SkipJsonSchema[None] = Field(default=None)
    ui: dict[str, Any] | SkipJsonSchema[None] = Field(default=None)
    tests: list[dict[str, Any]] | SkipJsonSchema[None] = Field(
        default=None, description="the flow's test cases (see `flowbroker test`), versioned with it"
    )


class Terminal(Out):
    """A connection point of a node type; ``name`` is the handle id in the designer."""

    name: str
    kind: TerminalKind
    label: str


class PropertySpec(Out):
    """One configurable property of a node type."""

    name: str
    type: PropertyType
    label: str
    default: Any = None
    required: bool
    enum: list[str]
    description: str
    editor: str = Field(description="editor hint: esql, sql, queue, topic, multiline, or empty")
    minimum: int | None = None
    maximum: int | None = None


class NodeSpec(Out):
    """Everything the designer and the validator know about a node type before it runs."""

    type: str
    label: str
    category: str
    icon: str
    description: str
    version: int
    inputs: list[Terminal]
    outputs: list[Terminal]
    properties: list[PropertySpec]
    dynamic_terminals: bool = Field(description="terminals come from the node's flow (subflows)")
    subflow_role: Literal["node", "input", "output"] | None = Field(
        description="node: a flow used as a node; input/output: one of a subflow's entry or exit terminals"
    )
    terminal_property: str | None = Field(
        description="for a subflow's input or output: the property naming its terminal"
    )
    extra: dict[str, Any]


class FlowSummary(Out):
    id: int
    name: str
    description: str
    current_version: int
    created_at: datetime
    updated_at: datetime


class FlowNameOut(Out):
    """Whether a flow name is taken, and a free one to offer instead (for an import or a copy)."""

    name: str
    taken: bool
    flow_id: int | None = Field(description="the flow that has the name, if any")
    current_version: int | None = Field(description="that flow's current version, if any")
    free: str = Field(description="the name itself when free, else the first free name_N")


class FlowOut(FlowSummary):
    document: FlowDocument


class FlowVersionOut(Out):
    version: int
    comment: str
    author: str
    created_at: datetime


class FlowVersionDocument(FlowVersionOut):
    document: FlowDocument


class Problem(Out):
    """One problem of a document: the JSON pointer of the field, and what is wrong with it.

    A problem of a node's configuration also names the node, its property and, in ESQL, the
    line and column (0 where they do not apply).
    """

    pointer: str
    message: str
    node: str = ""
    property: str = ""
    line: int = 0
    column: int = 0


class ValidationOut(Out):
    valid: bool
    problems: list[Problem]


GroupState = Literal["running", "starting", "stopping", "stopped", "failed", "unknown"]


_HTTP_PORT = (
    "the port of the group's HTTP listener, which serves its flows' HTTPInput nodes (1-65535, unique "
    "among the broker's groups); null: the worker's FLOWBROKER_HTTP_PORT. A change takes effect when "
    "the listener next opens: at the group's next start, or its first HTTP flow"
)


class GroupOut(Out):
    """An execution group and what its process is doing right now."""

    id: int
    broker_id: int
    name: str
    description: str
    created_at: datetime
    desired_state: Literal["running", "stopped"] = Field(description="what an operator asked for")
    development: bool = Field(
        default=False, description="a development group lets the step debugger pause its flows"
    )
    code_nodes: bool = Field(
        default=False,
        description="whether flows with code nodes (PythonCompute) may be deployed here; only an admin changes it",
    )
    http_port: int | None = Field(default=None, description=_HTTP_PORT)
    state: GroupState = Field(
        description="running: the worker is up and taking work; starting; stopping; stopped; "
        "failed: it keeps exiting and is restarted with a growing back-off; unknown: no worker reports"
    )
    pid: int | None = None
    host: str | None = Field(default=None, description="the host name the group's worker process runs on")
    detail: str = ""
    restarts: int = 0
    since: float | None = Field(default=None, description="when the process started, seconds since 1970")


class BrokerOut(Out):
    id: int
    name: str
    description: str
    qm_url: str
    created_at: datetime
    updated_at: datetime
    local: bool = Field(description="whether `flowbroker up` on this machine runs its execution groups")
    groups: list[GroupOut]


_TRANSPORT_URL = (
    "the transport of the broker's execution groups: empty or fbqm://user:password@host:port for the "
    "embedded queue manager, amqp:// or amqps://user:password@host:port/vhost for RabbitMQ"
)


def _transport_url(value: str | None) -> str | None:
    from flowbroker.runtime.transports import kind_of

    if value is not None:
        value = value.strip()
        kind_of(value)  # a ValueError naming the schemes there are
    return value


class BrokerIn(Body):
    name: str = Field(min_length=1, max_length=64)
    description: str = Field(default="", max_length=4000)
    qm_url: str = Field(default="", max_length=500, description=_TRANSPORT_URL)

    _check_qm_url = field_validator("qm_url")(_transport_url)


class BrokerPatch(Body):
    name: str | None = Field(default=None, min_length=1, max_length=64)
    description: str | None = Field(default=None, max_length=4000)
    qm_url: str | None = Field(default=None, max_length=500, description=_TRANSPORT_URL)

    _check_qm_url = field_validator("qm_url")(_transport_url)


class GroupIn(Body):
    name: str = Field(min_length=1, max_length=64)
    description: str = Field(default="", max_length=4000)
    development: StrictBool = Field(
        default=False, description="a development group lets the step debugger pause its flows"
    )
    code_nodes: StrictBool = Field(
        default=False,
        description="whether flows with code nodes (PythonCompute) may be deployed here; only an admin changes it",
    )
    http_port: StrictInt | None = Field(default=None, ge=1, le=65535, description=_HTTP_PORT)


class GroupPatch(Body):
    name: str | None = Field(default=None, min_length=1, max_length=64)
    description: str | None = Field(default=None, max_length=4000)
    development: StrictBool | None = None
    code_nodes: StrictBool | None = Field(
        default=None, description="allow or refuse flows with code nodes (PythonCompute); admin role only"
    )
    http_port: StrictInt | None = Field(
        default=None, ge=1, le=65535, description=_HTTP_PORT + "; null clears it"
    )


class DataSourceOut(Out):
    id: int
    name: str
    url: str
    description: str
    broker_id: int | None
    created_at: datetime
    updated_at: datetime


class DataSourceIn(Body):
    name: str = Field(min_length=1, max_length=128)
    url: str = Field(min_length=1, max_length=1000)
    description: str = Field(default="", max_length=4000)
    broker_id: RefId | None = None


class DataSourcePatch(Body):
    name: str | None = Field(default=None, min_length=1, max_length=128)
    url: str | None = Field(default=None, min_length=1, max_length=1000)
    description: str | None = Field(default=None, max_length=4000)
    broker_id: RefId | None = None


class MessageSetSummary(Out):
    id: int
    name: str
    description: str
    current_version: int
    created_at: datetime
    updated_at: datetime


class MessageSetOut(MessageSetSummary):
    document: dict[str, Any]


class MessageSetIn(Body):
    name: str = Field(min_length=1, max_length=128)
    description: str = Field(default="", max_length=4000)
    document: dict[str, Any]


class MessageSetPut(Body):
    description: str | None = Field(default=None, max_length=4000)
    document: dict[str, Any]


class MessageSetVersionOut(Out):
    version: int
    author: str
    created_at: datetime


class AuditOut(Out):
    id: int
    at: datetime
    actor: str
    action: str
    target: str
    detail: dict[str, Any]


class ComponentOut(Out):
    name: str
    state: str
    desired: str = "running"
    pid: int | None = None
    restarts: int = 0
    since: float | None = None
    last_exit: int | None = None
    detail: str = ""


class HealthOut(Out):
    status: Literal["ok", "degraded", "starting"] = Field(
        description="starting (with 503) until the first user exists; degraded when a component is down"
    )
    version: str
    database: str
    components: list[ComponentOut]


class TopologyBroker(Out):
    id: int
    name: str
    local: bool


class TopologyGroup(Out):
    id: int
    broker_id: int
    name: str
    state: GroupState
    host: str | None = Field(default=None, description="the host name the group's worker process runs on")


class TopologyFlow(Out):
    """A flow deployed to a group, with the queues it reads and writes."""

    deployment_id: int
    flow_id: int
    flow: str
    version: int
    group_id: int
    status: str
    reads: list[str] = Field(description="queues its MQInput nodes read")
    writes: list[str] = Field(description="queues its MQOutput and MQReply nodes write by name")


class TopologyQueue(Out):
    name: str
    read_by: list[int] = Field(description="deployment ids of the flows that read it")
    written_by: list[int] = Field(description="deployment ids of the flows that write it")


class TopologyGraphOut(Out):
    brokers: list[TopologyBroker]
    groups: list[TopologyGroup]
    flows: list[TopologyFlow]
    queues: list[TopologyQueue]


class TopicAclIn(Body):
    topic: str = Field(
        min_length=1,
        max_length=1000,
        description="a topic subtree: a topic string without wildcards; the rule covers every topic below it",
    )
    principal: str = Field(
        min_length=1,
        max_length=64,
        description="'*' (everyone), a queue manager user, or an execution group BROKER/GROUP (its flows)",
    )
    publish: StrictBool | None = Field(
        default=None, description="allow (true) or deny (false); null: not said"
    )
    subscribe: StrictBool | None = Field(
        default=None, description="allow (true) or deny (false); null: not said"
    )


class TopicAclPatch(Body):
    topic: str | None = Field(default=None, min_length=1, max_length=1000)
    principal: str | None = Field(default=None, min_length=1, max_length=64)
    publish: StrictBool | None = None
    subscribe: StrictBool | None = None


class TopicAclOut(Out):
    id: int
    topic: str
    principal: str
    publish: bool | None
    subscribe: bool | None
    created_at: datetime
    queue_manager: str | None = Field(
        default=None,
        description="after a change: 'updated' when the local queue manager took the whole rule set, "
        "else why it did not (the repository keeps the change; push again later)",
    )


class SubscriptionIn(Body):
    topic: str = Field(
        min_length=1,
        max_length=1000,
        description="the topic pattern, MQ syntax: levels split on '/', '+' one level, '#' the rest",
    )
    queue: str = Field(min_length=1, max_length=48, description="the queue the publications are put to")
    filter: str = Field(
        default="",
        max_length=10_000,
        description="an ESQL boolean expression over the publication (Root...); empty: every publication",
    )


class SubscriptionOut(Out):
    id: int
    name: str = Field(description="sub<id>: the name the publishing execution groups know it by")
    broker_id: int
    topic: str
    queue: str
    filter: str
    owner: str
    delivery: Literal["binding", "filtered", "queue manager"] = Field(
        description="binding: a binding of the queue to RabbitMQ's topic exchange; filtered: the "
        "broker's publishing execution groups evaluate the filter and put the copies; queue manager: "
        "a durable subscription of the local queue manager"
    )
    created_at: datetime


class TopicAclPushOut(Out):
    queue_manager: str
