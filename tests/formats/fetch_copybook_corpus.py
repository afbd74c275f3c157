"""Fetch the public copybooks the manifest names into corpus/copybooks (not committed).

    python tests/formats/fetch_copybook_corpus.py                    # from GitHub
    python tests/formats/fetch_copybook_corpus.py --snapshots DIR    # from bare git snapshots
    flowbroker msgset import corpus/copybooks --report

Each file comes at the commit the manifest records, so the corpus is the one the manifest's
verdicts were taken on. ``--snapshots`` reads a directory of repository snapshots laid out as
``<owner>+<name>/repo`` (or ``<owner>+<name>.git``), for machines without network access.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = Path(__file__).with_name("copybook-manifest.tsv")


def _from_snapshot(snapshots: Path, repo: str, commit: str, path: str) -> bytes | None:
    stem = repo.replace("/", "+")
    for gdir in (snapshots / stem / "repo" / ".git", snapshots / stem / "repo", snapshots / f"{stem}.git"):
        if (gdir / "HEAD").is_file():
            shown = subprocess.run(
                ["git", f"--git-dir={gdir}", "show", f"{commit}:{path}"], capture_output=True, check=False
            )
            return shown.stdout if shown.returncode == 0 else None
    return None


def _from_github(repo: str, commit: str, path: str) -> bytes:
    url = f"https://raw.githubusercontent.com/{repo}/{commit}/{urllib.request.quote(path)}"
    with urllib.request.urlopen(url, timeout=30) as response:
        return bytes(response.read())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--snapshots", type=Path, help="directory of git snapshots instead of GitHub")
    args = parser.parse_args(argv)
    target = ROOT / "corpus" / "copybooks"
    with MANIFEST.open(newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    missing = 0
    for row in rows:
        path = target / row["repo"].replace("/", "__") / row["path"]
        if path.is_file():
            continue
        if args.snapshots is not None:
            data = _from_snapshot(args.snapshots, row["repo"], row["commit"], row["path"])
        else:
            data = _from_github(row["repo"], row["commit"], row["path"])
        if data is None:
            print(f"{row['repo']}: {row['path']} not at {row['commit']}", file=sys.stderr)
            missing += 1
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    print(f"{len(rows) - missing} of {len(rows)} copybooks in {target}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
