"""The DDL statements of a session: namespaces, CREATE / REPLACE / DROP / DESCRIBE TABLE, ALTER TABLE.

A mixin of `IceSession`, which routes each statement to its `_do_<Statement>` method; these
handlers only turn a statement into catalog calls or a metadata change (built in `ddl`), and
commit every metadata-only change through `update_metadata`, which retries a lost race.
"""
from __future__ import annotations

import dataclasses
import fnmatch
from typing import Callable

from pyspark.sql import DataFrame, SparkSession

from pyice_sql.core.catalog.base import Catalog, Table
from pyice_sql.core.commit import refs as refs_ddl
from pyice_sql.core.commit.producer import update_metadata
from pyice_sql.core.errors import (
    AnalysisError, NamespaceAlreadyExistsError, NoSuchNamespaceError, NoSuchTableError, TableAlreadyExistsError,
    UnsupportedError,
)
from pyice_sql.core.model.metadata import TableMetadata
from pyice_sql.core.sql import statements as st, write_order
from pyice_sql.spark import ddl
from pyice_sql.spark.operations import append, replace_table
from pyice_sql.spark.runtime import Runtime, spark_session_zone
from pyice_sql.spark.schema import to_spark_type


class DdlStatements:
    """DDL handlers; the session provides `load_ref`, `resolve_ref`, `query_frame` and `_align`."""

    spark: SparkSession
    runtime: Runtime
    catalogs: dict[str, Catalog]
    current_catalog: str
    current_namespace: tuple[str, ...]

    # --- namespaces ---------------------------------------------------------------------------
    def _do_CreateNamespace(self, stmt: st.CreateNamespace) -> None:
        try:
            self.catalogs[stmt.catalog].create_namespace(stmt.namespace)
        except NamespaceAlreadyExistsError:
            if not stmt.if_not_exists:
                raise

    def _do_DropNamespace(self, stmt: st.DropNamespace) -> None:
        catalog = self.catalogs[stmt.catalog]
        try:
            if stmt.cascade:
                for ident in catalog.list_tables(stmt.namespace):
                    catalog.drop_table(ident, purge=True)
            catalog.drop_namespace(stmt.namespace)
        except NoSuchNamespaceError:
            if not stmt.if_exists:
                raise

    def _do_ShowNamespaces(self, stmt: st.ShowNamespaces) -> DataFrame:
        rows = [(".".join(ns),) for ns in self.catalogs[stmt.catalog].list_namespaces()
                if not stmt.pattern or _like(".".join(ns), stmt.pattern)]
        return self.spark.createDataFrame(rows, "namespace string")

    def _do_ShowTables(self, stmt: st.ShowTables) -> DataFrame:
        namespace = stmt.namespace or self.current_namespace
        rows = [(".".join(i.namespace), i.name, False) for i in self.catalogs[stmt.catalog].list_tables(namespace)
                if not stmt.pattern or _like(i.name, stmt.pattern)]
        return self.spark.createDataFrame(rows, "namespace string, tableName string, isTemporary boolean")

    def _do_UseNamespace(self, stmt: st.UseNamespace) -> None:
        if stmt.catalog is not None:
            self.current_catalog = stmt.catalog
        self.current_namespace = stmt.namespace

    def _do_Describe(self, stmt: st.Describe) -> DataFrame:
        table = self.load_ref(stmt.table)
        md = table.metadata
        rows = [(f.name, to_spark_type(f.type, with_ids=False).simpleString(), f.doc) for f in md.schema().fields]
        if md.spec().fields:
            rows += [("", "", ""), ("# Partitioning", "", "")]
            rows += [(f"Part {i}", f"{f.transform}({md.schema().find_field(f.source_id).name})"
                      if md.schema().find_field(f.source_id) else str(f.transform), "")
                     for i, f in enumerate(md.spec().fields)]
        if stmt.extended:
            snap = md.current_snapshot()
            rows += [("", "", ""), ("# Metadata", "", ""), ("Name", table.full_name, ""),
                     ("Location", md.location, ""), ("Format", f"iceberg/parquet (v{md.format_version})", ""),
                     ("Current snapshot", str(snap.snapshot_id) if snap else "", ""),
                     ("Identifier fields", "[" + ", ".join(".".join(md.schema().field_path(i) or (str(i),))
                                                           for i in md.schema().identifier_field_ids) + "]", ""),
                     ("Properties", ", ".join(f"{k}={v}" for k, v in sorted(md.properties.items())), "")]
        return self.spark.createDataFrame(rows, "col_name string, data_type string, comment string")

    def _do_CreateTable(self, stmt: st.CreateTable) -> DataFrame | None:
        catalog_name, ident = self.resolve_ref(stmt.table)
        catalog = self.catalogs[catalog_name]
        if catalog.table_exists(ident):
            if stmt.if_not_exists:
                return None
            if not stmt.replace:
                raise TableAlreadyExistsError(f"table {catalog_name}.{ident} already exists",
                                              position=stmt.table.position)
            return self._replace_table(catalog.load_table(ident), stmt)
        source = self.query_frame(stmt.as_select) if stmt.as_select is not None else None
        struct = self._new_table_struct(stmt, source)
        location = stmt.location or catalog.default_location(ident)
        md = ddl.create_metadata(struct, stmt.partitioning, location, stmt.properties)
        table = catalog.create_table(ident, md)
        if source is not None:
            append(self.runtime, table, self._align(table, source, None))
        return None

    @staticmethod
    def _new_table_struct(stmt: st.CreateTable, source: DataFrame | None):
        if stmt.columns:
            return ddl.columns_to_struct(stmt.columns)
        if source is not None:
            return source.schema
        raise AnalysisError("CREATE TABLE needs columns or AS SELECT", position=stmt.table.position)

    def _replace_table(self, table: Table, stmt: st.CreateTable) -> None:
        """CREATE OR REPLACE TABLE: new schema, spec and rows in one commit; history is kept."""
        if stmt.location and stmt.location.rstrip("/") != table.metadata.location:
            raise UnsupportedError(f"CREATE OR REPLACE TABLE cannot move {table.full_name} to another location",
                                   position=stmt.table.position)
        source = self.query_frame(stmt.as_select) if stmt.as_select is not None else None
        struct = self._new_table_struct(stmt, source)

        def change(metadata):
            return ddl.replace_metadata(metadata, struct, stmt.partitioning, stmt.properties)

        rows = None
        if source is not None:
            rows = self._align(dataclasses.replace(table, metadata=change(table.metadata)), source, None)
        replace_table(self.runtime, table, change, rows)

    def _do_DropTable(self, stmt: st.DropTable) -> None:
        catalog_name, ident = self.resolve_ref(stmt.table)
        try:
            self.catalogs[catalog_name].drop_table(ident, purge=stmt.purge)
        except NoSuchTableError:
            if not stmt.if_exists:
                raise

    def _alter(self, ref: st.TableRef, change: Callable[[TableMetadata], TableMetadata]) -> None:
        """Commit a metadata-only change the one way refs and procedures do: re-applied to the latest
        metadata when another writer won the race, within `commit.retry.*`."""
        update_metadata(self.load_ref(ref), change)

    def _do_AlterTableAddColumns(self, stmt: st.AlterTableAddColumns) -> None:
        name = stmt.table.qualified_name
        zone = spark_session_zone(self.spark)
        self._alter(stmt.table, lambda md: ddl.add_columns(md, stmt.columns, name, zone))

    def _do_AlterTableDropColumns(self, stmt: st.AlterTableDropColumns) -> None:
        self._alter(stmt.table, lambda md: ddl.drop_columns(md, stmt.columns, stmt.if_exists))

    def _do_AlterTableRenameColumn(self, stmt: st.AlterTableRenameColumn) -> None:
        self._alter(stmt.table, lambda md: ddl.rename_column(md, stmt.column, stmt.new_name))

    def _do_AlterTableAlterColumn(self, stmt: st.AlterTableAlterColumn) -> None:
        zone = spark_session_zone(self.spark)
        self._alter(stmt.table, lambda md: ddl.alter_column(md, stmt.column, stmt.new_type, stmt.comment,
                                                            stmt.not_null, stmt.default, stmt.drop_default,
                                                            stmt.table.qualified_name, zone))

    def _do_AlterTableSetProperties(self, stmt: st.AlterTableSetProperties) -> None:
        name = self.load_ref(stmt.table).full_name
        self._alter(stmt.table, lambda md: ddl.set_properties(md, stmt.properties, name))

    def _do_SetWriteOrder(self, stmt: write_order.SetWriteOrder) -> None:
        self._alter(stmt.table, lambda md: ddl.set_write_order(md, stmt.order, stmt.distribution_mode))

    def _do_AlterTableUnsetProperties(self, stmt: st.AlterTableUnsetProperties) -> None:
        def change(md):
            missing = [k for k in stmt.keys if k not in md.properties]
            if missing and not stmt.if_exists:
                raise AnalysisError(f"table properties {missing} are not set", position=stmt.table.position)
            return md.remove_properties(stmt.keys)
        self._alter(stmt.table, change)

    def _do_AlterTableAddPartitionField(self, stmt: st.AlterTableAddPartitionField) -> None:
        self._alter(stmt.table, lambda md: ddl.add_partition_field(md, stmt.field, stmt.name))

    def _do_AlterTableDropPartitionField(self, stmt: st.AlterTableDropPartitionField) -> None:
        self._alter(stmt.table, lambda md: ddl.drop_partition_field(md, stmt.field))

    def _do_AlterTableReplacePartitionField(self, stmt: st.AlterTableReplacePartitionField) -> None:
        self._alter(stmt.table, lambda md: ddl.replace_partition_field(md, stmt.old, stmt.new, stmt.name))

    def _do_AlterTableCreateOrReplaceRef(self, stmt: st.AlterTableCreateOrReplaceRef) -> None:
        refs_ddl.create_or_replace_ref(self.load_ref(stmt.table), stmt)

    def _do_AlterTableIdentifierFields(self, stmt: st.AlterTableIdentifierFields) -> None:
        self._alter(stmt.table, lambda md: ddl.set_identifier_fields(md, stmt.fields, stmt.drop))

    def _do_AlterTableDropRef(self, stmt: st.AlterTableDropRef) -> None:
        refs_ddl.drop_ref(self.load_ref(stmt.table), stmt)


def _like(value: str, pattern: str) -> bool:
    """SHOW ... LIKE: Spark's patterns use * and | ; SQL's % and _ are accepted too."""
    return any(fnmatch.fnmatch(value.lower(), p.strip().lower().replace("%", "*").replace("_", "?"))
               for p in pattern.split("|"))
