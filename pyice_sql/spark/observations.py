"""Spark Observations attached and read in few py4j round trips.

pyspark 3.5's `Observation.get` walks the JVM map with a py4j call per step: ~50 calls, ~20 ms,
for an observation of three metrics, and a merge-on-read statement reads two or three. pyspark 4.1+
reads the metrics row pickled in one call; this does the same on 3.5. Spark 4.0's JVM Observation
has no row to give: there its map is read, in a few calls (pyspark 4.0's own `get` leaves an array
metric a JavaObject, and its walk of the map ends in a Java exception, ~20 calls), after a bounded
wait: 4.0 never completes an Observation whose node the optimizer dropped (a filter it proved false
above it), where 3.5 and 4.1+ give an empty row, so its `get` would wait forever. And pyspark 3.5's
`DataFrame.observe` reaches the JVM's Observation class one package at a time
(`jvm.org.apache...`), where each name py4j does not know is a `Class.forName` over every jar:
3-12 ms per observation in a session with Iceberg's jars; `observe` names the class whole.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, Observation


def observe(df: DataFrame, observation: Observation, *exprs: Column) -> DataFrame:
    """`df.observe(observation, *exprs)`: the same observed frame, with the class looked up in one
    round trip on classic Spark (Spark Connect, or an Observation already used: pyspark's own)."""
    jdf, sc = getattr(df, "_jdf", None), getattr(df, "_sc", None)
    if jdf is None or sc is None or getattr(observation, "_jo", None) is not None or not exprs:
        return df.observe(observation, *exprs)
    jvm = sc._jvm
    name = getattr(observation, "_name", None)
    cls = getattr(jvm, "org.apache.spark.sql.Observation")
    observation._jvm, observation._jo = jvm, (cls(name) if name is not None else cls())
    rest = jvm.PythonUtils.toSeq([c._jc for c in exprs[1:]])
    return type(df)(jdf.observe(observation._jo, exprs[0]._jc, rest), df.sparkSession)


# whether the JVM's Observation gives its metrics as one row (Spark 3.5 and 4.1+), found out by the
# first observation read in the process: on Spark 4.0 a failed call costs ~70 round trips
_reads_rows = True
# how long Spark 4.0's map read waits for the metrics: a listener completes its Observation within
# milliseconds of the action, or never where the observed node was optimized away (then: no metrics)
MAP_WAIT_SECONDS = 5


def observed_metrics(observation: Observation) -> dict:
    """The metrics `observation` collected (waits for its first action, as `Observation.get`)."""
    jo, jvm = getattr(observation, "_jo", None), getattr(observation, "_jvm", None)
    if jo is None or jvm is None:  # Spark Connect, or never observed (`get` says so)
        return observation.get
    from py4j.protocol import Py4JError, Py4JJavaError
    from pyspark.serializers import CPickleSerializer

    global _reads_rows
    row = None
    if _reads_rows:
        try:
            row = jo.getRow()
        except Py4JJavaError:
            raise
        except Py4JError:  # no such method: Spark 4.0's Observation has none (3.5's and 4.1+'s do)
            _reads_rows = False
    if row is None:  # the map, its names read as one array (iterating it ends in a Java exception)
        if not _completed(jvm, jo):
            return {}
        metrics = jo.getAsJava()
        return {name: _as_list(metrics.get(name)) for name in list(metrics.keySet().toArray())}
    if row.size() == 0:  # a plan Spark proved empty reports no metrics
        return {}
    utils = getattr(jvm, "org.apache.spark.sql.api.python.PythonSQLUtils")
    return CPickleSerializer().loads(utils.toPyRow(row)).asDict(recursive=False)


def _completed(jvm, jo) -> bool:
    """Whether Spark 4.0's JVM Observation `jo` got its metrics within MAP_WAIT_SECONDS (its
    `future`; a failed one counts as completed: reading it raises the failure)."""
    from py4j.protocol import Py4JJavaError

    wait = getattr(jvm, "scala.concurrent.duration.Duration").apply(MAP_WAIT_SECONDS, "s")
    try:
        getattr(jvm, "scala.concurrent.Await").ready(jo.future(), wait)
    except Py4JJavaError as e:
        if e.java_exception.getClass().getName() != "java.util.concurrent.TimeoutException":
            raise
        return False
    return True


def _as_list(value):
    """An array metric (a Scala Seq in Spark 4.0's map of them, which py4j leaves a JavaObject) as
    the list the pickled row of 3.5 and 4.1+ gives; any other value as it is. The array metrics
    are counts (data_writer's NaN counts per column): read as one text, not an element per round trip."""
    from py4j.java_gateway import JavaObject

    if not isinstance(value, JavaObject):
        return value
    text = value.mkString(",")
    return [None if n == "null" else int(n) for n in text.split(",")] if text else []
