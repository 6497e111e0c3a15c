"""Render a small grid as a markdown or CSV table (shared by lattices and policies)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

__all__ = ["render_table"]


def render_table(
    rows: Sequence[str],
    cols: Sequence[str],
    cells: Sequence[Sequence[str]],
    *,
    fmt: str = "md",
    corner: str = "",
) -> str:
    """Render ``cells[i][j]`` with row labels ``rows`` and column labels ``cols``.

    >>> print(render_table(["a"], ["x", "y"], [["1", "2"]]))
    |   | x | y |
    |---|---|---|
    | a | 1 | 2 |
    """
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([corner, *cols])
        for label, row in zip(rows, cells, strict=True):
            writer.writerow([label, *row])
        return out.getvalue().rstrip("\n")
    if fmt != "md":
        raise ValueError(f"unknown table format {fmt!r}; use 'md' or 'csv'")
    head = [corner or " ", *cols]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, row in zip(rows, cells, strict=True):
        lines.append("| " + " | ".join([label, *row]) + " |")
    return "\n".join(lines)
