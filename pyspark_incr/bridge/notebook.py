"""Procedure results as tables in Jupyter: a ``spark.sql("CALL incr.status()")`` cell shows its rows.

Only DataFrames that hold a ``CALL``'s result are rendered. Their rows were
computed when the CALL ran, so showing them costs nothing, where rendering any
DataFrame (``spark.sql.repl.eagerEval.enabled``) would run a Spark job for every
DataFrame a cell ends with. Every other DataFrame keeps pyspark's own behaviour,
eager evaluation included when the user turns it on.
"""

from __future__ import annotations

import html
import sys
from typing import Any

#: Rows shown of one procedure result; the rest are summarized in a line under the table.
MAX_ROWS = 1000


def ipython_shell() -> Any | None:
    """The running IPython shell (a Jupyter kernel, or terminal IPython), else None.

    IPython is never imported here: a plain Python process has not loaded it, and needs no formatter.
    """
    module = sys.modules.get("IPython")
    get = getattr(module, "get_ipython", None)
    shell = get() if get else None
    return shell if shell is not None and hasattr(shell, "display_formatter") else None


def show_procedure_results_as_tables(shell: Any | None = None) -> bool:
    """Register the HTML formatter in ``shell`` (default: the running one); False outside IPython. Idempotent."""
    shell = shell or ipython_shell()
    if shell is None:
        return False
    from pyspark.sql import DataFrame

    shell.display_formatter.formatters["text/html"].for_type(DataFrame, dataframe_html)
    return True


def dataframe_html(df: Any) -> str | None:
    """HTML for ``df``: a table when it is a CALL's result, else whatever pyspark's own ``_repr_html_`` gives."""
    if is_procedure_result(df):
        return result_table(df.columns, df.take(MAX_ROWS + 1))
    own = getattr(df, "_repr_html_", None)
    return own() if own else None


def is_procedure_result(df: Any) -> bool:
    """Whether ``df`` was made by a ``CALL`` statement (classic sessions; Spark Connect ones are not recognized)."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return False
    try:
        return jdf.queryExecution().logical().getClass().getSimpleName() == "Call"
    except Exception:  # noqa: BLE001 - a stopped session or a foreign DataFrame: not ours to render
        return False


def result_table(columns: list[str], rows: list[Any]) -> str:
    """An HTML table of ``rows`` (at most :data:`MAX_ROWS`, then a line saying how many more exist).

    >>> result_table(["model", "status"], [("a<b", None)])
    "<table border='1'>\\n<tr><th>model</th><th>status</th></tr>\\n<tr><td>a&lt;b</td><td>NULL</td></tr>\\n</table>\\n"
    """
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = [
        "<tr>" + "".join(f"<td>{'NULL' if v is None else html.escape(str(v))}</td>" for v in row) + "</tr>"
        for row in rows[:MAX_ROWS]
    ]
    text = "<table border='1'>\n" + "\n".join([f"<tr>{head}</tr>", *body]) + "\n</table>\n"
    if not rows:
        text += "<p>(no rows: nothing to do)</p>\n"
    elif len(rows) > MAX_ROWS:
        text += f"<p>only the first {MAX_ROWS} rows are shown; collect() the DataFrame for all of them</p>\n"
    return text
