"""IceSession: the `session.sql()` replacement.

`ice.sql(text)` splits a script into statements, parses each with the pyice dialect and
routes it: statements on tables of a pyice catalog run here (DDL, INSERT, SELECT, MERGE,
UPDATE, DELETE, CALL, EXPLAIN); everything else goes to `spark.sql` unchanged. A SELECT that
reads pyice tables is run by Spark after each pyice table is replaced by a temp view over a
planned scan (pruned with the query's WHERE on that table), so every Spark SQL feature works
on top of Iceberg reads.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import itertools
import os
import re
from typing import Any, Iterator, Mapping

from pyspark.sql import DataFrame, SparkSession, functions as F

from pyice_sql.spark import config

from pyice_sql.spark import insert_forms, procedures
from pyice_sql.spark.ddl_statements import DdlStatements
from pyice_sql.spark.rowlevel.live_relations import LiveRelations
from pyice_sql.core.catalog.base import Catalog, Table, TableIdentifier
from pyice_sql.core.catalog.hadoop import HadoopCatalog
from pyice_sql.core.catalog.rest import RestCatalog
from pyice_sql.core.catalog.sql import SqlCatalog
from pyice_sql.spark.rowlevel.dml import RowLevelExecutor, result_frame
from pyice_sql.core.plan.defaults import values_with_defaults, write_default
from pyice_sql.core.plan.explain import explain_text
from pyice_sql.core.sql.dialect import DIALECT
from pyice_sql.core.scan.planner import plan_files
from pyice_sql.core.errors import (
    AnalysisError, NoSuchTableError, NotNullViolationError, PyIceError, SqlPosition, UnsupportedError,
)
from pyice_sql.core.expr.from_sql import target_columns, to_predicate
from pyice_sql.core.format.fileio import is_local, local_path
from pyice_sql.core.format.manifest_cache import MANIFESTS
from pyice_sql.core.expr.predicates import AlwaysTrue, And, Expression, eq
from pyice_sql.core.model.conversions import to_internal, zoned_instant
from pyice_sql.core.model.transforms import Identity
from pyice_sql.core.model.types import type_kind
from pyice_sql.core.model.snapshots import MAIN_BRANCH
from pyice_sql.spark.progress import Progress
from pyice_sql.spark.connect_backend import drop_own_view, is_connect, plan_text
from pyice_sql.spark.runtime import Runtime, local_session, spark_session_zone
from pyice_sql.spark.read.metadata_tables import metadata_table
from pyice_sql.spark.read.table_scan import TimeTravel, branch_head, scan
from pyice_sql.spark.rowlevel.compile.store_assignment import assign_frame
from pyice_sql.spark.errors import translate as translate_spark_error
from pyice_sql.spark.schema import frame_schema, schema_to_spark
from pyice_sql.core.sql import parser, statements as st, write_order
from pyice_sql.core.sql.script import bind_parameters, split_script, substitute_variables
from pyice_sql.spark.write.data_writer import enforce_not_null
from pyice_sql.spark.operations import append, overwrite

_view_ids = itertools.count()


class IceSession(DdlStatements):
    """Runs SQL on pyice catalogs; see `connect`."""

    def __init__(self, spark: SparkSession, runtime: Runtime, catalogs: dict[str, Catalog],
                 default_catalog: str, progress: Progress | None = None) -> None:
        self.spark = spark
        self.progress = progress or Progress()
        self.runtime = runtime
        self.catalogs = catalogs
        self.current_catalog = default_catalog
        self.current_namespace: tuple[str, ...] = ()
        self.last_plan = None  # the ScanPlan of the most recent single-table read (EXPLAIN, tests)
        self.relations = LiveRelations(self)

    # --- public API -----------------------------------------------------------------------
    def sql(self, text: str, variables: Mapping[str, str] | None = None,
            args: Mapping[str, Any] | list | tuple | None = None, **sources: DataFrame) -> DataFrame:
        """Run a statement or a `;`-separated script; returns the last statement's result.

        `variables` replace `${name}` with SQL text; `args` binds `:name` markers (a dict) or `?`
        markers (a list, one statement only) as literals, as spark.sql's `args` does. Keyword
        arguments bind DataFrames as temp views by name (e.g. a MERGE source).
        """
        for name, df in sources.items():
            df.createOrReplaceTempView(name)
        statements = split_script(text)
        if isinstance(args, (list, tuple)) and len(statements) > 1:
            raise UnsupportedError("positional parameters (?) bind a single statement; use named "
                                   "parameters (:name) in a script", position=statements[1].position)
        result: DataFrame | None = None
        for stmt in statements:
            sql = substitute_variables(stmt.sql, variables or {}, stmt.position) if variables else stmt.sql
            if args:
                sql = bind_parameters(sql, args, stmt.position)
            result = self.execute(sql, stmt.position)
        if result is None:
            return self.empty_result()
        return result

    def table(self, name: str) -> DataFrame:
        """The current rows of a pyice table as a DataFrame."""
        table = self.load(*self._resolve_name(name))
        df, self.last_plan = scan(self.spark, table)
        return df

    def append(self, name: str, df: DataFrame) -> None:
        """Append a DataFrame to a pyice table, its columns matched by name: as `INSERT INTO t
        (df's columns) SELECT`, so a column it lacks gets its write-default (NULL, or v3's), values
        are stored by Spark's ANSI assignment (an int widens to bigint; a string is no bigint,
        an overflow fails) and a NULL in a NOT NULL column fails the write. (Iceberg Java's
        `writeTo(t).append()` also refuses a frame that lacks a column.)"""
        table = self.load(*self._resolve_name(name))
        from pyice_sql.core.model.format_versions import check_writable
        check_writable(table.metadata.format_version, table.full_name)
        with self._spark_errors_named(None):
            append(self.runtime, table, enforce_not_null(table, self._align(table, df, None, by_name=True,
                                                                            statement="append")))
        self.relations.refresh()

    # --- routing --------------------------------------------------------------------------
    def execute(self, sql: str, position=None) -> DataFrame:
        stmt = (write_order.parse(sql, self.catalogs.__contains__, self.current_catalog, position)
                or parser.parse_statement(sql, self.catalogs.__contains__, self.current_catalog,
                                      is_temp_view=self._is_temp_view, start=position))
        with self._spark_errors_named(sql, position):
            out = self._run(stmt)
            if not isinstance(stmt, (st.Query, st.PassThrough)):  # it may have changed tables
                self.relations.refresh()
            return out

    @contextlib.contextmanager
    def _spark_errors_named(self, sql: str | None, position=None) -> Iterator[None]:
        """A Spark failure the user caused (`errors.translate`) raised as pyice_sql's error, naming
        the statement; any other error as it is."""
        try:
            yield
        except PyIceError as e:
            if e.sql is None:
                e.sql = sql
            raise
        except Exception as e:
            named = translate_spark_error(e, sql, position)
            if named is None:
                raise
            named.sql = sql
            named.message = self.relations.user_message(named.message)
            raise named from e

    def _run(self, stmt: st.Statement) -> DataFrame:
        handler = getattr(self, "_do_" + type(stmt).__name__, None)
        if handler is None:
            raise UnsupportedError(f"{type(stmt).__name__} is not supported yet")
        self._refuse_unwritable(stmt)
        out = handler(stmt)
        return out if out is not None else self.empty_result()

    def _refuse_unwritable(self, stmt: st.Statement) -> None:
        """A statement that changes an existing table fails before it writes a file when pyice_sql
        cannot write the table's format version (v3: see core.model.format_versions)."""
        from pyice_sql.core.model.format_versions import check_writable
        target = getattr(stmt, "target", None) or getattr(stmt, "table", None)
        if target is None or isinstance(stmt, (st.Query, st.Describe, st.CreateTable, st.DropTable)):
            return
        table = self.load_ref(target)
        check_writable(table.metadata.format_version, table.full_name, target.position)

    def empty_result(self) -> DataFrame:
        """The result of a statement that returns no rows, as Spark shows it."""
        return self.spark.createDataFrame([], "result string")

    def _is_temp_view(self, name: str) -> bool:
        """One catalog lookup (listing every table is slow: it resolves each one)."""
        try:
            return bool(self.spark.catalog.getTable(name).isTemporary)
        except Exception:  # AnalysisException: no such view or table
            return False

    # --- names and loading ------------------------------------------------------------------
    def _resolve_name(self, name: str) -> tuple[str, TableIdentifier]:
        parts = name.split(".")
        if parts[0] in self.catalogs and len(parts) >= 3:
            return parts[0], TableIdentifier(tuple(parts[1:-1]), parts[-1])
        if len(parts) == 1:
            return self.current_catalog, TableIdentifier(self.current_namespace, parts[0])
        return self.current_catalog, TableIdentifier(tuple(parts[:-1]), parts[-1])

    def resolve_ref(self, ref: st.TableRef) -> tuple[str, TableIdentifier]:
        catalog = ref.catalog or self.current_catalog
        if catalog not in self.catalogs:
            raise AnalysisError(f"unknown catalog {catalog!r}", position=ref.position)
        namespace = ref.namespace or self.current_namespace
        if not namespace:
            raise AnalysisError(f"table {ref.name!r} needs a namespace (db.table)", position=ref.position)
        return catalog, TableIdentifier(namespace, ref.name)

    def load(self, catalog: str, ident: TableIdentifier) -> Table:
        return self.catalogs[catalog].load_table(ident)

    def load_ref(self, ref: st.TableRef) -> Table:
        try:
            return self.load(*self.resolve_ref(ref))
        except NoSuchTableError as e:
            e.position = e.position or ref.position
            raise

    # --- queries ------------------------------------------------------------------------------
    def _do_PassThrough(self, stmt: st.PassThrough) -> DataFrame:
        return self.spark.sql(stmt.sql)

    def query_frame(self, query: st.Query) -> DataFrame:
        """Run a query that reads pyice tables: each becomes a temp view over a pruned scan."""
        views: dict[st.TableRef, str | None] = {}
        own: list[str] = []
        counts: dict[st.TableRef, int] = {}
        for table in query.expression.find_all(st.exp.Table):
            ref = st.table_ref_of(table)
            if ref is not None:
                counts[ref] = counts.get(ref, 0) + 1
        remote = is_connect(self.spark)
        frames: dict[str, DataFrame] = {}
        try:
            for ref in query.tables:
                views[ref] = self.relations.cached_name(ref)  # a cached table is read from its cache
                if views[ref] is None:
                    views[ref] = name = f"__pyice_{next(_view_ids)}"
                    frames[name] = self.scan_ref(ref, self._pushdown(query.expression, ref)
                                                 if counts.get(ref) == 1 else None, lineage=_names_lineage(query))
                    if not remote:
                        frames[name].createOrReplaceTempView(name)
                        own.append(name)
            sql = st.replace_tables(query.expression, lambda r: views[r]).sql(dialect=DIALECT)
            if remote and frames:  # a Connect DataFrame stays an unresolved plan: bind scans as arguments, not views
                return self.spark.sql(_placeholders(sql, frames), **frames)
            return self.spark.sql(sql)
        finally:
            for name in own:
                drop_own_view(self.spark, name)

    def scan_ref(self, ref: st.TableRef, row_filter: Expression | None = None, lineage: bool = False) -> DataFrame:
        table = self.load_ref(ref)
        if ref.metadata_table:
            return metadata_table(self.spark, table, ref.metadata_table, ref.snapshot_id)
        travel = TimeTravel(ref.snapshot_id, ref.ref, ref.as_of_timestamp, ref.ref_kind)
        try:
            df, self.last_plan = scan(self.spark, table, row_filter, travel, lineage=lineage)
        except AnalysisError as e:  # no such snapshot/ref: point at the table reference
            e.position = e.position or ref.position
            raise
        return df

    def _pushdown(self, expression: st.exp.Expression, ref: st.TableRef) -> Expression | None:
        """The WHERE conjuncts on `ref` in its own SELECT, when that SELECT has no joins."""
        for table in expression.find_all(st.exp.Table):
            if st.table_ref_of(table) != ref:
                continue
            select = table.find_ancestor(st.exp.Select)
            if select is None or select.args.get("joins") or select.args.get("where") is None:
                return None
            if table.find_ancestor(st.exp.From) is None or table.find_ancestor(st.exp.From).parent is not select:
                return None
            schema = self.load_ref(ref).metadata.schema()
            full = [p.lower() for p in (ref.catalog, *ref.namespace, ref.name) if p]
            qualifiers = [(ref.alias.lower(),)] if ref.alias else [tuple(full[i:]) for i in range(len(full))]
            return to_predicate(select.args["where"].this, target_columns(schema, qualifiers), schema, "inclusive",
                                zone=spark_session_zone(self.spark))
        return None

    def _do_Query(self, stmt: st.Query) -> DataFrame:
        if self.relations.handles(stmt):  # temp views and caches live on after the statement
            return self.relations.run(stmt)
        return self.query_frame(stmt)

    # --- row-level DML ------------------------------------------------------------------------
    def _row_level(self, stmt) -> DataFrame:
        return result_frame(self.spark, RowLevelExecutor(self).run(stmt))

    _do_Merge = _do_Update = _do_Delete = _row_level

    def _do_Call(self, stmt: st.Call) -> DataFrame:
        proc = procedures.lookup(stmt.namespace, stmt.procedure, stmt.position)
        args = proc.bind(stmt.args, stmt.named, stmt.position)
        task = self.progress.task(f"CALL {stmt.catalog}.system.{proc.name}")
        task.phase("started")
        try:
            rows = list(proc.run(procedures.ProcedureContext(self, stmt.catalog, stmt.position), args))
        except PyIceError as e:
            e.position = e.position or stmt.position  # a procedure's error points at its CALL
            raise
        task.phase("done", f"{len(rows)} result row{'s' if len(rows) != 1 else ''}")
        return self.spark.createDataFrame(list(rows), proc.output)

    def _do_Explain(self, stmt: st.Explain) -> DataFrame:
        inner = stmt.statement
        if isinstance(inner, (st.Merge, st.Update, st.Delete)):
            executor = RowLevelExecutor(self)
            try:
                table, plan, _ = executor.plan(inner)
            finally:
                executor.close()
            md = table.metadata
            metrics = plan_files(md, table.io, branch_head(table, plan.target.branch), plan.scan_filter).metrics
            text = explain_text(plan, table.full_name, metrics)
        elif isinstance(inner, st.Query):
            df = self.query_frame(inner)
            text = plan_text(df) + (f"\n== pyice scan ==\n{self.last_plan.metrics}"
                                                          if self.last_plan is not None else "")
        else:
            raise UnsupportedError(f"EXPLAIN of {type(inner).__name__} is not supported")
        return self.spark.createDataFrame([(text,)], "plan string")

    # --- writes -------------------------------------------------------------------------------
    def _align(self, table: Table, df: DataFrame, columns: tuple[str, ...] | None,
               static: Mapping[str, Any] | None = None, position: SqlPosition | None = None,
               statement: str = "INSERT", by_name: bool = False) -> DataFrame:
        """Map query output to table columns by position (Spark's INSERT rule), by the given list,
        or by the frame's own column names (`by_name`: `append`)."""
        schema = table.metadata.schema()
        static = {k.lower(): v for k, v in (static or {}).items()}
        frame = frame_schema(df)
        names = frame.names
        targets = (list(names) if by_name else list(columns) if columns
                   else [f.name for f in schema.fields if f.name.lower() not in static])
        width = len(names)
        if width != len(targets):
            raise AnalysisError(f"cannot write to {table.full_name}: the query has {width} columns, "
                                f"the table expects {len(targets)} ({', '.join(targets)})", position=position)
        written: set[str] = set()
        for name in targets:
            if schema.find_field(name) is None:
                raise AnalysisError(f"column {name!r} is not in table {table.full_name}", position=position)
            if name.lower() in written:  # else the last of them would win, silently
                raise AnalysisError(f"column {name!r} of {table.full_name} is written twice", position=position)
            written.add(name.lower())
        target, what = schema_to_spark(schema, with_ids=False), f"{statement} into {table.full_name}"
        if not static and targets == names == target.names:  # the table's columns already, in order
            return assign_frame(df, target, what, position, frame)
        positions = [f"_col{i}" for i in range(width)]
        df = df.toDF(*positions)  # by position: names may repeat
        given = {t.lower(): F.col(c) for t, c in zip(targets, positions)}
        cols, missing = [], []
        for f in schema.fields:
            if f.name.lower() in given:
                cols.append(given[f.name.lower()].alias(f.name))
            elif f.name.lower() in static:
                value = static[f.name.lower()]
                if isinstance(value, dt.datetime):  # pyspark would read a naive one in the Python process's zone
                    value = zoned_instant(value, spark_session_zone(self.spark))
                cols.append(F.lit(value).alias(f.name))
            elif (default := write_default(f)) is not None:  # NULL, or the column's v3 write-default
                cols.append(F.expr(default.sql(dialect=DIALECT)).alias(f.name))
            else:
                missing.append(f.name)
                cols.append(F.lit(None).alias(f.name))
        out = assign_frame(df.select(*cols), target, what, position)
        self._check_required(table, out, missing, position)
        return out

    @staticmethod
    def _check_required(table: Table, df: DataFrame, missing: list[str], position: SqlPosition | None = None) -> None:
        for f in table.metadata.schema().fields:
            if f.required and f.name in missing:
                raise NotNullViolationError(f"column {f.name!r} of {table.full_name} is NOT NULL and has no value",
                                            position=position)

    def _do_Insert(self, stmt: st.Insert) -> None:
        table = self.load_ref(stmt.table)
        _check_partition_clause(table, stmt)
        query = stmt.query
        replaced = (insert_forms.replace_where_filter(table, stmt.table, stmt.replace_where,
                                                      spark_session_zone(self.spark))
                    if stmt.replace_where is not None else None)
        if isinstance(query.expression, st.exp.Values) and not stmt.by_name:
            schema = table.metadata.schema()
            static = {k.lower() for k in stmt.static_partition}
            names = stmt.columns or [f.name for f in schema.fields if f.name.lower() not in static]
            query = dataclasses.replace(query, expression=values_with_defaults(
                query.expression, [schema.find_field(n) for n in names], stmt.table.position))
        rows = self.query_frame(query)
        columns = insert_forms.by_name_columns(table, rows, stmt.table.position) if stmt.by_name else stmt.columns
        df = self._align(table, rows, columns, stmt.static_partition, stmt.table.position)
        df = enforce_not_null(table, df)
        branch = stmt.table.branch or MAIN_BRANCH
        if replaced is not None:  # INSERT INTO ... REPLACE WHERE
            try:
                overwrite(self.runtime, table, df, dynamic=False, static_filter=replaced, branch=branch,
                          statement="INSERT INTO ... REPLACE WHERE")
            except AnalysisError as e:  # a data file split by the condition: point at the statement
                e.position = e.position or stmt.table.position
                raise
            return
        if not stmt.overwrite:
            append(self.runtime, table, df, branch)
            return
        mode = self.spark.conf.get("spark.sql.sources.partitionOverwriteMode", "static").lower()
        schema = table.metadata.schema()
        # dynamic mode replaces only the partitions written, whatever the PARTITION clause fixes (as
        # Spark 3.5+: a clause fixing every partition column over no rows replaces nothing)
        if mode != "dynamic":
            flt: Expression = AlwaysTrue()
            zone = spark_session_zone(self.spark)
            for k, v in stmt.static_partition.items():
                field = schema.find_field(k)  # an identity partition column: _check_partition_clause
                if type_kind(field.type) == "timestamptz" and isinstance(v, (str, dt.date)):
                    v = zoned_instant(v, zone)  # Spark reads a timestamp without an offset in the session's zone
                flt = And(flt, eq(field.name, to_internal(field.type, v)))
            overwrite(self.runtime, table, df, dynamic=False, static_filter=flt, branch=branch)
        else:
            overwrite(self.runtime, table, df, dynamic=True, branch=branch)


def _check_partition_clause(table: Table, stmt: st.Insert) -> None:
    """A PARTITION clause names columns the table's spec partitions by identity, as Spark requires
    (a transform's source column, `ts` of days(ts), cannot be given a partition value)."""
    schema = table.metadata.schema()
    identity = {field.name.lower() for f in table.metadata.spec().fields
                if isinstance(f.transform, Identity) and (field := schema.find_field(f.source_id)) is not None}
    for name in [*stmt.static_partition, *stmt.dynamic_partition]:
        if name.lower() not in identity:
            raise AnalysisError(f"[NON_PARTITION_COLUMN] PARTITION clause cannot contain the non-partition column: "
                                f"`{name}` ({table.full_name})", position=stmt.table.position)


def _names_lineage(query: st.Query) -> bool:
    """Whether a query names a row-lineage metadata column (`_row_id`, ...): only then are they read."""
    from pyice_sql.core.model.row_lineage import is_lineage_column
    return any(is_lineage_column(c.name) for c in query.expression.find_all(st.exp.Column))


def make_catalog(c: config.CatalogConfig, runtime_io) -> Catalog:
    kind = c.type.lower()
    if kind == "hadoop":
        return HadoopCatalog(c.name, c.warehouse, runtime_io)
    if kind in ("sql", "sqlite", "jdbc"):
        return SqlCatalog(c.name, c.uri or os.path.join(c.warehouse, "catalog.db"), c.warehouse, runtime_io)
    if kind == "rest":
        if not c.uri:
            raise AnalysisError(f"REST catalog {c.name!r} needs a uri (spark.pyice.catalog.{c.name}.uri, "
                                "connect(uri=...) or --uri)")
        return RestCatalog(c.name, c.uri, runtime_io, warehouse=c.warehouse, properties=dict(c.properties))
    raise AnalysisError(f"unknown catalog type {c.type!r} for catalog {c.name!r}: use 'hadoop', 'sql' or 'rest'")


def connect(spark: SparkSession | None = None, warehouse: str | None = None, catalog: str | None = None,
            catalog_type: str | None = None, uri: str | None = None, quiet: bool | None = None,
            credential: str | None = None, token: str | None = None) -> IceSession:
    """Open a pyice_sql session; creates a local SparkSession when none is given.

    `catalog_type` 'hadoop' is a filesystem warehouse (Iceberg's Hadoop layout); 'sql' keeps the
    catalog in a SQLite file (`uri`, default `<warehouse>/catalog.db`) compatible with PyIceberg;
    'rest' is an Iceberg REST catalog server at `uri`, authenticated by an OAuth2 `credential`
    ('client_id:secret') or a bearer `token`.
    What is not given comes from Spark conf (`spark.pyice.*`, see pyice_sql.spark.config, which may
    declare more catalogs), else catalog `local`, type `hadoop`, warehouse `./warehouse`.
    `quiet` silences progress lines (and Spark's progress bar in a session created here).
    """
    spark = spark or local_session(quiet=bool(quiet))
    cfg = config.from_conf(config.spark_conf(spark), catalog=catalog, catalog_type=catalog_type,
                           warehouse=warehouse, uri=uri, quiet=quiet,
                           properties={"credential": credential, "token": token})
    runtime = Runtime.attach(spark)
    if cfg.manifest_cache_bytes is not None:
        MANIFESTS.resize(cfg.manifest_cache_bytes)
    catalogs = {}
    for c in cfg.catalogs:
        if c.type.lower() != "rest" and is_local(c.warehouse):
            os.makedirs(local_path(c.warehouse), exist_ok=True)
        catalogs[c.name] = make_catalog(c, runtime.io_for)
    return IceSession(spark, runtime, catalogs, cfg.default_catalog, Progress(cfg.quiet))


def _placeholders(sql: str, frames: dict[str, DataFrame]) -> str:
    """`sql` as a `spark.sql(text, **frames)` template: braces escaped, each frame's name a `{name}`."""
    text = sql.replace("{", "{{").replace("}", "}}")
    return re.sub(r"\b(" + "|".join(map(re.escape, frames)) + r")\b", r"{\1}", text)
