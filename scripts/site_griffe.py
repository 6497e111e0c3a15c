"""A griffe extension (mkdocs.yml: mkdocstrings' ``extensions``): graphdsl's docstrings as
Markdown.

The docstrings are written for ``help()`` and doctest: ``>>>`` examples, reST roles
(``:func:`x```) and ``::`` before an indented block. Markdown would read an example's output
(``['0.weight', '0.bias']``) as a link and its ``>>>`` as nested quotes, so each example
becomes a fenced ``pycon`` block (the same lines: the doctests that pytest runs), a role the
code it names, and ``::`` a colon.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|data|exc|obj|const):`~?([^`]+)`")
_PROMPT = re.compile(r"^(\s*)>>>( |$)")


def _role(m: re.Match[str]) -> str:
    return f"`{m.group(1)}`"


def markdown(doc: str) -> str:
    r"""``doc`` with its doctest examples fenced and its reST roles made code spans.

    >>> markdown("Sum:\n>>> 1 + 1\n2\n\nSee :func:`~a.b`::").splitlines()
    ['Sum:', '```pycon', '>>> 1 + 1', '2', '```', '', 'See `a.b`:']
    """
    out: list[str] = []
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        m = _PROMPT.match(lines[i])
        if not m:
            line = _ROLE.sub(_role, lines[i])
            out.append(line[:-1] if line.endswith("::") else line)
            i += 1
            continue
        indent = m.group(1)
        out.append(f"{indent}```pycon")
        while i < len(lines) and lines[i].strip():  # an example ends at a blank line
            out.append(lines[i])
            i += 1
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Rewrite each docstring as :func:`markdown` says, as griffe loads it."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
