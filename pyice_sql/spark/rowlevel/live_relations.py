"""Pyice tables that Spark objects outlive a statement: temp views and cached tables over them.

A query on a pyice table runs on a temp view over a scan planned for that query, dropped when
it ends. A temporary view (`CREATE TEMP VIEW v AS SELECT * FROM local.db.t`), `CACHE TABLE
local.db.t` or `CACHE TABLE c AS SELECT ...` keeps referring to the table afterwards: Spark
stores a temp view's SQL text and analyses it again at each use, so the text must name a
relation that lives as long as the session and always shows the table's current state.

Each such table gets one stable temp view (its *live relation*, `__pyice_table_<n>`) over a
scan of its current snapshot. View text names that relation. After every statement that may
change tables, a live relation whose table has new metadata is replaced by a scan of the new
state, as Iceberg's DML refreshes cached relations: cached entries that read it (the relation
itself, user views over it, directly or through other views) are uncached and cached again
(lazily, with their storage level), so they show the new rows. A dropped table's relation is
dropped; views over it then fail as they do over a dropped Iceberg table.
"""
from __future__ import annotations

import dataclasses
import itertools
import re
from typing import Protocol

from pyspark import StorageLevel
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp

from pyice_sql.core.catalog.base import Table, TableIdentifier
from pyice_sql.core.errors import NoSuchTableError
from pyice_sql.core.sql import statements as st
from pyice_sql.core.sql.dialect import DIALECT, quote_identifier as _quote
from pyice_sql.spark.connect_backend import analyzed_text, temp_views

_names = itertools.count()
PREFIX = "__pyice_table_"


class SessionTables(Protocol):
    """What live relations use of the session that owns them (IceSession provides it)."""

    spark: SparkSession

    def resolve_ref(self, ref: st.TableRef) -> tuple[str, TableIdentifier]: ...

    def load_ref(self, ref: st.TableRef) -> Table: ...

    def scan_ref(self, ref: st.TableRef) -> DataFrame: ...

    def empty_result(self) -> DataFrame: ...


@dataclasses.dataclass
class _Live:
    name: str
    metadata_location: str | None


class LiveRelations:
    """The live relations of one IceSession (temp views belong to its SparkSession)."""

    def __init__(self, session: SessionTables) -> None:
        self.session = session
        self.spark = session.spark
        self._live: dict[st.TableRef, _Live] = {}
        self._tables: dict[str, str] = {}  # every live relation name made, to the table it stood for

    # --- statements -------------------------------------------------------------------------
    @staticmethod
    def handles(query: st.Query) -> bool:
        """Statements whose result outlives them: temp view definitions, CACHE and UNCACHE."""
        tree = query.expression
        if isinstance(tree, (exp.Cache, exp.Uncache)):
            return True
        return isinstance(tree, exp.Create) and (tree.args.get("kind") or "").upper() == "VIEW"

    def run(self, query: st.Query) -> DataFrame:
        tree = query.expression
        if isinstance(tree, exp.Uncache):
            live = self._live.get(self._key(query.tables[0]))
            if live is not None:  # never cached when never made live: nothing to do
                self.spark.catalog.uncacheTable(_quote(live.name))
            return self.session.empty_result()
        names = {self._key(ref): self.name_for(ref) for ref in query.tables}
        if isinstance(tree, exp.Cache) and tree.args.get("expression") is None:
            # CACHE TABLE <pyice table>: cache its live relation
            tree = tree.copy()
            tree.set("this", exp.Table(this=exp.to_identifier(names[self._key(query.tables[0])], quoted=True)))
        else:
            tree = st.replace_tables(tree, lambda ref: names[self._key(ref)])
        return self.spark.sql(tree.sql(dialect=DIALECT))

    def cached_name(self, ref: st.TableRef) -> str | None:
        """The live relation of `ref` when it is cached (a query must read it to use the cache)."""
        live = self._live.get(self._key(ref))
        if live is not None and self.spark.catalog.isCached(_quote(live.name)):
            return live.name
        return None

    def name_for(self, ref: st.TableRef) -> str:
        """The live relation of `ref`, made on first use."""
        key = self._key(ref)
        if key not in self._live:
            live = _Live(f"{PREFIX}{next(_names)}", None)
            self._tables[live.name] = key.qualified_name
            live.metadata_location = self._publish(key, live.name)
            self._live[key] = live
        return self._live[key].name

    # --- refresh ----------------------------------------------------------------------------
    def refresh(self) -> None:
        """Bring every live relation whose table changed to the table's current state."""
        for key, live in list(self._live.items()):
            try:
                location = self.session.load_ref(key).metadata_location
            except NoSuchTableError:
                location = None
            if location == live.metadata_location:
                continue
            dependents = self._cached_readers(live.name)
            for name, _ in dependents:
                self.spark.catalog.uncacheTable(_quote(name))
            if location is None:
                self.spark.catalog.dropTempView(live.name)
                del self._live[key]
                continue
            live.metadata_location = self._publish(key, live.name)
            for name, level in dependents:  # the relation first: views over it then cache on top of it
                self.spark.catalog.cacheTable(_quote(name), level)

    def user_message(self, message: str) -> str:
        """`message` with live relation names replaced by the tables they stand for."""
        return re.sub(rf"{PREFIX}\d+", lambda m: self._tables.get(m.group(0), m.group(0)), message)

    # --- helpers ----------------------------------------------------------------------------
    def _key(self, ref: st.TableRef) -> st.TableRef:
        """The table (and version, metadata table) a reference reads, whatever its alias or spelling."""
        catalog, ident = self.session.resolve_ref(ref)
        return dataclasses.replace(ref, catalog=catalog, namespace=ident.namespace, alias=None, position=None)

    def _publish(self, key: st.TableRef, name: str) -> str:
        self.session.scan_ref(key).createOrReplaceTempView(name)
        return self.session.load_ref(key).metadata_location

    def _cached_readers(self, name: str) -> list[tuple[str, StorageLevel]]:
        """Cached temp views that read relation `name` (itself first), with their storage levels."""
        out = []
        for view in temp_views(self.spark):
            try:
                if view != name and not self.spark.catalog.isCached(_quote(view)):
                    continue
                plan = self.spark.table(_quote(view))
            except AnalysisException:  # a view over something dropped: cached it is not
                continue
            if view != name and f"View (`{name}`" not in analyzed_text(plan):
                continue
            level = _storage_level(plan)
            if level is not None:
                out.append((view, level))
        return sorted(out, key=lambda item: item[0] != name)


def _storage_level(df: DataFrame) -> StorageLevel | None:
    """The storage level `df` is cached at (Spark's cache lookup by plan), None if it is not cached."""
    level = df.storageLevel
    return level if level.useDisk or level.useMemory or level.useOffHeap else None
