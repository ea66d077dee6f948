#!/usr/bin/env bash
# Set up (venvs, package with test extras, the reference Iceberg Java engine) and run every test
# that CI runs: unit, Spark, interop, reliability and REST suites on Spark 3.5 and the unit, Spark
# and Spark Connect suites on Spark 4. Benchmarks are excluded (run them on demand).
#
# Usage: tests/run.sh [-m MARKER] [pytest arguments]. A -m narrows every group; any other
# argument (a path, -k, -x) runs one group per Spark version with it, instead of the groups below.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
SPARK4=4.3.0  # the Spark 4 release CI tests
spark4=${PYICE_SPARK4:-1}  # PYICE_SPARK4=0 skips the Spark 4 groups
[ -x .venv/bin/python ] || "$PY" -m venv .venv
[ "$spark4" = 0 ] || [ -x .venv-spark4/bin/python ] || "$PY" -m venv .venv-spark4
work=$(mktemp -d)
# each group's pytest runs in its own process group (its JVMs with it), stopped with the script
# after the lane that would start the next one
stop() {
  set +e  # what is gone already is no failure of the run
  [ -n "${other:-}" ] && kill "$other" 2>/dev/null
  for f in "$work"/*.pid; do [ -e "$f" ] && kill -- -"$(cat "$f")" 2>/dev/null; done
  rm -rf "$work"
}
trap stop EXIT
trap 'exit 130' INT TERM

# The Spark 4 venv installs while the Spark 3.5 one and the reference engine do (pip waits on
# the network as much as on a core).
# It takes the oldest sqlglot and fastavro pyproject.toml allows (a fresh 3.5 venv gets the newest),
# so both ends of those ranges are tested.
if [ "$spark4" != 0 ]; then
  # shellcheck disable=SC2046
  (.venv-spark4/bin/python -m pip install -q --upgrade pip >/dev/null &&
   .venv-spark4/bin/python -m pip install -q -e '.[test,connect]' "pyspark==$SPARK4" \
     $(sed -n 's/^ *"\(sqlglot\|fastavro\)>=\([0-9.]*\).*/\1==\2/p' pyproject.toml)) > "$work/spark4-setup.log" 2>&1 &
  setup4=$!
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# The interop, reliability and REST suites run on Spark 3.5, the version the reference Iceberg Java
# engine is built for
.venv/bin/python -m pip install -q -e '.[test]' 'pyspark>=3.5,<3.6'
SHARED=${PYICE_SHARED:-$(cd .. && pwd)/shared}
PYTHON=$PWD/.venv/bin/python bash "$SHARED/iceberg-reference/setup.sh" >/dev/null
if [ "$spark4" != 0 ] && ! wait "$setup4"; then
  cat "$work/spark4-setup.log"; exit 1
fi
# the few Spark 4 tests that compare with Iceberg Java run it from the 3.5 venv
export PYICE_SHARED=$SHARED TZ=UTC PYICE_REF_PYTHON=$PWD/.venv/bin/python
# Every JVM the suites start (the test session's, the reference engine's, the REST server's, the
# reliability children's, Spark Connect's) lives seconds to minutes: C2's compiles and G1's
# threads cost more CPU than they repay on two cores. With client-only JIT and the serial
# collector a reference-engine run takes a third less CPU (13.4 -> 8.5 CPU-s), and the interop,
# reliability and REST suites, which start one or more per module, a third less time (19.5 ->
# 13.4 min). Only the tests' JVMs: benchmarks and users keep the JVM's defaults.
export JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:+$JAVA_TOOL_OPTIONS }-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

marker35='not benchmark'
# Spark 4 (Scala 2.13, ANSI mode on by default): the suites that need no reference engine of their own
marker4='not interop and not reliability and not rest and not benchmark'
rest=()
while [ $# -gt 0 ]; do
  case $1 in
    -m) marker35="($2) and $marker35"; marker4="($2) and $marker4"; shift 2 ;;
    *) rest+=("$1"); shift ;;
  esac
done

# The groups, longest first (minutes each took in a clean-clone run, the two lanes busy), which
# two lanes take in turn, each the next one no lane has taken, so both cores stay busy to the
# end: with one pytest process per Spark version side by side, the 3.5 one ran its last 16
# minutes alone with 40 % of the machine idle (a test's driver waits on its JVM, the JVM on the
# driver, both on the reference engine), and CI took 44-45 minutes; so, 34 (the lanes ending
# 30 s apart, after 33 minutes).
names=() pythons=() markers=() targets=()
group() { names+=("$1"); pythons+=("$2"); markers+=("$3"); targets+=("$4"); }
py35=.venv/bin/python py4=.venv-spark4/bin/python
# a Spark 4 group: its name, its targets, and its marker if not marker4
four() { [ "$spark4" = 0 ] || group "Spark $SPARK4: $1" "$py4" "${3:-$marker4}" "$2"; }
if [ ${#rest[@]} -eq 0 ]; then
  four "spark, unit" "tests/spark tests/unit"                                           # 19
  # a suite in two, by the modules' names (the second: the rest, so that no module is left out)
  group "Spark 3.5: interop a-m" "$py35" "$marker35" "$(echo tests/interop/test_[a-m]*.py)"     # 10
  group "Spark 3.5: interop, the rest" "$py35" "$marker35" "tests/interop --ignore-glob=*/test_[a-m]*"  # 9.5
  group "Spark 3.5: spark k-z" "$py35" "$marker35" "$(echo tests/spark/test_[k-z]*.py)"         # 8
  group "Spark 3.5: spark, the rest" "$py35" "$marker35" "tests/spark --ignore-glob=*/test_[k-z]*"  # 7.3
  group "Spark 3.5: reliability" "$py35" "$marker35" tests/reliability                       # 5.2
  group "Spark 3.5: rest" "$py35" "$marker35" tests/rest                                     # 3
  four "connect" tests/connect                                                               # 2.8
  # Java reads what Spark 4's writers wrote, and random DML under Spark 4's ANSI defaults (the
  # other interop modules run on Spark 3.5 only: Java's Spark is 3.5, and they would add 20 minutes)
  four "interop: Java reads our files, random DML" \
    "tests/interop/test_written_by_pyice.py tests/interop/test_random_differential.py" "$marker35"  # 3
  group "Spark 3.5: unit" "$py35" "$marker35" tests/unit                                     # 0.3
else
  group "Spark 3.5" "$py35" "$marker35" --ignore=tests/connect  # Connect needs Spark 4's extras
  [ "$spark4" = 0 ] || group "Spark $SPARK4" "$py4" "$marker4" ""
fi

run_group() {
  local i=$1 started=$SECONDS rc=0
  set -f  # targets: the group's arguments, split on spaces, their globs pytest's
  # shellcheck disable=SC2086
  setsid "${pythons[i]}" -m pytest -q -p no:cacheprovider --durations=10 --basetemp "$work/tmp$i" \
    -m "${markers[i]}" ${targets[i]} ${rest[@]+"${rest[@]}"} > "$work/$i.log" 2>&1 &
  set +f
  echo $! > "$work/$i.pid"
  wait $! || rc=$?
  rm -f "$work/$i.pid"
  echo $rc > "$work/$i.rc"
  echo "$(date -u +%H:%M:%S) ${names[i]}: exit $rc, $((SECONDS - started)) s"
}
lane() {
  local i
  for i in "${!names[@]}"; do
    if mkdir "$work/taken$i" 2>/dev/null; then run_group "$i"; fi
  done
}
started=$SECONDS
lane &
other=$!
lane
wait $other
status=5  # pytest's "nothing collected", unless some group ran tests
for i in "${!names[@]}"; do
  echo "== ${names[i]} =="
  cat "$work/$i.log"
  rc=$(cat "$work/$i.rc")
  if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then status=$rc; elif [ "$rc" = 0 ] && [ "$status" = 5 ]; then status=0; fi
done
echo "All groups: $((SECONDS - started)) s"
exit $status
