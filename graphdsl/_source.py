"""Where the user's code created a node: the first stack frame outside graphdsl."""

from __future__ import annotations

import os
import sys
from typing import NamedTuple

__all__ = ["Location", "user_location"]

_PKG = os.path.dirname(os.path.abspath(__file__)) + os.sep


class Location(NamedTuple):
    file: str
    line: int

    def __str__(self) -> str:
        return f"{os.path.basename(self.file)}:{self.line}"

    def source_line(self) -> str:
        """The text of the line, stripped ('' when the file cannot be read)."""
        import linecache

        return linecache.getline(self.file, self.line).strip()


_SEEN: dict[tuple[str, int], Location] = {}


def user_location() -> Location | None:
    """The caller's frame that is not inside the graphdsl package.

    Locations are interned: a loop that builds a million nodes on one line shares one.
    """
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(_PKG):
            key = (name, frame.f_lineno)
            loc = _SEEN.get(key)
            if loc is None:
                loc = _SEEN[key] = Location(name, key[1])
            return loc
        frame = frame.f_back  # type: ignore[assignment]
    return None
