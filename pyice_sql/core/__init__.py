"""Engine-independent core of pyice_sql: Iceberg model, metadata and file formats (no Spark imports)."""
