"""Message models of a workspace: each message set and schema is reported with what it holds and why it is not imported.

The conversion of CWF sets is in test_ace_msgsets.py."""

from __future__ import annotations

from pathlib import Path

from flowbroker.importers.ace import Workspace, import_workspace

MODELS = Path(__file__).parent / "ace" / "models"


def test_every_model_file_is_reported_with_its_kind_and_reason() -> None:
    report = import_workspace(Workspace.from_dirs([MODELS])).report
    by_file = {m["file"]: m for m in report.models}
    assert sorted(by_file) == [
        "Payments/loose/Refund.mxsd",
        "Payments/payset/messageSet.mset",
        "Payments/schemas/Cut.xsd",
        "Payments/schemas/Order.xsd",
        "Payments/schemas/Record.xsd",
    ]
    # the set folds in the definitions below it, naming the messages they declare
    payset = by_file["Payments/payset/messageSet.mset"]
    assert {k: payset[k] for k in ("kind", "name", "domain", "formats", "definitions", "messages")} == {
        "kind": "MRM message set",
        "name": "PAYSET",
        "domain": "MRM",
        "formats": ["CWF1 (CWF)", "XML1 (XML)"],
        "definitions": 1,
        "messages": ["Payment"],
    }
    # a CWF set whose element has no CWF length is left out whole, naming file and line
    assert payset["reason"] == (
        "CWF format CWF1: not converted: Payments/payset/pay/Payment.mxsd:13: element 'Amount' of type "
        "'Payment' has no CWF length (set Length in its CWF1 properties)"
    )
    assert by_file["Payments/loose/Refund.mxsd"]["messages"] == ["Refund"]
    assert by_file["Payments/schemas/Order.xsd"]["kind"] == "XML schema"
    assert by_file["Payments/schemas/Record.xsd"]["kind"] == "DFDL schema"
    assert by_file["Payments/schemas/Cut.xsd"]["reason"].startswith(
        "Payments/schemas/Cut.xsd:4:1: malformed XML"
    )
    assert {m["outcome"] for m in report.models} == {"not imported"}
    assert (report.summary()["models"], report.summary()["modelsImported"]) == (5, 0)
    # a model that cannot be read is reported, not an error of the import
    assert report.errors == []
