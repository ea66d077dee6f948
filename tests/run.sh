#!/usr/bin/env bash
# Set up (venv, package with test extras, the reference Iceberg Java engine) and run every test
# that CI runs: unit, Spark and interop suites. Benchmarks are excluded (run them on demand).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# CI and the tests run on Spark 3.5, the version the reference Iceberg Java engine is built for
.venv/bin/python -m pip install -q -e '.[test]' 'pyspark>=3.5,<3.6'
SHARED=${PYICE_SHARED:-$(cd .. && pwd)/shared}
PYTHON=$PWD/.venv/bin/python bash "$SHARED/iceberg-reference/setup.sh" >/dev/null
export PYICE_SHARED=$SHARED TZ=UTC
exec .venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 "$@"
