-- MERGE with WHEN NOT MATCHED BY SOURCE: act on target rows that no source row matches, e.g.
-- to make a table mirror a full snapshot of its source.
-- Run: pyice-sql run sql_examples/not_matched_by_source.sql
CREATE DATABASE IF NOT EXISTS local.examples;
DROP TABLE IF EXISTS local.examples.inventory;
CREATE TABLE local.examples.inventory (site string, sku int, qty int, note string) USING iceberg
PARTITIONED BY (site);
INSERT INTO local.examples.inventory VALUES
  ('north', 1, 10, 'a'), ('north', 2, 20, 'b'), ('north', 3, 30, 'c'), ('north', 4, 40, 'd'),
  ('south', 1, 15, 'e');

-- today's stock count of the north site: the other site's rows must not count as missing
CREATE OR REPLACE TEMP VIEW stock_count AS
SELECT * FROM VALUES ('north', 2, 25), ('north', 5, 50) AS s(site, sku, qty);

MERGE INTO local.examples.inventory t
USING stock_count s
ON t.site = s.site AND t.sku = s.sku
WHEN MATCHED THEN UPDATE SET qty = s.qty
WHEN NOT MATCHED THEN INSERT (site, sku, qty, note) VALUES (s.site, s.sku, s.qty, 'new')
WHEN NOT MATCHED BY SOURCE AND t.site = 'north' AND t.qty >= 40 THEN DELETE
WHEN NOT MATCHED BY SOURCE AND t.site = 'north' THEN UPDATE SET note = concat(t.note, ' (not counted)');

SELECT * FROM local.examples.inventory ORDER BY site, sku;
