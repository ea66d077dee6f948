"""Spark Observations attached and read in few py4j round trips.

pyspark 3.5's `Observation.get` walks the JVM map with a py4j call per step: ~50 calls, ~20 ms,
for an observation of three metrics, and a merge-on-read statement reads two or three. pyspark 4
reads the metrics row pickled in one call; this does the same on both. And pyspark 3.5's
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


def observed_metrics(observation: Observation) -> dict:
    """The metrics `observation` collected (waits for its first action, as `Observation.get`)."""
    jo, jvm = getattr(observation, "_jo", None), getattr(observation, "_jvm", None)
    if jo is None or jvm is None:  # Spark Connect, or never observed (`get` says so)
        return observation.get
    from pyspark.serializers import CPickleSerializer

    row = jo.getRow()
    if row.size() == 0:  # a plan Spark proved empty reports no metrics
        return {}
    utils = getattr(jvm, "org.apache.spark.sql.api.python.PythonSQLUtils")
    return CPickleSerializer().loads(utils.toPyRow(row)).asDict(recursive=False)
