"""Rebuild the public ACE / IIB workspaces listed in ``ace-manifest.tsv`` (other people's code: never committed).

The manifest names, for each file the import reads (flows, subflows, ESQL, MQSC scripts, message
models and the ``.project`` files that mark project folders), the public repository, its path and
the commit it was read at. Given a directory of bare git snapshots of those repositories
(``<owner>+<name>/repo`` or ``<owner>+<name>.git``), this writes every listed file under
``corpus/ace/<owner>__<name>/<path>``, one workspace per repository:

    python tests/importers/ace_corpus.py extract --snapshots DIR [--out corpus/ace]
    python tests/importers/ace_corpus.py list --snapshots DIR > tests/importers/ace-manifest.tsv

then ``flowbroker import ace corpus/ace/* --report`` imports each repository as its own workspace
(nothing is stored) and prints the figures: flows imported, nodes mapped, unmapped node types.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

MANIFEST = Path(__file__).with_name("ace-manifest.tsv")
HEADER = ("repo", "path", "commit")
#: What the import reads; ``.project`` files mark the project folders.
SUFFIXES = (".msgflow", ".subflow", ".esql", ".mqsc", ".mq", ".mxsd", ".mset", ".xsd", ".dfdl")


def git_dir(snapshots: Path, repo: str) -> Path | None:
    stem = repo.replace("/", "+")
    for candidate in (snapshots / stem / "repo", snapshots / f"{stem}.git"):
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


def wanted(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name == ".project" or name.lower().endswith(SUFFIXES)


def extract(snapshots: Path, out: Path) -> int:
    rows = read_manifest()
    missing = 0
    for row in rows:
        gdir = git_dir(snapshots, row["repo"])
        try:
            if gdir is None:
                raise LookupError(f"no snapshot under {snapshots}")
            data = git(gdir, "show", f"{row['commit']}:{row['path']}")
        except (LookupError, subprocess.CalledProcessError) as exc:
            print(f"{row['repo']}: {row['path']}: {exc}", file=sys.stderr)
            missing += 1
            continue
        target = out / row["repo"].replace("/", "__") / row["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    repos = len({row["repo"] for row in rows})
    print(f"{len(rows) - missing} of {len(rows)} files of {repos} repositories written under {out}")
    return 1 if missing else 0


def list_snapshots(snapshots: Path, repos: list[str]) -> int:
    """The manifest rows of every wanted file at HEAD of ``repos`` (when empty: every snapshot holding a
    flow or an MQSC script)."""
    print("\t".join(HEADER))
    if not repos:
        repos = [
            e.name.removesuffix(".git").replace("+", "/", 1)
            for e in sorted(snapshots.iterdir())
            if e.is_dir() and "+" in e.name
        ]
    for repo in repos:
        gdir = git_dir(snapshots, repo)
        if gdir is None:
            print(f"{repo}: no snapshot under {snapshots}", file=sys.stderr)
            continue
        commit = git(gdir, "rev-parse", "HEAD").decode().strip()
        names = git(gdir, "ls-tree", "-r", "--name-only", "-z", "HEAD").decode("utf-8", "replace").split("\0")
        files = sorted(n for n in names if n and wanted(n))
        if not any(n.endswith((".msgflow", ".subflow", ".mqsc", ".mq")) for n in files):
            continue
        for name in files:
            print(f"{repo}\t{name}\t{commit}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("action", choices=("extract", "list"))
    parser.add_argument("--snapshots", type=Path, required=True, help="directory of bare git snapshots")
    parser.add_argument("--out", type=Path, default=Path("corpus/ace"))
    parser.add_argument("repos", nargs="*", metavar="OWNER/NAME", help="with list: only these repositories")
    args = parser.parse_args(argv)
    if args.action == "list":
        return list_snapshots(args.snapshots, args.repos)
    return extract(args.snapshots, args.out)


if __name__ == "__main__":
    sys.exit(main())
