"""Compiler diagnostics: where in which file, how severe, and the message users see."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Diagnostic:
    """One finding of the parser or the checks, printed as ``FILE:LINE:COL: error: message``."""

    filename: str
    line: int
    column: int
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.column}: {self.severity}: {self.message}"

    def to_dict(self) -> dict[str, object]:
        return {
            "file": self.filename,
            "line": self.line,
            "column": self.column,
            "severity": self.severity,
            "message": self.message,
        }
