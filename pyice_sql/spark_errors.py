"""Recognise Spark/JVM failures that are really pyice_sql errors, and name them as such.

Checks that run inside Spark jobs (NOT NULL, store-assignment overflow, a data file that
vanished) surface as Py4J/Spark exceptions with long JVM traces; the user should get the same
named error, with the first useful line, as when the check runs on the driver.
"""
from __future__ import annotations

import re

from pyice_sql.errors import CorruptTableError, NotNullViolationError, PyIceError

_NOT_NULL = re.compile(r"NOT NULL violation: [^\n]*")
_MISSING = re.compile(r"(?:FileNotFoundException|PATH_NOT_FOUND|does not exist)[:\s]*([^\n]*)")


def translate(error: BaseException) -> PyIceError | None:
    text = str(error)
    m = _NOT_NULL.search(text)
    if m:
        return NotNullViolationError(m.group(0).rstrip(".'\""))
    m = _MISSING.search(text)
    if m and ("FileNotFound" in text or "Path does not exist" in text):
        return CorruptTableError(f"a file of the table is missing: {m.group(1).strip()[:500]}")
    return None
