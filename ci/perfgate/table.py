"""Aligned Markdown tables: readable in a terminal, pasteable into NOTES.md."""
from __future__ import annotations

from collections.abc import Sequence


def markdown(headers: Sequence[str], rows: Sequence[Sequence[object]], align: str = "") -> str:
    """A Markdown table with padded columns.

    ``align`` has one letter per column, ``l`` or ``r`` (default: first column left, the rest
    right). Cells are converted with ``str``; ``None`` prints as ``-``. Raises ValueError when a row
    has a different number of cells than ``headers``.
    """
    align = align or "l" + "r" * (len(headers) - 1)
    if len(align) != len(headers):
        raise ValueError(f"align {align!r} has {len(align)} letters for {len(headers)} columns")
    cells = [[str(h) for h in headers]]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row {list(row)!r} has {len(row)} cells, the table has {len(headers)} columns")
        cells.append(["-" if c is None else str(c) for c in row])
    widths = [max(3, *(len(r[i]) for r in cells)) for i in range(len(headers))]

    def line(r: list[str]) -> str:
        padded = (c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(r, widths, align))
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if a == "r" else ("-" * (w + 2)) for w, a in zip(widths, align)) + "|"
    return "\n".join([line(cells[0]), rule] + [line(r) for r in cells[1:]])
