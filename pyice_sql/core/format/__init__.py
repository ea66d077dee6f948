"""Iceberg file formats implemented in pure Python (Puffin, deletion vectors)."""
