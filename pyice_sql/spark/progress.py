"""Progress lines for long work (DML, procedures): one line per phase, with counts.

Lines go through the `logging` logger `pyice_sql.progress` at INFO, so an application routes
them like its other logs. When nothing is configured to receive them (no handler anywhere),
they are printed to stderr, so a script or notebook user sees them without setting up logging.
A quiet reporter prints nothing.
"""
from __future__ import annotations

import logging
import sys
import time

logger = logging.getLogger("pyice_sql.progress")
_fallback: logging.Handler | None = None


def _ensure_visible() -> None:
    global _fallback
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    if _fallback is None and not logger.hasHandlers():
        _fallback = logging.StreamHandler(sys.stderr)
        _fallback.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(_fallback)


class Progress:
    """Reports the phases of one session's work; `quiet` silences it."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet

    def task(self, label: str) -> "Task":
        """A unit of work (one statement or procedure) whose phases are reported under `label`."""
        return Task(self, label)


class Task:
    def __init__(self, progress: Progress, label: str) -> None:
        self.progress = progress
        self.label = label
        self.started = time.perf_counter()

    def phase(self, name: str, detail: str = "") -> None:
        """One line: `pyice: <label>: <phase> <detail> [elapsed]`."""
        if self.progress.quiet:
            return
        _ensure_visible()
        elapsed = time.perf_counter() - self.started
        logger.info("pyice: %s: %s%s [%.1fs]", self.label, name, f": {detail}" if detail else "", elapsed)
