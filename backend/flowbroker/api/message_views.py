"""The message view on the wire (:mod:`flowbroker.runtime.message_view`): what the designer's tree view shows."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flowbroker.api.schemas import Body, Out


class MessageFieldOut(Out):
    """One field: ``ref`` is its child positions below its tree, ``path`` its ESQL name."""

    name: str
    namespace: str = ""
    field_type: str = Field(description="e.g. XMLNSC.Attribute, NameValue")
    value_type: str = Field(description="the value's ESQL type: CHARACTER, INTEGER … BLOB (hex), NULL")
    value: str | None = None
    path: str
    ref: list[int]
    children: list[MessageFieldOut] = Field(default_factory=list)
    value_cut: bool = Field(default=False, description="the value is longer than the view keeps")
    unparsed: int | None = Field(default=None, description="bytes of a body the view did not parse")


class MessageBodyOut(Out):
    domain: str
    format: Literal["xml", "json", "hex", "none"]
    text: str
    bytes: int


class MessageViewOut(Out):
    """Root, LocalEnvironment, Environment and ExceptionList, the serialized body, and what was cut."""

    trees: list[MessageFieldOut]
    body: MessageBodyOut
    truncated: bool
    notices: list[str]
    properties: dict[str, str | int | float | bool | None] = Field(
        default_factory=dict,
        description="the queue message's own properties the flow got (not part of its trees)",
    )


class FieldEditIn(Body):
    """A new value for one field, as text of an ESQL type (a BLOB as hex; NULL clears it)."""

    tree: Literal["Root", "LocalEnvironment", "Environment", "ExceptionList"]
    ref: list[int] = Field(max_length=1000)
    value: str | None = Field(default=None, max_length=16 * 1024 * 1024)
    value_type: Literal[
        "CHARACTER", "INTEGER", "DECIMAL", "FLOAT", "BOOLEAN", "BLOB", "DATE", "TIME", "TIMESTAMP", "NULL"
    ] = "CHARACTER"
