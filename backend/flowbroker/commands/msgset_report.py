"""`flowbroker msgset import DIR --report`: import every layout under a directory and round-trip each.

Prints one line per refusal (``file:line:column: message``), warning and failed round trip, then
the share of files imported and of imported layouts whose generated record survives a CWF round
trip byte for byte. The exit status is 0 when every file imported and round-tripped.
"""

from __future__ import annotations

import sys
from pathlib import Path

from flowbroker.commands import CommandError

_SKIPPED = {".json", ".md", ".xml", ".xsd", ".dat", ".bin", ".csv", ".gz", ".zip", ".jar", ".class"}


def layout_files(root: Path) -> list[Path]:
    """The files under ``root`` to import, in name order (data and documentation files left out)."""
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and p.suffix.lower() not in _SKIPPED and not p.name.startswith(".")
    )


def report(directory: str, kind: str, set_name: str) -> int:
    from esql.domains import DomainError

    from flowbroker.formats.copybook import ImportFault, library_beside, source_text
    from flowbroker.formats.importing import import_layout
    from flowbroker.formats.mrm.model import compile_set
    from flowbroker.formats.mrm.specimen import round_trip

    root = Path(directory)
    if not root.is_dir():
        raise CommandError(f"{directory} is not a directory")
    files = layout_files(root)
    if not files:
        raise CommandError(f"no files under {directory}")
    imported = same = 0
    for path in files:
        name = str(path.relative_to(root))
        try:
            text = source_text(path.read_bytes())
            fragment = import_layout(text, kind, set_name, None, name, library_beside(path))
        except ImportFault as fault:
            print(f"refused {fault}")
            continue
        except (DomainError, OSError) as exc:
            print(f"refused {name}: {exc}")
            continue
        imported += 1
        for warning in fragment["warnings"]:
            print(f"warning {name}:{warning['line']}:{warning['column']}: {warning['message']}")
        trip = round_trip(
            compile_set({"name": set_name, "types": fragment["types"]}, set_name), fragment["type"]
        )
        if trip.same:
            same += 1
        else:
            print(f"round trip failed {name}: {fragment['type']}: {trip.problem()}")
    print(f"imported {imported} of {len(files)} files ({100 * imported / len(files):.1f} %)")
    if imported:
        print(
            f"round trip byte for byte: {same} of {imported} imported layouts ({100 * same / imported:.1f} %)"
        )
    sys.stdout.flush()
    return 0 if imported == same == len(files) else 1
