-- Seed 000: Flink's `sink6` orders table, an Iceberg v2 table whose identifier field is
-- order_id (Flink: PRIMARY KEY (order_id) NOT ENFORCED). Flink upserts by that key write an
-- equality delete plus the new row; in Spark SQL the same upsert is a MERGE on the key.
-- Run: pyice-sql run sql_examples/seed_sink6_orders.sql
CREATE DATABASE IF NOT EXISTS local.seeds;
DROP TABLE IF EXISTS local.seeds.sink6;
CREATE TABLE local.seeds.sink6 (
  order_id int NOT NULL COMMENT 'unique id',
  order_date date,
  order_time timestamp,
  quantity int,
  product_id int,
  purchaser string
) USING iceberg
TBLPROPERTIES ('format-version' = '2', 'write.merge.mode' = 'merge-on-read');
-- the seed's PRIMARY KEY (order_id) NOT ENFORCED: order_id becomes the schema's identifier field
ALTER TABLE local.seeds.sink6 SET IDENTIFIER FIELDS order_id;

DESCRIBE local.seeds.sink6;

-- the seed's first snapshot: an append of 10 orders
INSERT INTO local.seeds.sink6 VALUES
  (1,  DATE '2022-03-31', TIMESTAMP '2022-03-31 06:55:01', 1, 101, 'alice'),
  (2,  DATE '2022-03-31', TIMESTAMP '2022-03-31 06:55:02', 2, 102, 'bob'),
  (3,  DATE '2022-03-31', TIMESTAMP '2022-03-31 06:55:03', 3, 103, 'carol'),
  (4,  DATE '2022-03-31', TIMESTAMP '2022-03-31 06:55:04', 4, 104, 'dave'),
  (5,  DATE '2022-03-31', TIMESTAMP '2022-03-31 06:55:05', 5, 105, 'erin'),
  (6,  DATE '2022-03-31', TIMESTAMP '2022-03-31 06:55:06', 6, 106, 'frank'),
  (7,  DATE '2022-03-31', TIMESTAMP '2022-03-31 06:55:07', 7, 107, 'grace'),
  (8,  DATE '2022-03-31', TIMESTAMP '2022-03-31 06:55:08', 8, 108, 'heidi'),
  (9,  DATE '2022-03-31', TIMESTAMP '2022-03-31 06:55:09', 9, 109, 'ivan'),
  (10, DATE '2022-03-31', TIMESTAMP '2022-03-31 06:56:48', 10, 110, 'judy');

-- the seed's second snapshot: one upsert by the key (order 7 changes its quantity)
MERGE INTO local.seeds.sink6 t
USING (SELECT 7 AS order_id, DATE '2022-03-31' AS order_date, TIMESTAMP '2022-03-31 06:56:48' AS order_time,
              70 AS quantity, 107 AS product_id, 'grace' AS purchaser) s
ON t.order_id = s.order_id
WHEN MATCHED THEN UPDATE SET *
WHEN NOT MATCHED THEN INSERT *;

SELECT order_id, quantity, purchaser FROM local.seeds.sink6 WHERE order_id BETWEEN 6 AND 8 ORDER BY order_id;
SELECT count(*) AS orders, sum(quantity) AS total_quantity FROM local.seeds.sink6;

-- as in the seed's metadata: an append, then an overwrite adding one row and one delete file
SELECT operation, summary['added-records'] AS added_records, summary['added-delete-files'] AS added_delete_files,
       summary['total-records'] AS total_records, summary['total-position-deletes'] AS total_position_deletes
FROM local.seeds.sink6.snapshots ORDER BY committed_at;
