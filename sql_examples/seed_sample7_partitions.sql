-- Seed 001: how Iceberg keeps partitions. `sample7` is partitioned by (category, name);
-- `sample8` starts partitioned by category and evolves to (category, name), which changes
-- only the table metadata: old files keep the old spec, new files get the new one.
-- Run: pyice-sql run sql_examples/seed_sample7_partitions.sql
CREATE DATABASE IF NOT EXISTS local.seeds;
DROP TABLE IF EXISTS local.seeds.sample7;
CREATE TABLE local.seeds.sample7 (id bigint, data string, name string, category string)
USING iceberg
PARTITIONED BY (category, name)
TBLPROPERTIES ('format-version' = '2');

INSERT INTO local.seeds.sample7 VALUES (1, '1', 'xc1', 'pt2'), (2, '2', 'xc1', 'pt2');
INSERT INTO local.seeds.sample7 VALUES (2, '2', 'xc3', 'pt3');

SELECT * FROM local.seeds.sample7 ORDER BY id, name;

-- one data file per partition, its partition tuple in the manifest
SELECT partition.category, partition.name, record_count FROM local.seeds.sample7.files
ORDER BY partition.category, partition.name;

-- a filter on a partition column prunes the other partition's file
SELECT * FROM local.seeds.sample7 WHERE id = 1 AND name = 'xc1';

DROP TABLE IF EXISTS local.seeds.sample8;
CREATE TABLE local.seeds.sample8 (id bigint, data string, name string, category string)
USING iceberg
PARTITIONED BY (category)
TBLPROPERTIES ('format-version' = '2');

INSERT INTO local.seeds.sample8 VALUES (1, '1', 'xc1', 'pt2'), (2, '2', 'xc3', 'pt3');

ALTER TABLE local.seeds.sample8 ADD PARTITION FIELD name;

-- adding a partition field writes no snapshot: still the one append
SELECT count(*) AS snapshots FROM local.seeds.sample8.snapshots;

INSERT INTO local.seeds.sample8 VALUES (3, '3', 'xc1', 'pt2');

-- files written before the change keep spec 0 (category only), the new one has spec 1
SELECT spec_id, partition.category, partition.name, record_count FROM local.seeds.sample8.files
ORDER BY spec_id, partition.category;

SELECT * FROM local.seeds.sample8 WHERE name = 'xc1' ORDER BY id;
