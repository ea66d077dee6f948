"""A local FileIO that records every file read: the truth for tests that count manifest reads."""
from __future__ import annotations

from pyice_sql.core.format.fileio import LocalFileIO


class CountingIO(LocalFileIO):
    def __init__(self) -> None:
        self.reads: list[str] = []

    def read(self, path: str) -> bytes:
        self.reads.append(path)
        return super().read(path)
