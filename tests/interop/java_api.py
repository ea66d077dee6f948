"""Run SQL and Iceberg Java API calls on the reference engine, in one JVM: what its SQL cannot do.

Iceberg 1.10.2 on Spark 3.5 refuses `DEFAULT` in DDL ("setting default values in Spark is
currently unsupported"), so column defaults are set the way Java's own API sets them:
`Table.updateSchema().addColumn(name, type, doc, Literal)` and `.updateColumnDefault(name, Literal)`.
No Spark statement writes equality deletes (Flink and other streaming writers do), so they are
written with Java's generic writer (`GenericAppenderFactory.newEqDeleteWriter`) and committed as a
row delta, as those writers commit them.

    python java_api.py --reference DIR/iceberg_ref.py --warehouse WH STATEMENT...

A STATEMENT is SQL, or a JSON object for an API call on a table of the `ref` catalog:
  {"add_column": "db.t", "name": "c", "type": "int", "default": 7, "required": false}
  {"set_default": "db.t", "name": "c", "default": 9}
  {"equality_delete": "db.t", "columns": ["id"], "partition": {"p": 0}, "rows": [[3], [4]]}
  {"append": "db.t", "schema": "id bigint, v string", "rows": [[1, "a"], [null, "b"]]}
The default is a JSON single value converted with `Literal.of(value).to(type)`. An equality delete
is one file of `rows` (values of `columns`, in order; JSON numbers reach Java as int, so use int
columns) in the table's current partition spec at `partition` (null or absent: unpartitioned),
committed alone. An append is the DataFrame API's `writeTo(table).append()` of `rows` in a frame of
`schema` (a Spark DDL string). Output follows the reference engine's protocol, one {"sql", "rows" | "error"}
line per statement, but a rejected statement does not stop the rest (refusals are results here).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys


def _reference(path: str):
    spec = importlib.util.spec_from_file_location("iceberg_ref", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _api_call(spark, call: dict) -> None:
    if "append" in call:
        spark.createDataFrame(call["rows"], call["schema"]).writeTo("ref." + call["append"]).append()
        return
    jvm = spark._jvm
    table_name = call.get("add_column") or call.get("set_default") or call["equality_delete"]
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, "ref." + table_name)
    if "equality_delete" in call:
        _equality_delete(spark, table, call)
        return
    column = table.schema().findField(call["name"])
    iceberg_type = (jvm.org.apache.iceberg.types.Types.fromPrimitiveString(call["type"]) if "add_column" in call
                    else column.type())
    default = jvm.org.apache.iceberg.expressions.Literal.of(call["default"]).to(iceberg_type)
    update = table.updateSchema()
    if "add_column" not in call:
        update.updateColumnDefault(call["name"], default)
    elif call.get("required"):
        update.addRequiredColumn(call["name"], iceberg_type, None, default)
    else:
        update.addColumn(call["name"], iceberg_type, None, default)
    update.commit()


def _equality_delete(spark, table, call: dict) -> None:
    jvm = spark._jvm
    iceberg = jvm.org.apache.iceberg
    schema, spec = table.schema(), table.spec()
    field_ids = spark.sparkContext._gateway.new_array(jvm.int, len(call["columns"]))
    for i, name in enumerate(call["columns"]):
        field_ids[i] = schema.findField(name).fieldId()
    delete_schema = schema.select(call["columns"])
    partition = None
    if call.get("partition"):
        partition = iceberg.data.GenericRecord.create(spec.partitionType())
        for name, value in call["partition"].items():
            partition.setField(name, value)
    factory = iceberg.data.GenericAppenderFactory(schema, spec, field_ids, delete_schema, None)
    out = iceberg.io.OutputFileFactory.builderFor(table, 1, 1).format(iceberg.FileFormat.PARQUET).build()
    target = out.newOutputFile(spec, partition) if partition is not None else out.newOutputFile()
    writer = factory.newEqDeleteWriter(target, iceberg.FileFormat.PARQUET, partition)
    for values in call["rows"]:
        record = iceberg.data.GenericRecord.create(delete_schema)
        for name, value in zip(call["columns"], values):
            record.setField(name, value)
        writer.write(record)
    writer.close()
    table.newRowDelta().addDeletes(writer.toDeleteFile()).commit()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference", required=True)
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("statements", nargs="*")
    a = ap.parse_args()
    ref = _reference(a.reference)
    spark = ref.session(a.warehouse)
    spark.sparkContext.setLogLevel("ERROR")
    for statement in a.statements:
        try:
            if statement.startswith("{"):
                _api_call(spark, json.loads(statement))
                rows = []
            else:
                rows = [ref.plain(list(r)) for r in spark.sql(statement).collect()]
            print(json.dumps({"sql": statement, "rows": rows}), flush=True)
        except Exception as e:  # the engine's own message, first lines (py4j puts Java's cause after)
            lines = str(e).strip().splitlines()
            at = next((i for i, line in enumerate(lines) if "Exception:" in line), len(lines))
            cause = " ".join(line.strip() for line in lines[at:at + 2])  # Java's exception and its detail
            print(json.dumps({"sql": statement, "error": f"{lines[0]} {cause}"[:2000]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
