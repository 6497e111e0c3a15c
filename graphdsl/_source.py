"""Where the user's code created a node: the first stack frame outside graphdsl."""

from __future__ import annotations

import os
import sys
import weakref
from types import CodeType, FrameType
from typing import NamedTuple

__all__ = ["Location", "location_from", "user_location"]

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
# The location of each call site met, by (id of the code object, instruction offset): a
# frame's f_lineno decodes its code's line table (close to a microsecond per node in a build
# loop), its offset costs nothing. An entry holds a weak reference to its code object (a hit
# must still be that object: an id is reused once its object is freed).
_SITES: dict[tuple[int, int], tuple[weakref.ref[CodeType], Location]] = {}
_MAX_SITES = 1 << 16  # (emptied when full: a program that generates code keeps no more)


def user_location() -> Location | None:
    """The caller's frame that is not inside the graphdsl package.

    Locations are interned: a loop that builds a million nodes on one line shares one.
    """
    return location_from(sys._getframe(1))


def location_from(frame: FrameType | None) -> Location | None:
    """The first frame from ``frame`` on (it, its caller...) outside the graphdsl package,
    as :func:`user_location` gives it (for a caller that already holds a frame)."""
    while frame is not None:
        code = frame.f_code
        if not code.co_filename.startswith(_PKG):
            site = _SITES.get((id(code), frame.f_lasti))
            if site is not None and site[0]() is code:
                return site[1]
            key = (code.co_filename, frame.f_lineno)
            loc = _SEEN.get(key)
            if loc is None:
                loc = _SEEN[key] = Location(*key)
            if len(_SITES) >= _MAX_SITES:
                _SITES.clear()
            _SITES[(id(code), frame.f_lasti)] = (weakref.ref(code), loc)
            return loc
        frame = frame.f_back
    return None
