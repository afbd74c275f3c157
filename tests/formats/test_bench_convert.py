"""`flowbroker bench convert` runs every cell of the matrix and checks each output carries the input's values."""

from __future__ import annotations

import argparse

import pytest
from flowbroker_bench import convert


@pytest.mark.timeout(120)
def test_every_cell_converts_and_is_checked() -> None:
    rows = convert.run(argparse.Namespace(seconds=0.01, path="auto", verbose=True, cpu=None))
    assert [(r["from"], r["to"]) for r in rows] == [(a, b) for a in convert.FORMATS for b in convert.FORMATS]
    for row in rows:
        assert (
            row["conversions/s"] > 0 and row["seed msgs/s"] == convert.SEED_TABLE_1[(row["from"], row["to"])]
        )
        assert row["in bytes"] >= convert.MESSAGE_BYTES


def test_the_check_notices_a_wrong_value() -> None:
    from flowbroker.formats.mrm import CATALOG

    CATALOG.install(convert.SET_NAME, convert.message_set())
    inputs = convert.build_inputs()
    values = dict(convert.sample_values())
    values["I3"] = values["I3"] + 1
    with pytest.raises(ValueError, match="field I3"):
        convert._check("CWF", "CWF", inputs["CWF"], values)
