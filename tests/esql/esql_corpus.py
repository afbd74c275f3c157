"""Rebuild the real-world ESQL corpus listed in ``corpus-manifest.tsv`` (other people's code: never committed).

The manifest names, for each file, the public repository, the path in it and the commit it was read at.
Given a directory of bare git snapshots of those repositories (``<owner>+<name>/repo`` as laid out by a
snapshot store, or any directory holding ``<owner>+<name>.git``), this writes every listed file, with the
Eclipse ``.project`` file of its project folder, under ``corpus/esql/<owner>__<name>/<path>``:

    python tests/esql/esql_corpus.py extract --snapshots DIR [--out corpus/esql]
    python tests/esql/esql_corpus.py list --snapshots DIR > new-manifest.tsv   # every .esql at HEAD

then ``flowbroker esql check corpus/esql --report`` reports how much of it the compiler accepts.
The verdict column records, per file, ``ok`` or ``refused: <the IBM rule the file breaks>``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path, PurePosixPath

MANIFEST = Path(__file__).with_name("corpus-manifest.tsv")
HEADER = ("repo", "path", "commit", "verdict")


def git_dir(snapshots: Path, repo: str) -> Path | None:
    stem = repo.replace("/", "+")
    for candidate in (
        snapshots / stem / "repo" / ".git",
        snapshots / stem / "repo",
        snapshots / f"{stem}.git",
    ):
        if (candidate / "HEAD").is_file():
            return candidate
    return None


def git(gdir: Path, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={gdir}", *args], capture_output=True, check=True).stdout


def read_manifest(path: Path = MANIFEST) -> list[dict[str, str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        if line.strip():
            rows.append(dict(zip(HEADER, line.split("\t"), strict=False)))
    return rows


def extract(snapshots: Path, out: Path) -> int:
    rows = read_manifest()
    missing = 0
    by_repo: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_repo.setdefault(row["repo"], []).append(row)
    for repo, files in sorted(by_repo.items()):
        gdir = git_dir(snapshots, repo)
        if gdir is None:
            print(f"{repo}: no snapshot under {snapshots}", file=sys.stderr)
            missing += len(files)
            continue
        base = out / repo.replace("/", "__")
        for row in files:
            try:
                data = git(gdir, "show", f"{row['commit']}:{row['path']}")
            except subprocess.CalledProcessError:
                print(f"{repo}: {row['path']} not at {row['commit']}", file=sys.stderr)
                missing += 1
                continue
            target = base / row["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            _project_file(gdir, row["commit"], row["path"], base)
    print(f"{len(rows) - missing} of {len(rows)} files written under {out}")
    return 1 if missing else 0


def _project_file(gdir: Path, commit: str, path: str, base: Path) -> None:
    """Copy the nearest enclosing ``.project`` (it marks the folder the toolkit builds as one project)."""
    for parent in PurePosixPath(path).parents:
        candidate = str(parent / ".project") if str(parent) != "." else ".project"
        target = base / candidate
        if target.exists():
            return
        try:
            data = git(gdir, "show", f"{commit}:{candidate}")
        except subprocess.CalledProcessError:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return


def list_snapshots(snapshots: Path) -> int:
    print("\t".join(HEADER))
    for entry in sorted(snapshots.iterdir()):
        repo = entry.name.removesuffix(".git").replace("+", "/", 1)
        gdir = git_dir(snapshots, repo)
        if gdir is None:
            continue
        commit = git(gdir, "rev-parse", "HEAD").decode().strip()
        names = git(gdir, "ls-tree", "-r", "--name-only", "-z", "HEAD").decode("utf-8", "replace").split("\0")
        for name in sorted(n for n in names if n.lower().endswith(".esql")):
            print(f"{repo}\t{name}\t{commit}\t")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("action", choices=("extract", "list"))
    parser.add_argument("--snapshots", type=Path, required=True, help="directory of bare git snapshots")
    parser.add_argument("--out", type=Path, default=Path("corpus/esql"))
    args = parser.parse_args(argv)
    if args.action == "list":
        return list_snapshots(args.snapshots)
    return extract(args.snapshots, args.out)


if __name__ == "__main__":
    sys.exit(main())
