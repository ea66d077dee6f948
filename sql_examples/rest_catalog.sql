-- The same SQL on an Iceberg REST catalog (Polaris, Lakekeeper, Nessie, Unity Catalog, Gravitino, ...):
-- the server records the tables and writes their metadata; pyice_sql writes the data files.
-- Run: pyice-sql run sql_examples/rest_catalog.sql --catalog-type rest --uri http://localhost:8181
--        [--credential client_id:secret | --token TOKEN]
-- (or spark.pyice.catalog.local.type=rest, .uri, .credential in Spark conf). Without them it runs on ./warehouse.
CREATE NAMESPACE IF NOT EXISTS local.rest_demo;
DROP TABLE IF EXISTS local.rest_demo.accounts;
CREATE TABLE local.rest_demo.accounts (id bigint, owner string, balance decimal(10, 2)) USING iceberg
PARTITIONED BY (bucket(2, id))
TBLPROPERTIES ('write.merge.mode' = 'merge-on-read', 'write.delete.mode' = 'merge-on-read');

INSERT INTO local.rest_demo.accounts VALUES (1, 'ann', 100.00), (2, 'bo', 50.00), (3, 'cy', 0.00);

MERGE INTO local.rest_demo.accounts a
USING (SELECT * FROM VALUES (2, 25.00), (4, 10.00) AS t(id, amount)) t
ON a.id = t.id
WHEN MATCHED THEN UPDATE SET balance = a.balance + t.amount
WHEN NOT MATCHED THEN INSERT (id, owner, balance) VALUES (t.id, 'dee', t.amount);

DELETE FROM local.rest_demo.accounts WHERE balance = 0;
ALTER TABLE local.rest_demo.accounts ADD COLUMN tier string;
UPDATE local.rest_demo.accounts SET tier = 'gold' WHERE balance >= 75;
ALTER TABLE local.rest_demo.accounts CREATE TAG audited;

SELECT * FROM local.rest_demo.accounts ORDER BY id;
SELECT name, type FROM local.rest_demo.accounts.refs ORDER BY name;
SHOW TABLES IN local.rest_demo;
