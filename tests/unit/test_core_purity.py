"""pyice_sql.core never imports Spark: every core module loads in a fresh interpreter without pyspark
or py4j, and `import pyice_sql` itself loads neither (its public names resolve on first use).
The core's own unit tests (tests/unit/core) load no Spark either, so they run without a JVM."""
from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pyice_sql.core

_PROBE = """
import importlib, json, sys
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j'))))
"""


def _fresh_import(modules: list[str]) -> list[str]:
    root = str(Path(pyice_sql.core.__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(modules)], capture_output=True, text=True,
                         check=True, cwd=root)
    return json.loads(out.stdout)


def test_every_core_module_imports_without_spark():
    modules = [m.name for m in pkgutil.walk_packages(pyice_sql.core.__path__, "pyice_sql.core.")]
    assert len(modules) > 40  # the walk found the core, not an empty package
    assert _fresh_import(modules) == []


def test_import_pyice_sql_loads_no_spark_until_a_public_name_is_used():
    assert _fresh_import(["pyice_sql"]) == []
    assert "pyspark" in _fresh_import(["pyice_sql.spark.session"])  # the probe does see Spark when it loads


def test_core_unit_tests_load_no_spark():
    tests = Path(__file__).resolve().parent / "core"
    modules = [f"tests.unit.core.{p.stem}" for p in sorted(tests.glob("test_*.py"))]
    assert len(modules) >= 10
    assert _fresh_import(modules) == []
