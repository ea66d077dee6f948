"""The SQL text pyice writes back for a user's expression means what the user wrote.

A row-level statement's values and conditions are parsed by sqlglot and written back as Spark SQL
inside the statement's generated queries. Where sqlglot reads a Spark function into a node it
writes otherwise (to_char(x, fmt) came back as CAST(x AS STRING), percentile_cont(q) WITHIN GROUP
as percentile_approx, exists(array, lambda) was taken for an EXISTS subquery), the statement wrote
other values, a SELECT returned them, or the statement was refused. The truth is Spark
itself, evaluating the same text over the same rows.
"""
from __future__ import annotations

import re

import pytest
import sqlglot
from sqlglot.tokens import TokenType

from pyice_sql.core.sql.dialect import DIALECT
from tests.interop.engines import sort_rows

# values an UPDATE sets and a DELETE / MERGE may test: functions sqlglot parses into its own nodes
EXPRESSIONS = [
    "to_char(dec, '999.99')", "to_char(n, '000')", "format_number(dec, 1)",
    "date_format(ts, 'yyyy-MM-dd\\'T\\'HH:mm')", "to_date('20240304', 'yyyyMMdd')", "trunc(d, 'MM')",
    "date_trunc('week', ts)", "months_between(ts, DATE '2024-01-01', false)", "next_day(d, 'Mon')",
    "regexp_extract(s, '([a-z]),([a-z])', 2)", "split(s, '[,;]', 2)", "substring(s, -3, 2)",
    "locate(',', s, 3)", "lpad(s, 8, '*')", "translate(s, ',;', '12')", "initcap(s)",
    "exists(arr, x -> x IS NULL)", "forall(arr, x -> x > 0)", "transform(arr, (x, i) -> x + i)",
    "filter(arr, x -> x > 1)", "aggregate(arr, 0, (acc, x) -> acc + coalesce(x, 0), acc -> acc * 10)",
    "array_sort(arr, (a, b) -> CASE WHEN a IS NULL THEN 1 WHEN b IS NULL THEN -1 ELSE b - a END)",
    "map_filter(m, (k, v) -> v > 1)", "transform_values(m, (k, v) -> v * 10)", "element_at(m, 'k')",
    "str_to_map('a=1;b=2', ';', '=')", "get_json_object(js, '$.a.b[1]')", "from_json(js, 'a struct<b: array<int>>')",
    "pmod(neg, 3)", "neg DIV 2", "bround(dec, 2)", "round(-2.5)", "ceil(dec, 1)", "log(2, 8)",
    "shiftrightunsigned(neg, 60)", "width_bucket(5.3, 0.2, 10.6, 5)", "nvl2(s, 1, 2)",
    "CASE n WHEN 7 THEN 'seven' ELSE 'other' END", "n <=> NULL", "s LIKE 'a!%' ESCAPE '!'", "s ILIKE 'A%'",
]
COLUMNS = ("id int, n int, neg int, dec decimal(10,3), s string, d date, ts timestamp, arr array<int>, "
           "m map<string,int>, js string")
ROWS = ("(1, 7, -7, 12.345, 'a,b;c', DATE '2024-02-29', TIMESTAMP '2024-02-29 13:14:15.123456', array(3, 1, 2, NULL), "
        "map('k', 1, 'j', 2), '{\"a\":{\"b\":[1,2]}}'), "
        "(2, 123, 5, -0.5, 'A%x', DATE '2023-01-01', TIMESTAMP '2023-01-01 00:00:00', array(), map(), NULL)")


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_update_values_are_what_spark_computes(ice, mode):
    """UPDATE SET out_k = CAST(<expression> AS STRING), every expression in one statement."""
    outs = ", ".join(f"out{k} string" for k in range(len(EXPRESSIONS)))
    ice.sql(f"CREATE TABLE local.db.fx ({COLUMNS}, {outs}) USING iceberg "
            f"TBLPROPERTIES ('write.update.mode'='{mode}')")
    names = COLUMNS.replace(",", "").split()[::2]
    ice.sql(f"INSERT INTO local.db.fx ({', '.join(names)}) VALUES {ROWS}")
    select = "SELECT id, " + ", ".join(f"CAST({e} AS STRING)" for e in EXPRESSIONS) + " FROM "
    ice.table("local.db.fx").createOrReplaceTempView("fx_before")
    try:
        truth = sort_rows(ice.spark.sql(select + "fx_before").collect())
    finally:
        ice.spark.catalog.dropTempView("fx_before")
    selected = sort_rows(ice.sql(select + "local.db.fx").collect())  # a SELECT is written back too
    for k, e in enumerate(EXPRESSIONS):
        assert [r[k + 1] for r in selected] == [r[k + 1] for r in truth], f"SELECT {e}"
    sets = ", ".join(f"out{k} = CAST({e} AS STRING)" for k, e in enumerate(EXPRESSIONS))
    assert ice.sql(f"UPDATE local.db.fx SET {sets} WHERE id > 0").collect()[0]["num_updated_rows"] == 2
    got = sort_rows(ice.sql("SELECT id, " + ", ".join(f"out{k}" for k in range(len(EXPRESSIONS)))
                            + " FROM local.db.fx").collect())
    for k, e in enumerate(EXPRESSIONS):
        assert [r[k + 1] for r in got] == [r[k + 1] for r in truth], f"UPDATE SET {e}"


def test_merge_conditions_with_higher_order_functions(ice):
    """exists(array, lambda) in MERGE conditions and values is a function (sqlglot gives it the
    node of EXISTS (SELECT ...), which MERGE conditions may not hold)."""
    ice.sql(f"CREATE TABLE local.db.fm ({COLUMNS}) USING iceberg")
    ice.sql(f"INSERT INTO local.db.fm VALUES {ROWS}")
    ice.sql("MERGE INTO local.db.fm t USING (SELECT 1 AS id, array(5) AS a UNION ALL SELECT 3, array(1)) s "
            "ON t.id = s.id WHEN MATCHED AND exists(t.arr, x -> x IS NULL) THEN UPDATE SET "
            "s = CASE WHEN exists(s.a, y -> y = 5) THEN 'five' ELSE 'no' END "
            "WHEN NOT MATCHED AND forall(s.a, y -> y < 2) THEN INSERT (id, s) VALUES (s.id, 'new')")
    got = sort_rows(ice.sql("SELECT id, s FROM local.db.fm").collect())
    assert got == [[1, "five"], [2, "A%x"], [3, "new"]]  # by hand: row 1's arr holds a NULL


def test_ordered_set_aggregates_in_a_select(ice):
    """percentile_cont / percentile_disc WITHIN GROUP over a pyice table: exact, in the order's
    direction (sqlglot writes them as percentile_approx, without the direction)."""
    ice.sql("CREATE TABLE local.db.pc (g string, v int) USING iceberg")
    ice.sql("INSERT INTO local.db.pc VALUES ('a', 10), ('a', 20), ('a', 40), ('b', 5), ('b', NULL)")
    got = sort_rows(ice.sql("SELECT g, percentile_cont(0.25) WITHIN GROUP (ORDER BY v DESC), percentile_disc(0.5) "
                            "WITHIN GROUP (ORDER BY v) FROM local.db.pc GROUP BY g").collect())
    # by hand: a's values from the top are 40, 20, 10; its 25th percentile lies halfway from 40 to 20
    assert got == [["a", 30.0, 20.0], ["b", 5.0, 5.0]]


def _outcome(run, sql: str):
    """The query's rows, or "refused" (a refusal both ways is agreement, whoever words it)."""
    try:
        return [tuple(_comparable(v) for v in r) for r in run(sql).collect()]
    except Exception:  # noqa: BLE001
        return "refused"


def test_casts_of_parse_json(ice):
    """A cast of Spark 4's parse_json is a variant cast ('"1"' read as 1 for an int); sqlglot
    writes it as from_json, which reads NULL there. (Spark 3.5 has no parse_json: both fail.)"""
    ice.sql("CREATE TABLE local.db.pj (id int, js string) USING iceberg")
    ice.sql("""INSERT INTO local.db.pj VALUES (1, '{"a": "1", "b": 2}'), (2, '[1, "2"]')""")
    select = ("SELECT id, TRY_CAST(parse_json(js) AS map<string, int>), TRY_CAST(parse_json(js) AS array<int>) "
              "FROM {} ORDER BY id")
    ice.table("local.db.pj").createOrReplaceTempView("pj_rows")
    try:
        truth = _outcome(ice.spark.sql, select.format("pj_rows"))
    finally:
        ice.spark.catalog.dropTempView("pj_rows")
    assert _outcome(ice.sql, select.format("local.db.pj")) == truth


# Spark's own examples that cannot be compared: their output is random or the time of day
NOT_COMPARED = re.compile(r"aes_encrypt|rand|uuid|shuffle|current_|now\(|curdate|localtimestamp|monotonically|"
                          r"spark_partition|input_file|version\(|reflect|java_method|session_user|user\(|"
                          r"unix_timestamp\(\)|localtime", re.I)
# what pyice refuses (a parse error, or text Spark then refuses) where Spark takes it: a binary
# literal with a space after its X, VALUES rows without parentheses, Spark 4's >>> operator
REFUSED = re.compile(r"\bX '|FROM VALUES '|>>>")


def _tokens(sql: str) -> list[tuple]:
    """The statement's tokens, words compared without case (strings and quoted names as they are)."""
    return [(t.token_type, t.text if t.token_type in (TokenType.STRING, TokenType.IDENTIFIER) else t.text.upper())
            for t in DIALECT.tokenize(sql)]


def _comparable(value):
    """A value as == can compare it: Spark 4's VariantVal has no equality of its own."""
    return value.toJson() if hasattr(value, "toJson") else value


def test_spark_function_examples_survive_the_round_trip(spark):
    """Every example in Spark's own documentation of its built-in functions (DESCRIBE FUNCTION
    EXTENDED) returns the same rows as written and after pyice's parse and write-back; only the
    examples whose text changed are run twice. A new sqlglot release that writes one of them
    otherwise fails here."""
    examples = []
    for (name,) in spark.sql("SHOW SYSTEM FUNCTIONS").collect():
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            continue  # operators (+, ==, ...) are documented through the functions that use them
        text = "\n".join(r[0] for r in spark.sql(f"DESCRIBE FUNCTION EXTENDED `{name}`").collect())
        examples += [m.strip().rstrip(";") for m in re.findall(r"^\s*> (SELECT .*)$", text, re.M)]
    assert len(examples) > 500
    compared, differ = 0, []
    for sql in examples:
        if NOT_COMPARED.search(sql) or REFUSED.search(sql):
            continue
        try:
            written = sqlglot.parse_one(sql, dialect=DIALECT).sql(dialect=DIALECT)
        except sqlglot.errors.ParseError as e:
            differ.append(f"{sql}\n  not parsed: {str(e).splitlines()[0]}")
            continue
        if _tokens(written) == _tokens(sql):
            continue
        compared += 1
        outcomes = [_outcome(spark.sql, text) for text in (sql, written)]
        if outcomes[0] != outcomes[1]:
            differ.append(f"{sql}\n  written as {written}: {outcomes[0]!r:.120} vs {outcomes[1]!r:.120}")
    assert compared > 50, "the round trip changed almost no example: the check would prove nothing"
    assert not differ, "\n".join(differ)
