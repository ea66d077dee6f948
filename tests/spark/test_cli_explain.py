"""`pyice-sql run` prints EXPLAIN's plan as text lines (as the notebook magic does), not as one
table cell with escaped newlines."""
from __future__ import annotations

import pytest

from pyice_sql import cli

pytestmark = pytest.mark.spark


def test_explain_prints_plan_text(spark, tmp_path, capsys):
    script = tmp_path / "explain.sql"
    script.write_text("CREATE DATABASE local.db;\n"
                      "CREATE TABLE local.db.t (id int, s string) USING iceberg;\n"
                      "INSERT INTO local.db.t VALUES (1, 'a');\n"
                      "EXPLAIN SELECT * FROM local.db.t WHERE id = 1;\n"
                      "EXPLAIN DELETE FROM local.db.t WHERE id = 1;\n")
    assert cli.main(["run", str(script), "--warehouse", str(tmp_path / "wh"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "\\n" not in out  # no escaped newlines anywhere
    lines = out.splitlines()
    # Spark's sections each on a line of their own, then our scan summary
    for header in ("== Parsed Logical Plan ==", "== Physical Plan ==", "== pyice scan =="):
        assert header in lines, out
    assert not any(line.startswith("|") or line.startswith("+-----") for line in lines), out
    delete_plan = out[out.index("> line 5"):]
    assert len(delete_plan.splitlines()) > 3, delete_plan
