"""Interop suite: start engine work that needs nothing from pyice as soon as collection ends.

A test module may define `prefetch_java()`, which hands its independent reference-engine run to
`engines.prefetch`; its fixture later takes the same future. Runs go one at a time in the order
the modules were collected, overlapping the pyice work of the modules before them.
"""
from __future__ import annotations


def pytest_collection_finish(session):
    if session.config.option.collectonly:
        return
    seen = []
    for item in session.items:
        module = getattr(item, "module", None)
        if module is not None and module not in seen and hasattr(module, "prefetch_java"):
            seen.append(module)
    for module in seen:
        module.prefetch_java()
