"""The notebook magics in a real Jupyter kernel: sql_examples/notebook.ipynb executed with
nbclient, its outputs checked (HTML tables, row limit, -o capture, ${var}, EXPLAIN, errors)."""
from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

import nbclient
import nbformat

pytestmark = pytest.mark.spark

NOTEBOOK = Path(__file__).resolve().parents[2] / "sql_examples" / "notebook.ipynb"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("notebook")  # the default warehouse ./warehouse lands here
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    client.execute()  # the kernel inherits this process's environment (TZ=UTC from conftest)
    return {cell.source.splitlines()[-1] if cell.source.startswith("%%") else cell.source.splitlines()[0]: cell
            for cell in nb.cells if cell.cell_type == "code"}, cwd


def _html(cell) -> str:
    results = [o for o in cell.outputs if o.output_type == "execute_result"]
    assert len(results) == 1, cell.outputs
    return results[0].data["text/html"]


def _rows(table: str) -> list[list[str]]:
    return [[html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", row)] for row in re.findall(r"<tr>(.*?)</tr>", table)
            if "<td>" in row]


def test_ddl_cell_shows_nothing_and_writes_the_table(executed):
    cells, cwd = executed
    cell = cells["INSERT INTO local.nb.t VALUES (1, 'a'), (2, '<b>bold?</b>'), (3, NULL)"]
    assert not [o for o in cell.outputs if o.output_type in ("execute_result", "error")]
    assert (cwd / "warehouse" / "nb" / "t" / "metadata").is_dir()


def test_select_is_an_escaped_html_table_limited_to_n_rows_and_captured(executed):
    cells, _ = executed
    table = _html(cells["SELECT * FROM local.nb.t ORDER BY id"])
    assert re.findall(r"<th>(.*?)</th>", table) == ["id", "s"]
    assert _rows(table) == [["1", "a"], ["2", "<b>bold?</b>"]]  # -n 2 of 3 rows; markup escaped
    assert "&lt;b&gt;" in table and "showing the first 2 rows" in table
    assert cells["first_rows.count()"].outputs[-1].data["text/plain"] == "3"  # -o: the whole DataFrame


def test_merge_uses_notebook_variable_and_shows_metrics_and_progress(executed):
    cells, _ = executed
    cell = cells["WHEN MATCHED THEN UPDATE SET s = u.s"]
    table = _html(cell)
    metrics = dict(zip(re.findall(r"<th>(.*?)</th>", table), _rows(table)[0]))
    assert (metrics["num_updated_rows"], metrics["num_inserted_rows"], metrics["num_deleted_rows"]) == ("1", "0", "0")
    assert metrics["num_added_delete_files"] == "1"  # merge-on-read
    stderr = "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stderr")
    phases = re.findall(r"pyice: MERGE local\.nb\.t: (\w+):", stderr)
    assert phases == ["planning", "write", "commit"]  # counts are known only once the write jobs ran
    assert _rows(_html(cells["%pyice_sql -o one SELECT s FROM local.nb.t WHERE id = 3"])) == [["c"]]


def test_explain_is_preformatted(executed):
    cells, _ = executed
    out = _html(cells["%pyice_sql EXPLAIN DELETE FROM local.nb.t WHERE id = 1"])
    assert out.startswith("<pre>== pyice_sql row-level plan: DELETE local.nb.t ==\n") and "<table" not in out


def test_error_is_one_line_without_traceback(executed):
    cells, _ = executed
    cell = cells["%pyice_sql SELECT nope FROM local.nb.t"]
    text = "".join(o.get("text", "") for o in cell.outputs) + "".join("".join(o.get("traceback", []))
                                                                        for o in cell.outputs)
    assert re.fullmatch(r"UsageError: Analysis(Exception|Error): \[UNRESOLVED_COLUMN\.WITH_SUGGESTION\][^\n]*`nope`[^\n]*\n",
                        text), text
