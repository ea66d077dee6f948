-- Time travel: read a table as it was at a tag, a snapshot or a time. Every commit is a
-- snapshot; tags name the ones to come back to (snapshot ids differ on every run).
-- Run: pyice-sql run sql_examples/time_travel.sql
CREATE DATABASE IF NOT EXISTS local.examples;
DROP TABLE IF EXISTS local.examples.prices;
CREATE TABLE local.examples.prices (item string, price decimal(6, 2)) USING iceberg;

INSERT INTO local.examples.prices VALUES ('apple', 1.00), ('pear', 2.00);
ALTER TABLE local.examples.prices CREATE TAG v1;
UPDATE local.examples.prices SET price = price * 1.10;
ALTER TABLE local.examples.prices CREATE TAG v2;
DELETE FROM local.examples.prices WHERE item = 'pear';

SELECT * FROM local.examples.prices ORDER BY item;
SELECT * FROM local.examples.prices VERSION AS OF 'v1' ORDER BY item;
SELECT * FROM local.examples.prices VERSION AS OF 'v2' ORDER BY item;
-- Iceberg's other spelling of a tag: <table>.tag_<name>
SELECT * FROM local.examples.prices.tag_v1 ORDER BY item;

-- what the UPDATE changed: rows of v2 that are not in v1
SELECT * FROM local.examples.prices VERSION AS OF 'v2'
EXCEPT
SELECT * FROM local.examples.prices VERSION AS OF 'v1';

SELECT name, type FROM local.examples.prices.refs ORDER BY name;
SELECT operation, summary['total-records'] AS total_records FROM local.examples.prices.snapshots ORDER BY committed_at;

-- as of a time after the last commit: the current table
SELECT count(*) AS items FROM local.examples.prices TIMESTAMP AS OF '2100-01-01 00:00:00';
