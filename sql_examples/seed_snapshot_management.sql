-- Seed 003: a table's life in snapshots (insert, insert, delete, merge), then Iceberg's snapshot
-- management: roll back, set the current snapshot, expire old snapshots (deleting the files
-- only they used), rewrite manifests. The seed passes snapshot ids, which a script cannot know
-- in advance: here tags name the snapshots (set_current_snapshot takes ref => 'tag').
-- Run: pyice-sql run sql_examples/seed_snapshot_management.sql
CREATE DATABASE IF NOT EXISTS local.db;
DROP TABLE IF EXISTS local.db.table;
DROP TABLE IF EXISTS local.db.table2;
CREATE TABLE local.db.table (id bigint, data string) USING iceberg;
INSERT INTO local.db.table VALUES (1, 'a');
INSERT INTO local.db.table VALUES (2, 'b');

-- two appends: two data files, two manifests
SELECT count(*) AS data_files, sum(record_count) AS records FROM local.db.table.files;
SELECT added_data_files_count, existing_data_files_count FROM local.db.table.manifests ORDER BY added_snapshot_id;

-- the first file holds only id 1: it is removed in metadata, nothing is rewritten
DELETE FROM local.db.table WHERE id = 1;
ALTER TABLE local.db.table CREATE TAG after_delete;

CREATE TABLE local.db.table2 (id bigint, data string) USING iceberg;
INSERT INTO local.db.table2 VALUES (2, 'bb');
INSERT INTO local.db.table2 VALUES (3, 'c');
MERGE INTO local.db.table t1 USING (SELECT * FROM local.db.table2) t2 ON t1.id = t2.id
WHEN MATCHED THEN UPDATE SET t1.data = t2.data
WHEN NOT MATCHED THEN INSERT *;
ALTER TABLE local.db.table CREATE TAG after_merge;

SELECT * FROM local.db.table ORDER BY id;
SELECT operation, summary['added-records'] AS added, summary['deleted-records'] AS deleted,
       summary['total-records'] AS total
FROM local.db.table.snapshots ORDER BY committed_at;

-- roll back to before the MERGE: only the current snapshot changes, no file is written
CALL local.system.set_current_snapshot(table => 'db.table', ref => 'after_delete');
SELECT * FROM local.db.table ORDER BY id;

-- and make the MERGE's snapshot current again
CALL local.system.set_current_snapshot(table => 'db.table', ref => 'after_merge');
SELECT * FROM local.db.table ORDER BY id;
SELECT is_current_ancestor, count(*) AS log_entries FROM local.db.table.history GROUP BY is_current_ancestor
ORDER BY is_current_ancestor;

-- expire every snapshot but the current one (tags would keep theirs alive: drop them first)
ALTER TABLE local.db.table DROP TAG after_delete;
ALTER TABLE local.db.table DROP TAG after_merge;
CALL local.system.expire_snapshots(table => 'db.table', older_than => TIMESTAMP '2100-01-01 00:00:00',
                                   retain_last => 1);
SELECT count(*) AS snapshots FROM local.db.table.snapshots;
SELECT count(*) AS manifests_of_any_snapshot FROM local.db.table.all_manifests;

-- rewrite the current snapshot's manifests into one ('replace' snapshot, same rows)
CALL local.system.rewrite_manifests('db.table');
SELECT count(*) AS manifests FROM local.db.table.manifests;
SELECT operation FROM local.db.table.snapshots ORDER BY committed_at;
SELECT * FROM local.db.table ORDER BY id;
