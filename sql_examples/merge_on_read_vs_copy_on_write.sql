-- The same UPDATE on two copies of a table: copy-on-write (Iceberg's default) rewrites the data
-- file holding the changed row; merge-on-read keeps it and adds a position-delete file that
-- masks the old row, plus a data file with the new one. Both read back the same rows.
-- (Partitioned by grp: a write makes one data file per partition it writes.)
-- Run: pyice-sql run sql_examples/merge_on_read_vs_copy_on_write.sql
CREATE DATABASE IF NOT EXISTS local.examples;
DROP TABLE IF EXISTS local.examples.cow;
DROP TABLE IF EXISTS local.examples.mor;
CREATE TABLE local.examples.cow (id int, grp string, v string) USING iceberg
PARTITIONED BY (grp)
TBLPROPERTIES ('write.update.mode' = 'copy-on-write');
CREATE TABLE local.examples.mor (id int, grp string, v string) USING iceberg
PARTITIONED BY (grp)
TBLPROPERTIES ('write.update.mode' = 'merge-on-read');

INSERT INTO local.examples.cow VALUES (1, 'x', 'a'), (2, 'x', 'b'), (3, 'y', 'c');
INSERT INTO local.examples.mor VALUES (1, 'x', 'a'), (2, 'x', 'b'), (3, 'y', 'c');

UPDATE local.examples.cow SET v = 'B' WHERE id = 2;
UPDATE local.examples.mor SET v = 'B' WHERE id = 2;

SELECT 'cow' AS t, * FROM local.examples.cow UNION ALL SELECT 'mor', * FROM local.examples.mor ORDER BY t, id;

-- live files: content 0 = data, 1 = position deletes
SELECT 'cow' AS t, content, sum(record_count) AS records, count(*) AS files FROM local.examples.cow.files GROUP BY content
UNION ALL
SELECT 'mor', content, sum(record_count), count(*) FROM local.examples.mor.files GROUP BY content
ORDER BY t, content;

SELECT 'cow' AS t, operation, summary['deleted-data-files'] AS deleted_data_files,
       summary['added-delete-files'] AS added_delete_files, summary['total-records'] AS total_records
FROM local.examples.cow.snapshots WHERE operation <> 'append'
UNION ALL
SELECT 'mor', operation, summary['deleted-data-files'], summary['added-delete-files'], summary['total-records']
FROM local.examples.mor.snapshots WHERE operation <> 'append';
