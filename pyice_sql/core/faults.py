"""Fault injection for crash-safety tests: die by SIGKILL at a named step of a write.

`PYICE_FAULT=<point>` makes `fault_point(<point>)` kill the process on the spot — no cleanup,
no `finally`, like a power cut — so tests can prove a table survives a crash at every step of
the commit protocol. Unset (always, outside those tests) it costs one environment lookup.
"""
from __future__ import annotations

import os
import signal

ENV = "PYICE_FAULT"
POINTS = (
    "data-files",        # data files written, nothing else
    "delete-files",      # position-delete files written
    "manifests",         # the commit's manifests written
    "manifest-list",     # its manifest list written
    "metadata-written",  # the new metadata file written, pointer not yet swapped
    "swapped",           # pointer swapped (Hadoop: version-hint.text not yet updated)
)


def fault_point(point: str) -> None:
    """Kill this process with SIGKILL when PYICE_FAULT names `point`."""
    if os.environ.get(ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)
