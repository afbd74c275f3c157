"""docs/nodes.md is what `flowbroker docs nodes` makes of the node specs now."""

from __future__ import annotations

from pathlib import Path

import pytest
from flowbroker.cli import main
from flowbroker_nodes import reference, registry
from flowbroker_nodes.spec import NodeSpec, Property, Terminal

DOC = Path(__file__).resolve().parents[2] / "docs" / "nodes.md"


def test_the_committed_node_reference_is_current() -> None:
    generated = reference.render(m.SPEC for m in registry.builtin_modules().values())
    assert DOC.read_text(encoding="utf-8") == generated, (
        "docs/nodes.md is stale: run `flowbroker docs nodes --output docs/nodes.md`"
    )


def test_the_reference_documents_terminals_properties_and_dynamic_terminals() -> None:
    text = DOC.read_text(encoding="utf-8")
    for spec in registry.specs():
        assert f"\n## {spec.type}\n" in text, spec.type
        assert f"| [{spec.type}](#{spec.type.lower()}) |" in text
    route = text.split("\n## Route\n")[1].split("\n## ")[0]
    assert "Output terminals: `match` (out), `default` (out), `failure` (failure)." in route
    assert "named by the `routingOutputTerminal` column of the `filterTable` property" in route
    assert '| `distributionMode` | enum | `"all"` |  | `all`, `first` |' in route
    mq_input = text.split("\n## MQInput\n")[1].split("\n## ")[0]
    assert "| `queueName` | queue |  | yes |" in mq_input
    assert "| `waitInterval` | integer | `1000` |  | 1…60000 |" in mq_input
    assert "Its terminals are those of the flow it runs" in text.split("\n## Subflow\n")[1]


def test_table_cells_keep_to_one_row() -> None:
    spec = NodeSpec(
        type="Odd",
        label="Odd",
        category="c",
        icon="i",
        description="a <b> tag\nand | a pipe",
        inputs=(Terminal("in", "in"),),
        properties=(Property("p", default="x|`y`", description="one\n\ntwo | three"),),
    )
    text = reference.render([spec])
    assert "a &lt;b> tag and \\| a pipe" in text
    assert '| `p` | string | `` "x\\|`y`" `` |  |  | one two \\| three |' in text


def test_docs_nodes_writes_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "nodes.md"
    assert main(["docs", "nodes", "--output", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8")
    assert main(["docs", "nodes", "--check", "--output", str(out)]) == 0
    out.write_text(out.read_text(encoding="utf-8").replace("| Compute |", "| Compute v2 |"), encoding="utf-8")
    assert main(["docs", "nodes", "--check", "--output", str(out)]) == 1
    assert f"{out} is stale: run `flowbroker docs nodes --output {out}`" in capsys.readouterr().err
    assert main(["docs", "nodes", "--check"]) == 1
    assert "--check needs --output FILE" in capsys.readouterr().err


README = DOC.parents[1] / "README.md"


def test_the_readme_node_table_lists_every_node_type_with_its_terminals() -> None:
    text = README.read_text(encoding="utf-8")
    specs = [m.SPEC for m in registry.builtin_modules().values()]
    assert reference.with_table(text, specs) == text, "README.md's node table is stale: run `make docs`"
    row = next(line for line in text.splitlines() if line.startswith("| [AggregateReply]"))
    assert (
        row
        == "| [AggregateReply](docs/nodes.md#aggregatereply) | input | in | out, unknown, timeout, failure, catch |"
    )


def test_docs_nodes_keeps_the_readme_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, readme = tmp_path / "nodes.md", tmp_path / "README.md"
    readme.write_text(
        f"# Title\n\n{reference.TABLE_START}\nold rows\n{reference.TABLE_END}\n\nafter\n", encoding="utf-8"
    )
    assert main(["docs", "nodes", "--output", str(out), "--check", "--readme", str(readme)]) == 1
    assert "node table in" in capsys.readouterr().err
    assert main(["docs", "nodes", "--output", str(out), "--readme", str(readme)]) == 0
    text = readme.read_text(encoding="utf-8")
    assert (
        "old rows" not in text
        and "| [XSLTransform](docs/nodes.md#xsltransform) |" in text
        and text.endswith("after\n")
    )
    readme.write_text("no markers\n", encoding="utf-8")
    assert main(["docs", "nodes", "--output", str(out), "--readme", str(readme)]) == 1
    assert "node table markers are missing" in capsys.readouterr().err
