-- Seed 004: one MERGE with DELETE, UPDATE and INSERT clauses chosen by a column of the source
-- (opType). The first WHEN clause whose condition holds decides a row's action; a row that no
-- clause takes is left alone.
-- Run: pyice-sql run sql_examples/seed_merge_clauses.sql
CREATE DATABASE IF NOT EXISTS local.seeds;
DROP TABLE IF EXISTS local.seeds.target_table;
-- merge-on-read; one partition per ten ids, so a write makes one file per partition it touches
CREATE TABLE local.seeds.target_table (id int, name string) USING iceberg
PARTITIONED BY (truncate(10, id))
TBLPROPERTIES ('write.merge.mode' = 'merge-on-read');

INSERT INTO local.seeds.target_table VALUES (1, 'one'), (2, 'two'), (3, 'three'), (4, 'four');

CREATE OR REPLACE TEMP VIEW source_table AS
SELECT * FROM VALUES
  (1, 'ONE',   'delete'),   -- matched, delete
  (2, 'TWO',   'update'),   -- matched, update
  (3, 'THREE', 'insert'),   -- matched, but no matched clause is for 'insert': unchanged
  (5, 'five',  'insert'),   -- not matched, insert
  (6, 'six',   'update')    -- not matched, but only 'insert' inserts: ignored
  AS s(id, name, opType);

MERGE INTO local.seeds.target_table t
USING source_table s
ON s.id = t.id
WHEN MATCHED AND s.opType = 'delete' THEN DELETE
WHEN MATCHED AND s.opType = 'update' THEN UPDATE SET id = s.id, name = s.name
WHEN NOT MATCHED AND s.opType = 'insert' THEN INSERT (id, name) VALUES (s.id, s.name);

SELECT * FROM local.seeds.target_table ORDER BY id;
