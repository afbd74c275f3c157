"""Fetch the public copybooks the manifest names into corpus/copybooks (not committed).

    python tests/formats/fetch_copybook_corpus.py
    flowbroker msgset import corpus/copybooks --report

Each file comes from GitHub at the commit the manifest records, so the corpus is the one the
manifest's verdicts were taken on.
"""

from __future__ import annotations

import csv
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = Path(__file__).with_name("copybook-manifest.tsv")


def main() -> int:
    target = ROOT / "corpus" / "copybooks"
    with MANIFEST.open(newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    for row in rows:
        path = target / row["repo"].replace("/", "__") / row["path"]
        if path.is_file():
            continue
        url = f"https://raw.githubusercontent.com/{row['repo']}/{row['commit']}/{urllib.request.quote(row['path'])}"
        path.parent.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(url, timeout=30) as response:
            path.write_bytes(response.read())
    print(f"{len(rows)} copybooks in {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
