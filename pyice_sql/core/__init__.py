"""The Iceberg core: table model, file formats, expressions, SQL front end, plans, scan planning,
commits and catalogs. Never imports pyspark or py4j (tests/unit/test_core_purity.py checks it)."""
