#!/usr/bin/env bash
# Set up (venvs, package with test extras, the reference Iceberg Java engine) and run every test
# that CI runs: unit, Spark and interop suites on Spark 3.5 and, alongside them, the unit, Spark
# and Spark Connect suites on Spark 4. Benchmarks are excluded (run them on demand).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
SPARK4=4.3.0  # the Spark 4 release CI tests
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# The interop, reliability and REST suites run on Spark 3.5, the version the reference Iceberg Java
# engine is built for
.venv/bin/python -m pip install -q -e '.[test]' 'pyspark>=3.5,<3.6'
SHARED=${PYICE_SHARED:-$(cd .. && pwd)/shared}
PYTHON=$PWD/.venv/bin/python bash "$SHARED/iceberg-reference/setup.sh" >/dev/null
export PYICE_SHARED=$SHARED TZ=UTC
# Every JVM the suites start (the test session's, the reference engine's, the REST server's, the
# reliability children's, Spark Connect's) lives seconds to minutes: C2's compiles and G1's
# threads cost more CPU than they repay on two cores. With client-only JIT and the serial
# collector a reference-engine run takes a third less CPU (13.4 -> 8.5 CPU-s), and the interop,
# reliability and REST suites, which start one or more per module, a third less time (19.5 ->
# 13.4 min). Only the tests' JVMs: benchmarks and users keep the JVM's defaults.
export JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:+$JAVA_TOOL_OPTIONS }-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

# Spark 4 (Scala 2.13, ANSI mode on by default): the suites that need no reference engine of their
# own (the few Spark and Connect tests that compare with Iceberg Java run it from the 3.5 venv),
# narrowed by the caller's -m if any. PYICE_SPARK4=0 skips this pass.
spark4=${PYICE_SPARK4:-1}
marker='not interop and not reliability and not rest and not benchmark'
rest=()
args=("$@")
while [ $# -gt 0 ]; do
  case $1 in
    -m) marker="($2) and $marker"; shift 2 ;;
    *) rest+=("$1"); shift ;;
  esac
done
if [ "$spark4" != 0 ]; then
  [ -x .venv-spark4/bin/python ] || "$PY" -m venv .venv-spark4
  .venv-spark4/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv-spark4/bin/python -m pip install -q -e '.[test,connect]' "pyspark==$SPARK4"
fi

# The two passes run side by side: alone, each keeps about one core and a half of two busy (a
# test's driver waits on its JVM, the JVM on the driver, both on the reference engine). On two
# cores, CI from a clean clone took 44 minutes so (3.5 pass 41, 4.3 pass 24), against 52 one
# after the other (34 and 16). The Spark 4 pass writes to a log, printed when both are done.
status=0
if [ "$spark4" != 0 ]; then
  work=$(mktemp -d)
  # its own process group, stopped with the script (a background job of a script ignores Ctrl-C)
  # shellcheck disable=SC2016
  setsid bash -c 'started=$SECONDS; rc=0
    PYICE_REF_PYTHON=$PWD/.venv/bin/python .venv-spark4/bin/python -m pytest -q -p no:cacheprovider \
      --durations=10 --basetemp "$0/tmp" "$@" || rc=$?
    echo "Spark '"$SPARK4"' pass: $((SECONDS - started))s"; exit $rc' \
    "$work" -m "$marker" ${rest[@]+"${rest[@]}"} > "$work/spark4.log" 2>&1 &
  spark4_pid=$!
  trap 'kill -- -"$spark4_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
  trap 'exit 130' INT TERM
fi
started=$SECONDS
# (Spark Connect is tested in the Spark 4 pass, whose venv has pyspark's connect extras)
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 --ignore=tests/connect ${args[@]+"${args[@]}"} \
  || status=$?
echo "Spark 3.5 pass: $((SECONDS - started))s"
if [ "$spark4" != 0 ]; then
  rc=0
  wait "$spark4_pid" || rc=$?
  echo "== Spark $SPARK4: unit, Spark and Spark Connect suites =="
  cat "$work/spark4.log"
  [ $rc = 0 ] || [ $rc = 5 ] || status=$rc  # 5: the -m left nothing here
fi
exit $status
