-- pyice_sql quickstart: create, load, change and read an Iceberg table in ./warehouse.
-- Run: pyice-sql run sql_examples/quickstart.sql
CREATE DATABASE IF NOT EXISTS local.demo;
DROP TABLE IF EXISTS local.demo.orders;
CREATE TABLE local.demo.orders (
  order_id bigint NOT NULL,
  customer string,
  amount decimal(10, 2),
  status string,
  ts timestamp
) USING iceberg
PARTITIONED BY (days(ts), bucket(4, order_id))
TBLPROPERTIES ('write.merge.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read');

INSERT INTO local.demo.orders VALUES
  (1, 'alice', 10.50, 'new',  TIMESTAMP '2024-05-01 09:00:00'),
  (2, 'bob',   99.00, 'new',  TIMESTAMP '2024-05-01 10:30:00'),
  (3, 'carol', 15.25, 'paid', TIMESTAMP '2024-05-02 08:15:00');

CREATE OR REPLACE TEMP VIEW order_updates AS
SELECT * FROM VALUES
  (2, 'bob',  99.00, 'paid',      TIMESTAMP '2024-05-01 10:30:00'),
  (3, 'carol', 15.25, 'cancelled', TIMESTAMP '2024-05-02 08:15:00'),
  (4, 'dave',  42.00, 'new',       TIMESTAMP '2024-05-03 12:00:00')
  AS u(order_id, customer, amount, status, ts);

MERGE INTO local.demo.orders o
USING order_updates u
ON o.order_id = u.order_id
WHEN MATCHED AND u.status = 'cancelled' THEN DELETE
WHEN MATCHED THEN UPDATE SET status = u.status
WHEN NOT MATCHED THEN INSERT *;

UPDATE local.demo.orders SET amount = amount * 2 WHERE customer = 'alice';
DELETE FROM local.demo.orders WHERE status = 'new' AND amount > 40;

SELECT * FROM local.demo.orders ORDER BY order_id;
SELECT snapshot_id, operation, summary['added-records'] AS added, summary['total-records'] AS total
FROM local.demo.orders.snapshots;
