"""What the file nodes share: directories confined to the configured file roots, safe file names.

A flow document may come from anyone allowed to deploy, so a file node's directory (from its
properties or from the LocalEnvironment a flow builds) is only used when it lies below one of
the execution group's file roots (FLOWBROKER_FILE_ROOTS) once ``..`` and symbolic links are
resolved; a relative directory is taken below the first root. File names are single path
components. The subdirectories are ACE's: ``mqsitransit`` (files being written or claimed),
``mqsiarchive`` (processed input files, replaced output files) and ``mqsibackout`` (input
files whose processing failed).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from flowbroker_nodes.base import NodeError

TRANSIT = "mqsitransit"
ARCHIVE = "mqsiarchive"
BACKOUT = "mqsibackout"
_SPECIAL = {TRANSIT, ARCHIVE, BACKOUT}


def confined_directory(directory: str, roots: Sequence[str], *, must_exist: bool = True) -> Path:
    """``directory`` resolved, when it lies below one of ``roots``; else a NodeError saying why."""
    text = str(directory or "").strip()
    if not text:
        raise NodeError("no directory given", number=3300)
    if "\x00" in text:
        raise NodeError(f"directory {text!r} contains a NUL character", number=3300)
    if not roots:
        raise NodeError("no file roots are configured (FLOWBROKER_FILE_ROOTS)", number=3300)
    path = Path(text)
    if not path.is_absolute():
        path = Path(roots[0]) / path
    resolved = Path(os.path.realpath(path))
    if not any(resolved == Path(root) or resolved.is_relative_to(root) for root in roots):
        raise NodeError(
            f"directory {text!r} is outside the file roots ({', '.join(roots)}); "
            "set FLOWBROKER_FILE_ROOTS to allow it",
            number=3301,
            inserts=(text,),
        )
    if must_exist and not resolved.is_dir():
        raise NodeError(f"directory {text!r} does not exist", number=3302, inserts=(text,))
    return resolved


def directory_problem(directory: str) -> str:
    """Why a directory property cannot be right whatever the roots ('' when it may be)."""
    text = str(directory or "").strip()
    if not text:
        return "required: the directory"
    if "\x00" in text:
        return "the directory contains a NUL character"
    return ""


def file_name_problem(name: str, *, pattern: bool = False) -> str:
    """Why ``name`` is not one plain file name (or pattern) in a directory ('' when it is)."""
    if not name:
        return "the file name is empty"
    if "/" in name or "\\" in name or "\x00" in name:
        return f"{name!r} must be a file name, without / \\ or NUL"
    if name in (".", "..") or name in _SPECIAL:
        return f"{name!r} is not a usable file name"
    if not pattern and any(c in name for c in "*?["):
        return f"{name!r} contains a wildcard"
    return ""


def safe_file_name(name: str) -> str:
    """``name`` when it is one plain file name, else a NodeError."""
    problem = file_name_problem(name)
    if problem:
        raise NodeError(f"unsafe file name: {problem}", number=3303, inserts=(name,))
    return name


def subdirectory(directory: Path, name: str) -> Path:
    """``directory/name`` (one of ACE's mqsi* subdirectories), created when missing, never a link."""
    path = directory / name
    try:
        path.mkdir(exist_ok=True)
    except OSError as exc:
        raise NodeError(f"cannot create {path}: {exc.strerror or exc}", number=3304) from exc
    if path.is_symlink() or not path.is_dir():
        raise NodeError(f"{path} is not a directory", number=3304)
    return path
