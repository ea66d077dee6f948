-- Table maintenance, each step first as a dry run (dry_run => true reports what would be done
-- and changes nothing): compact small files, expire old snapshots, remove orphan files.
-- Run: pyice-sql run sql_examples/maintenance_dry_run.sql
CREATE DATABASE IF NOT EXISTS local.examples;
DROP TABLE IF EXISTS local.examples.events;
CREATE TABLE local.examples.events (id int, day date, v string) USING iceberg
PARTITIONED BY (day)
TBLPROPERTIES ('write.delete.mode' = 'merge-on-read');

-- three small appends (a write makes one file per partition) and a merge-on-read delete:
-- 3 data files in 2 partitions, 1 position-delete file
INSERT INTO local.examples.events VALUES (1, DATE '2024-05-01', 'a'), (2, DATE '2024-05-01', 'b');
INSERT INTO local.examples.events VALUES (3, DATE '2024-05-01', 'c');
INSERT INTO local.examples.events VALUES (4, DATE '2024-05-02', 'd');
DELETE FROM local.examples.events WHERE id = 2;
SELECT content, count(*) AS files, sum(record_count) AS records FROM local.examples.events.files
GROUP BY content ORDER BY content;

-- compaction: files of a partition with at least 2 files are rewritten into one, deletes applied
SELECT partition.day, count(*) AS data_files, sum(file_size_in_bytes) AS bytes FROM local.examples.events.data_files
GROUP BY partition.day ORDER BY partition.day;
CALL local.system.rewrite_data_files(table => 'examples.events', options => map('min-input-files', '2'),
                                     dry_run => true);
SELECT count(*) AS snapshots FROM local.examples.events.snapshots;
CALL local.system.rewrite_data_files(table => 'examples.events', options => map('min-input-files', '2'));
SELECT content, count(*) AS files, sum(record_count) AS records FROM local.examples.events.files
GROUP BY content ORDER BY content;

-- expire every snapshot but the current one
CALL local.system.expire_snapshots(table => 'examples.events', older_than => TIMESTAMP '2100-01-01 00:00:00',
                                   retain_last => 1, dry_run => true);
SELECT count(*) AS snapshots FROM local.examples.events.snapshots;
CALL local.system.expire_snapshots(table => 'examples.events', older_than => TIMESTAMP '2100-01-01 00:00:00',
                                   retain_last => 1);
SELECT count(*) AS snapshots FROM local.examples.events.snapshots;

-- files in the table's folders that no metadata references and older than 3 days (the
-- default cutoff, which keeps files of writes still in flight): none here
CALL local.system.remove_orphan_files(table => 'examples.events', dry_run => true);

SELECT * FROM local.examples.events ORDER BY id;
