"""Positional `?` parameters (spark.sql's `args=[...]`), bound as literals in order."""
from __future__ import annotations

import pytest

from pyice_sql.core.errors import ParseError, SqlPosition
from pyice_sql.core.sql.script import bind_parameters


def test_markers_take_the_values_in_order_outside_strings_and_comments():
    sql = "SELECT '?', `?` FROM t -- ?\nWHERE a = ? AND b IN (?, ?)"
    assert bind_parameters(sql, [1, "it's", None]) == \
        "SELECT '?', `?` FROM t -- ?\nWHERE a = 1 AND b IN ('it\\'s', NULL)"


def test_a_marker_without_value_is_an_error_at_its_position_in_the_script():
    with pytest.raises(ParseError, match="fewer values") as e:
        bind_parameters("SELECT ?,\n  ?", [1], origin=SqlPosition(5, 1))
    assert e.value.position == SqlPosition(6, 3)
