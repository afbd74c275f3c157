"""The seeds' figures kept as data: every Appendix B table, well-formed rows, lookups and their errors."""

from __future__ import annotations

import pytest
from flowbroker_bench import seeds

APPENDIX_B_SECTIONS = [f"7.{n}" for n in range(1, 15)]


def test_every_appendix_b_section_is_kept() -> None:
    sections = {t["section"].split()[0] for t in seeds.tables("004")}
    for number in APPENDIX_B_SECTIONS:
        assert any(s == number or s.startswith(number + ".") for s in sections), number


@pytest.mark.parametrize("seed", seeds.SEED_IDS)
def test_rows_are_well_formed_and_sourced(seed: str) -> None:
    doc = seeds.document(seed)
    assert doc["file"].startswith(seed + "_") and doc["file"].endswith(".txt")
    ids = [t["id"] for t in doc["tables"]]
    assert len(ids) == len(set(ids))
    for tab in doc["tables"]:
        assert tab["section"] and tab["caption"] and tab["rows"]
        assert isinstance(tab["source_line"], int)
        keys = [r["key"] for r in tab["rows"]]
        assert len(keys) == len(set(keys)), tab["id"]
        assert any(isinstance(r.get(tab["metric"]), int | float) for r in tab["rows"]), tab["id"]


def test_appendix_b_rows_have_every_column_and_response_is_get_plus_put() -> None:
    for tab in seeds.tables("004"):
        for row in tab["rows"]:
            assert set(tab["columns"]) <= set(row), (tab["id"], row["key"])
            assert row["persistence"] in {"yes", "no"}
            assert row["message_size"] in {1024, 4096, 16384, 65536}
            # the glossary: response "should be the total of get and put"
            assert row["response_s"] == pytest.approx(row["get_s"] + row["put_s"], abs=0.2), (tab["id"], row)


def test_figure_lookup_names_its_source() -> None:
    fig = seeds.figure("004/7.1/np-1024")
    assert fig.value == 1511
    assert fig.column == "msgs_per_sec"
    assert "each request and each reply" in fig.unit
    assert fig.seed_file.startswith("004_")
    assert "7.1" in fig.source
    assert seeds.figure("004/7.11-sub1000/p-1024").value == 1.2
    assert seeds.figure("003/npnt/1-64#standard_mst").value == 2150
    assert seeds.figure("000/subscribers/1000-128").lower_is_better


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("004", "is not '<seed>/<table>/<row>[#column]'"),
        ("009/7.1/np-1024", "unknown seed '009'"),
        ("004/7.99/np-1024", "seed 004 has no table '7.99'"),
        ("004/7.1/np-999", "has no row 'np-999'"),
        ("004/7.1/np-1024#speed", "has no column 'speed'"),
        ("004/7.1/np-1024#persistence", "holds no figure"),
    ],
)
def test_bad_keys_say_which_part_is_wrong(key: str, message: str) -> None:
    with pytest.raises(seeds.SeedKeyError, match=message.replace("[", r"\[").replace("]", r"\]")):
        seeds.figure(key)


def test_every_key_resolves() -> None:
    keys = seeds.all_keys()
    assert len(keys) > 400
    for key in keys:
        assert seeds.figure(key).key.startswith(key)
