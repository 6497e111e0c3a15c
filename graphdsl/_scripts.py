"""Run a user's script and collect the graphs it builds (for ``explain`` and ``draw``)."""

from __future__ import annotations

import os
import runpy
import sys

from graphdsl.graph import _ON_CREATE, Graph
from graphdsl.passes import implicit_cast

__all__ = ["collect_graphs", "draw_script", "explain_script"]


def collect_graphs(script: str) -> list[Graph]:
    """Execute ``script`` as ``__main__`` and return every Graph it created, in order."""
    if not os.path.exists(script):
        raise FileNotFoundError(f"no such script: {script}")
    made: list[Graph] = []
    _ON_CREATE.append(made.append)
    old_argv = sys.argv
    sys.argv = [script]
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        _ON_CREATE.remove(made.append)
        sys.argv = old_argv
    # passes build graphs too (Rewriter); keep the ones the script itself made
    return [g for g in made if g.nodes and not getattr(g, "_derived", False)]


def explain_script(script: str) -> int:
    graphs = collect_graphs(script)
    if not graphs:
        print(f"{script} built no graphs")
        return 1
    for g in graphs:
        print(g.explain())
    return 0


def draw_script(script: str, output: str | None, fmt: str) -> int:
    graphs = collect_graphs(script)
    if not graphs:
        print(f"{script} built no graphs")
        return 1
    for g in graphs:
        shown = implicit_cast(g)  # every conversion as a visible cast node
        if output is None:  # (dot only: the command line asks -o of png)
            print(shown.to_dot())
            continue
        suffix = f"-{g.name}" if len(graphs) > 1 else ""
        path = f"{output}{suffix}.{fmt}"
        if fmt == "dot":
            with open(path, "w") as f:
                f.write(shown.to_dot())
        else:
            from graphdsl.printing import draw_graph

            draw_graph(shown, path)
        print(f"wrote {path}")
    return 0
