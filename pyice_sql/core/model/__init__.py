"""Iceberg's table model: the pure rules of metadata, manifests and row lineage (no Spark imports)."""
