"""A table's `write.parquet.*` layout properties shape the data files pyice writes, as they shape
Iceberg Java's: row group size and dictionary size, read back from the files' footers."""
from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from pyice_sql.core.errors import ValidationError

pytestmark = pytest.mark.spark

ROWS = "SELECT id, concat('value-', id % 1000, '-', sha1(cast(id AS string))) AS s FROM range(0, 100000, 1, 1)"


def _footers(ice, table: str) -> list:
    paths = [r.file_path for r in ice.sql(f"SELECT file_path FROM {table}.files").collect()]
    return [pq.ParquetFile(p.removeprefix("file:")).metadata for p in paths]


def _table(ice, name: str, properties: str = "") -> str:
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    extra = f"TBLPROPERTIES ({properties})" if properties else ""
    ice.sql(f"CREATE TABLE local.db.{name} (id bigint, s string) USING iceberg {extra}")
    ice.sql(f"INSERT INTO local.db.{name} {ROWS}")
    return f"local.db.{name}"


def test_row_group_size_is_honoured_by_inserts_and_rewrites(ice):
    plain = _table(ice, "plain")
    small = _table(ice, "small", "'write.parquet.row-group-size-bytes'='262144'")
    assert [m.num_row_groups for m in _footers(ice, plain)] == [1]
    (written,) = _footers(ice, small)
    # ~5.5 MB of column data before compression: 262,144-byte row groups make a score of them
    assert written.num_row_groups >= 10
    assert sum(written.row_group(i).num_rows for i in range(written.num_row_groups)) == 100000
    ice.sql(f"UPDATE {small} SET s = 'x' WHERE id = 5")  # copy-on-write: the file is rewritten
    (rewritten,) = _footers(ice, small)
    assert rewritten.num_row_groups >= 10
    assert ice.sql(f"SELECT count(*), count_if(s = 'x') FROM {small}").collect()[0] == (100000, 1)


def test_dictionary_size_decides_the_fallback_to_plain(ice):
    # the 1,000 distinct prefixes of `s` are unique per row with the hash: a column of 100,000
    # distinct strings overflows any dictionary, so test `id % 1000` as a string instead
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    for name, props in (("d_default", ""), ("d_small", "TBLPROPERTIES ('write.parquet.dict-size-bytes'='1024')")):
        ice.sql(f"CREATE TABLE local.db.{name} (id bigint, s string) USING iceberg {props}")
        ice.sql(f"INSERT INTO local.db.{name} SELECT id, concat('category-', id % 1000) FROM range(0, 100000, 1, 1)")
    encodings = {name: set(_footers(ice, f"local.db.{name}")[0].row_group(0).column(1).encodings)
                 for name in ("d_default", "d_small")}
    # ~16 KB of dictionary: kept under parquet-mr's 1 MB default, given up past 1 KB
    assert "PLAIN" not in encodings["d_default"]
    assert "PLAIN" in encodings["d_small"]


@pytest.mark.parametrize("value", ["abc", "0", "-5", "1.5", "\u00b2"])
def test_a_bad_layout_property_is_named(ice, value):
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE local.db.bad (id bigint) USING iceberg "
            f"TBLPROPERTIES ('write.parquet.row-group-size-bytes'='{value}')")
    with pytest.raises(ValidationError, match=r"write\.parquet\.row-group-size-bytes = '.*' of the table at .*bad"):
        ice.sql("INSERT INTO local.db.bad VALUES (1)")
    assert ice.sql("SELECT count(*) FROM local.db.bad").collect()[0][0] == 0
