"""The bad-input corpus: statements that must each fail with a pyice_sql error and commit nothing.

Every case is (category, sql, positioned): `positioned` says the error must carry a SQL
position (it does wherever the fault is in the text; data faults found while running — a
cardinality or NOT NULL violation, an overflowing value — have no place in the text).
Hand-written cases come first; the generated ones multiply them over names, truncation
points, literals and clauses. The tables are the ones `SETUP` creates.
"""
from __future__ import annotations

import re

SETUP = [
    "CREATE DATABASE local.db",
    "CREATE TABLE local.db.t (id bigint NOT NULL, s string, d decimal(10,2), ts timestamp, "
    "st struct<a: int, b: string>) USING iceberg PARTITIONED BY (bucket(4, id))",
    "INSERT INTO local.db.t VALUES (1, 'a', 1.50, TIMESTAMP'2024-01-01 00:00:00', named_struct('a', 1, 'b', 'x')), "
    "(2, 'b', 2.50, TIMESTAMP'2024-01-02 00:00:00', named_struct('a', 2, 'b', 'y')), "
    "(3, 'c', NULL, NULL, NULL)",
    "CREATE TABLE local.db.u (id bigint, s string, d decimal(10,2)) USING iceberg",
    "INSERT INTO local.db.u VALUES (1, 'x', 9.99), (1, 'y', 8.88), (2, 'z', 7.77), (9, 'w', 1.00)",
]
TABLES = ("t", "u")

MERGE_OK = ("MERGE INTO local.db.t t USING (SELECT * FROM local.db.u WHERE id = 2) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET s = s.s WHEN NOT MATCHED THEN INSERT (id, s) VALUES (s.id, s.s)")
VALID = [  # valid statements whose every truncation point below leaves an incomplete one
    MERGE_OK,
    "UPDATE local.db.t SET s = 'q', d = d + 1 WHERE id = 1 AND s IS NOT NULL",
    "DELETE FROM local.db.t WHERE id IN (1, 2) OR s = 'c'",
    "INSERT INTO local.db.t (id, s) VALUES (10, 'k'), (11, 'l')",
    "MERGE INTO local.db.t AS t USING local.db.u AS s ON t.id = s.id AND s.id > 5 "
    "WHEN MATCHED AND t.s <> s.s THEN DELETE WHEN NOT MATCHED BY SOURCE AND t.id = 3 THEN UPDATE SET s = 'gone'",
    "SELECT id, count(*) FROM local.db.t WHERE id > 0 GROUP BY id HAVING count(*) > 1",
    "UPDATE local.db.t t SET t.st = named_struct('a', 5, 'b', 'n') WHERE t.id BETWEEN 1 AND 2",
    "DELETE FROM local.db.t AS x WHERE EXISTS (SELECT 1 FROM local.db.u u WHERE u.id = x.id)",
]
# A statement cut after one of these can never be complete.
_OPEN_ENDS = {"WHERE", "SET", "ON", "AND", "OR", "=", ",", "(", "THEN", "USING", "INTO", "FROM", "VALUES", "WHEN",
              "BY", "NOT", "+", "<>", ">", "BETWEEN", "IN", "AS", "HAVING", "MATCHED", "UPDATE", "INSERT",
              "MERGE", "SELECT", "EXISTS", "GROUP", "IS"}  # (not DELETE: `THEN DELETE` ends a MERGE)
_TOKEN = re.compile(r"'[^']*'|\w+(?:\.\w+)*|<>|[^\s\w]")

HAND = [
    # truncated / broken syntax
    ("syntax", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id", True),
    ("syntax", "UPDATE local.db.t SET", True),
    ("syntax", "DELETE local.db.t WHERE id = 1", True),
    ("syntax", "UPDATE local.db.t SET s = 'a' WHERE", True),
    ("syntax", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id WHEN MATCHED THEN", True),
    ("syntax", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id WHEN MATCHED THEN INSERT *", True),
    ("syntax", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id WHEN NOT MATCHED THEN UPDATE SET s = 'x'",
     True),
    ("syntax", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN INSERT *",
     True),
    ("syntax", "UPDATE local.db.t SET s = 'unterminated WHERE id = 1", True),
    ("syntax", "DELETE FROM local.db.t WHERE id = (1", True),
    ("syntax", "INSERT INTO local.db.t VALUES (1, 'a'", True),
    ("syntax", "UPDATE local.db.t SET s = 'a',, d = 1", True),
    ("syntax", "DELETE FROM local.db.t WHERE id = 1 /* unclosed comment", True),
    # illegal clause orders
    ("clause-order", "UPDATE local.db.t WHERE id = 1 SET s = 'x'", True),
    ("clause-order", "DELETE FROM local.db.t WHERE id = 1 ORDER BY id", True),
    ("clause-order", "DELETE FROM local.db.t LIMIT 1", True),
    ("clause-order", "UPDATE local.db.t SET s = 'x' WHERE id = 1 GROUP BY id", True),
    ("clause-order", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id WHEN NOT MATCHED THEN INSERT * "
                     "WHEN MATCHED THEN DELETE", True),
    ("clause-order", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id "
                     "WHEN NOT MATCHED BY SOURCE THEN DELETE WHEN MATCHED THEN DELETE", True),
    ("clause-order", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id "
                     "WHEN MATCHED THEN DELETE WHEN MATCHED AND s.s = 'x' THEN UPDATE SET s = s.s", True),
    ("clause-order", "MERGE INTO local.db.t t USING local.db.u s WHEN MATCHED THEN DELETE ON t.id = s.id", True),
    ("clause-order", "MERGE INTO local.db.t t ON t.id = s.id USING local.db.u s WHEN MATCHED THEN DELETE", True),
    # unknown names
    ("unknown", "UPDATE local.db.nope SET s = 'x'", True),
    ("unknown", "DELETE FROM local.nodb.t WHERE id = 1", True),
    ("unknown", "DELETE FROM nocat.db.t WHERE id = 1", True),
    ("unknown", "UPDATE local.db.t SET nope = 1", True),
    ("unknown", "UPDATE local.db.t SET s = nope", True),
    ("unknown", "DELETE FROM local.db.t WHERE nope = 1", True),
    ("unknown", "DELETE FROM local.db.t WHERE no_such_function(id) = 1", True),
    ("unknown", "UPDATE local.db.t SET st.zz = 1", True),
    ("unknown", "UPDATE local.db.t x SET s = y.s", True),
    ("unknown", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.nope WHEN MATCHED THEN DELETE", True),
    ("unknown", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id WHEN MATCHED THEN UPDATE SET nope = 1",
     True),
    ("unknown", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id "
                "WHEN NOT MATCHED THEN INSERT (id, nope) VALUES (s.id, 1)", True),
    ("unknown", "MERGE INTO local.db.t t USING local.db.nope s ON t.id = s.id WHEN MATCHED THEN DELETE", True),
    ("unknown", "MERGE INTO local.db.t t USING no_such_view s ON t.id = s.id WHEN MATCHED THEN DELETE", True),
    ("unknown", "INSERT INTO local.db.t (id, nope) VALUES (1, 2)", True),
    ("unknown", "SELECT nope FROM local.db.t", True),
    # ambiguous columns
    ("ambiguous", "MERGE INTO local.db.t t USING local.db.u s ON id = s.id WHEN MATCHED THEN DELETE", True),
    ("ambiguous", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id "
                  "WHEN MATCHED AND s = 'x' THEN DELETE", True),
    ("ambiguous", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id WHEN MATCHED THEN UPDATE SET s = d",
     True),
    ("ambiguous", "MERGE INTO local.db.t t USING (SELECT id, s, s AS s FROM local.db.u) s ON t.id = s.id "
                  "WHEN MATCHED THEN UPDATE SET s = s.s", True),
    ("ambiguous", "UPDATE local.db.t SET s = 'x', s = 'y'", True),
    ("ambiguous", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id "
                  "WHEN MATCHED THEN UPDATE SET t.s = s.s, s = 'y'", True),
    ("ambiguous", "DELETE FROM local.db.t x WHERE id IN (SELECT id FROM local.db.u JOIN local.db.t USING (s))", True),
    # wrong types
    ("type", "UPDATE local.db.t SET id = 'abc'", True),
    ("type", "UPDATE local.db.t SET ts = 42", True),
    ("type", "UPDATE local.db.t SET st = 'x'", True),
    ("type", "UPDATE local.db.t SET st = named_struct('a', 'not-int', 'q', 1)", True),
    ("type", "UPDATE local.db.t SET d = array(1, 2)", True),
    ("type", "UPDATE local.db.t SET s = map('k', 1)", True),
    ("type", "DELETE FROM local.db.t WHERE st = 1", True),
    ("type", "DELETE FROM local.db.t WHERE id", True),
    ("type", "UPDATE local.db.t SET s = 'x' WHERE s + array(1) = 1", True),
    ("type", "INSERT INTO local.db.t VALUES ('one', 'a', 1.0, NULL, NULL)", True),
    ("type", "INSERT INTO local.db.t VALUES (1, 'a')", True),
    ("type", "INSERT INTO local.db.t VALUES (1, 'a', 1.0, NULL, NULL, 'extra')", True),
    ("type", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id WHEN MATCHED THEN UPDATE SET ts = s.d",
     True),
    ("type", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.s WHEN MATCHED AND s.id THEN DELETE", True),
    ("type", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *", True),
    ("type", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *", True),
    # huge literals
    ("huge", "UPDATE local.db.t SET id = 99999999999999999999999999 WHERE id = 1", False),
    ("huge", "UPDATE local.db.t SET d = 123456789012345.67 WHERE id = 1", False),
    ("huge", "INSERT INTO local.db.t (id) VALUES (9223372036854775808)", False),
    ("huge", "UPDATE local.db.t SET d = 1e400 WHERE id = 1", True),
    ("huge", "DELETE FROM local.db.t WHERE nope = '" + "x" * 100_000 + "'", True),
    ("huge", "UPDATE local.db.t SET s = '" + "y" * 100_000 + "' WHERE nope = 1", True),
    ("huge", "UPDATE local.db.t SET d = " + "9" * 60 + " WHERE id = 1", False),
    # unicode identifiers
    ("unicode", "UPDATE local.db.t SET ñame = 'x'", True),
    ("unicode", "DELETE FROM local.db.tä WHERE id = 1", True),
    ("unicode", "UPDATE local.db.`表` SET s = 'x'", True),
    ("unicode", "DELETE FROM local.db.t WHERE `名前` = 1", True),
    ("unicode", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.`ïd` WHEN MATCHED THEN DELETE", True),
    ("unicode", "UPDATE local.db.t SET s = 'ok' WHERE `emoji😀` IS NULL", True),
    ("unicode", "UPDATE local.db.t SET s = '\u202e' WHERE ſ = 1", True),
    # injection-style strings inside literals (the statements fail for another reason; the table survives)
    ("injection", "UPDATE local.db.t SET s = 'x''; DROP TABLE local.db.t; --' WHERE nope = 1", True),
    ("injection", "DELETE FROM local.db.t WHERE s = '1'' OR ''1''=''1' AND nope = 1", True),
    ("injection", "UPDATE local.db.t SET id = '1; DELETE FROM local.db.t'", True),
    ("injection", "INSERT INTO local.db.t VALUES (1, 'a'); DROP TABLE local.db.t --', 1)", True),
    ("injection", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id WHEN MATCHED THEN UPDATE SET "
                  "s = '\\'; TRUNCATE TABLE local.db.t; --', nope = 1", True),
    ("injection", "DELETE FROM local.db.t WHERE s = \"x\"\" OR 1=1 --\" AND nope = 1", True),
    ("injection", "UPDATE local.db.t SET s = '${jndi:ldap://x/a}' WHERE nope = 2", True),
    ("injection", "UPDATE local.db.t SET s = '%s%s%n' WHERE nope = 3", True),
    # MERGE cardinality
    ("cardinality", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id WHEN MATCHED THEN UPDATE SET s = s.s",
     False),
    ("cardinality", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id "
                    "WHEN MATCHED AND s.s = 'nothing' THEN DELETE", False),
    ("cardinality", "MERGE INTO local.db.t t USING (SELECT 2 AS id UNION ALL SELECT 2) s ON t.id = s.id "
                    "WHEN MATCHED THEN UPDATE SET s = 'dup' WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)", False),
    ("cardinality", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id "
                    "WHEN MATCHED AND s.s = 'x' THEN UPDATE SET s = s.s WHEN MATCHED THEN DELETE", False),
    ("cardinality", "MERGE INTO local.db.t t USING local.db.u s ON t.id >= s.id WHEN MATCHED THEN UPDATE SET d = s.d",
     False),
    # NOT NULL
    ("not-null", "INSERT INTO local.db.t (id, s) VALUES (NULL, 'a')", False),
    ("not-null", "INSERT INTO local.db.t (s) VALUES ('no id')", True),
    ("not-null", "UPDATE local.db.t SET id = NULL WHERE id = 2", False),
    ("not-null", "UPDATE local.db.t SET id = CASE WHEN id = 3 THEN NULL ELSE id END", False),
    ("not-null", "MERGE INTO local.db.t t USING (SELECT CAST(NULL AS bigint) AS id, 'n' AS s) s ON t.id = s.id "
                 "WHEN NOT MATCHED THEN INSERT (id, s) VALUES (s.id, s.s)", False),
    ("not-null", "MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id AND s.id = 2 "
                 "WHEN MATCHED THEN UPDATE SET id = NULL", False),
    ("not-null", "INSERT INTO local.db.t SELECT NULL, s, d, NULL, NULL FROM local.db.u", False),
    # writes to metadata tables and to snapshots
    ("metadata-table", "DELETE FROM local.db.t.snapshots", True),
    ("metadata-table", "DELETE FROM local.db.t.files WHERE record_count > 0", True),
    ("metadata-table", "UPDATE local.db.t.history SET is_current_ancestor = false", True),
    ("metadata-table", "INSERT INTO local.db.t.manifests SELECT * FROM local.db.t.manifests", True),
    ("metadata-table", "MERGE INTO local.db.t.entries e USING local.db.u s ON e.status = s.id "
                       "WHEN MATCHED THEN DELETE", True),
    ("metadata-table", "UPDATE local.db.t.partitions SET record_count = 0", True),
    ("metadata-table", "DELETE FROM local.db.t.refs", True),
    ("metadata-table", "INSERT OVERWRITE local.db.t.snapshots SELECT * FROM local.db.t.snapshots", True),
    ("snapshot", "DELETE FROM local.db.t VERSION AS OF 1 WHERE id = 1", True),
    ("snapshot", "UPDATE local.db.t VERSION AS OF 1 SET s = 'x'", True),
    ("snapshot", "UPDATE local.db.t TIMESTAMP AS OF '2024-01-01 00:00:00' SET s = 'x'", True),
    ("snapshot", "INSERT INTO local.db.t VERSION AS OF 1 VALUES (5, 'a', 1.0, NULL, NULL)", True),
    ("snapshot", "MERGE INTO local.db.t VERSION AS OF 1 t USING local.db.u s ON t.id = s.id "
                 "WHEN MATCHED THEN DELETE", True),
    ("snapshot", "DELETE FROM local.db.t FOR SYSTEM_VERSION AS OF 1", True),
    ("snapshot", "SELECT * FROM local.db.t VERSION AS OF 123456789", True),
    ("snapshot", "SELECT * FROM local.db.t TIMESTAMP AS OF '1970-01-01 00:00:00'", True),
    # digits that are not ASCII ('\u00b2' is a digit to str.isdigit, not to int())
    ("snapshot", "SELECT * FROM local.db.t TIMESTAMP AS OF '\u00b2'", True),
    ("property", "ALTER TABLE local.db.t SET TBLPROPERTIES ('format-version' = '\u00b2')", False),
    ("procedure", "CALL local.system.rollback_to_snapshot('db.t', '\u00b2')", True),
]


def _truncations(sql: str) -> list[str]:
    out = []
    for m in _TOKEN.finditer(sql):
        if m.group(0).upper() in _OPEN_ENDS:
            out.append(sql[:m.end()])
    return out


def generated() -> list[tuple[str, str, bool]]:
    cases: list[tuple[str, str, bool]] = []
    for sql in VALID:
        cases += [("truncated", cut, True) for cut in _truncations(sql)]
    # (_file and _pos are Iceberg metadata columns, valid in Spark: not here)
    unknown_cols = ["nope", "ID2", "s_", "st.c", "t.nope", "`x y`", "Ωmega", "_posx", "file_", "__row_operation"]
    for col in unknown_cols:
        cases += [
            ("unknown", f"UPDATE local.db.t SET s = 'x' WHERE {col} = 1", True),
            ("unknown", f"DELETE FROM local.db.t WHERE {col} IS NULL", True),
            ("unknown", f"MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id "
                        f"WHEN MATCHED AND {col} > 0 THEN DELETE", True),
            ("unknown", f"UPDATE local.db.t SET s = {col}", True),
        ]
    for name in ["local.db.missing", "local.other.t", "nocatalog.db.t", "local.db.t.nonesuch", "db.missing",
                 "local.db.`t `", "local.db.T_", "local.`db.t`"]:
        cases += [
            ("unknown", f"DELETE FROM {name} WHERE id = 1", True),
            ("unknown", f"UPDATE {name} SET s = 'x'", True),
            ("unknown", f"MERGE INTO {name} t USING local.db.u s ON t.id = s.id WHEN MATCHED THEN DELETE", True),
        ]
    wrong_values = {"id": ["'abc'", "array(1)", "named_struct('a', 1)", "map(1, 2)", "X'00'"],
                    "ts": ["true", "array(1)", "X'01'"],
                    "d": ["'12x'", "array(1.0)", "true"],
                    "st": ["1", "'s'", "named_struct('b', 1)", "array(named_struct('a', 1, 'b', 'x'))"]}
    for col, values in wrong_values.items():
        for v in values:
            cases += [
                ("type", f"UPDATE local.db.t SET {col} = {v}", col != "d" or v != "'12x'"),
                ("type", f"MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id AND s.id = 2 "
                         f"WHEN MATCHED THEN UPDATE SET {col} = {v}", col != "d" or v != "'12x'"),
            ]
    for lit in ["9" * 20, "-" + "9" * 20, "1" + "0" * 40, "9223372036854775808"]:
        cases.append(("huge", f"UPDATE local.db.t SET id = {lit} WHERE id = 2", False))
        cases.append(("huge", f"INSERT INTO local.db.t (id, s) VALUES ({lit}, 'h')", False))
    payloads = ["'; DROP TABLE local.db.t; --", "\\' OR 1=1 --", "\" OR \"\"=\"", "); DELETE FROM local.db.t; --",
                "' UNION SELECT * FROM local.db.t.snapshots --", "\\x00\\x1a", "${var}", "`; --"]
    for p in payloads:
        q = p.replace("\\", "\\\\").replace("'", "\\'")  # Spark escapes with a backslash
        cases += [
            ("injection", f"UPDATE local.db.t SET s = '{q}' WHERE nope = 1", True),
            ("injection", f"DELETE FROM local.db.t WHERE s = '{q}' AND nope IS NULL", True),
            ("injection", f"MERGE INTO local.db.t t USING (SELECT 1 AS id, '{q}' AS s) s ON t.id = s.id "
                          f"WHEN MATCHED THEN UPDATE SET nope = s.s", True),
        ]
    for meta in ["snapshots", "files", "manifests", "history", "entries", "partitions", "all_data_files",
                 "metadata_log_entries", "refs", "position_deletes", "data_files", "delete_files"]:
        cases += [
            ("metadata-table", f"DELETE FROM local.db.t.{meta}", True),
            ("metadata-table", f"UPDATE local.db.t.{meta} SET x = 1", True),
        ]
    for travel in ["VERSION AS OF 1", "VERSION AS OF 999", "TIMESTAMP AS OF '2024-01-01'",
                   "FOR SYSTEM_TIME AS OF '2024-01-01'"]:
        cases += [
            ("snapshot", f"DELETE FROM local.db.t {travel} WHERE id = 1", True),
            ("snapshot", f"UPDATE local.db.t {travel} SET s = 'x'", True),
            ("snapshot", f"MERGE INTO local.db.t {travel} t USING local.db.u s ON t.id = s.id "
                         "WHEN MATCHED THEN DELETE", True),
        ]
    return cases


def corpus() -> list[tuple[str, str, bool]]:
    return HAND + generated()
