"""`flowbroker bench qm-hostile` end to end against a real queue manager (behaviour, not speed)."""

from __future__ import annotations

import json

import pytest
from flowbroker.cli import main

pytestmark = pytest.mark.timeout(120)


def test_hostile_connections_are_cut_and_memory_stays_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(
        ["bench", "qm-hostile", "--connections", "4", "--frame-mb", "8", "--seconds", "5", "--format", "json"]
    )
    assert status == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["cut by the queue manager"] == 4  # refused on their frame headers, before the window ends
    # none of the 32 MiB they declared was buffered (the margin is for the probes' own connections)
    assert row["RSS MB peak"] - row["RSS MB before"] < 16
    answered, probes = (int(n) for n in row["well-behaved connects answered"].split("/"))
    assert answered == probes >= 1
