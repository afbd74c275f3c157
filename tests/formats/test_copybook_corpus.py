"""The public copybook corpus against its manifest (tests/formats/copybook-manifest.tsv).

The copybooks themselves are not part of the repository: they are fetched into
``corpus/copybooks/<owner>__<repo>/<path>`` at the commits the manifest names. Without them the
corpus check is skipped; the manifest's own shape is always checked.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from flowbroker.formats.copybook import ImportFault, library_beside, source_text
from flowbroker.formats.importing import import_layout
from flowbroker.formats.mrm.model import compile_set
from flowbroker.formats.mrm.specimen import round_trip

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = Path(__file__).with_name("copybook-manifest.tsv")
CORPUS = ROOT / "corpus" / "copybooks"


def rows() -> list[dict[str, str]]:
    with MANIFEST.open(newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def test_every_refusal_in_the_manifest_names_the_ibm_rule() -> None:
    found = rows()
    assert len(found) >= 50 and len({row["repo"] for row in found}) >= 5
    for row in found:
        assert len(row["commit"]) == 40, row
        assert row["verdict"] in ("imported", "refused"), row
        assert bool(row["ibm_rule"]) == (row["verdict"] == "refused"), row


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the copybook corpus is not fetched (corpus/copybooks)")
def test_corpus_imports_and_round_trips_as_the_manifest_says() -> None:
    for row in rows():
        path = CORPUS / row["repo"].replace("/", "__") / row["path"]
        if not path.is_file():
            continue
        text = source_text(path.read_bytes())
        try:
            fragment = import_layout(text, "copybook", "S", None, path.name, library_beside(path))
        except ImportFault as fault:
            assert row["verdict"] == "refused", f"{row['path']}: {fault}"
            assert row["detail"].endswith(fault.reason), row["path"]
            continue
        assert row["verdict"] == "imported", row["path"]
        trip = round_trip(compile_set({"types": fragment["types"]}), fragment["type"])
        assert trip.same, f"{row['path']}: {trip.problem()}"
