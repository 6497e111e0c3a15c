"""How run() makes its sessions, as one value: :class:`Options` (providers with their
options, threads, the user's SessionOptions), the key of its session cache with the model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Options"]

_CUDA = "CUDAExecutionProvider"
_CPU_ONLY = ["CPUExecutionProvider"]


@dataclass(frozen=True)
class Options:
    """How run() makes a session: providers with their options, threads, the user's
    SessionOptions (by identity). One value, the session cache's key with the model.

    >>> from exporters.onnx import options
    >>> options(threads=1)
    Options(providers=(('CPUExecutionProvider', ()),), threads=1, session_options=None)
    >>> options(threads=1) == options(threads=1), options(threads=1).names
    (True, ['CPUExecutionProvider'])
    """

    providers: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    threads: int | None = None
    session_options: Any = None  # an ort.SessionOptions, compared by identity

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Options)
            and self.providers == other.providers
            and self.threads == other.threads
            and self.session_options is other.session_options
        )

    def __hash__(self) -> int:
        return hash((self.providers, self.threads, id(self.session_options)))

    @property
    def names(self) -> list[str]:
        return [p for p, _ in self.providers]

    def for_ort(self) -> tuple[list[str], list[dict[str, str]]]:
        return self.names, [dict(o) for _, o in self.providers]


def _entries(
    providers: Sequence[str | tuple[str, Mapping[str, Any]]] | None,
    provider_options: Mapping[str, Mapping[str, Any]] | None,
    tf32: bool,
) -> list[tuple[str, dict[str, str]]]:
    """(name, options) per provider: ``provider_options`` merged over the pairs' own, and
    CUDA's use_tf32 from ``tf32`` unless given."""
    listed: list[tuple[str, dict[str, str]]] = []
    for p in providers or [_CPU_ONLY[0]]:
        name, opts = (p, {}) if isinstance(p, str) else (p[0], dict(p[1]))
        listed.append((name, {k: str(v) for k, v in opts.items()}))
    for name, extra in (provider_options or {}).items():
        for entry in listed:
            if entry[0] == name:
                entry[1].update({k: str(v) for k, v in extra.items()})
    for name, opts in listed:
        if name == _CUDA:
            opts.setdefault("use_tf32", "1" if tf32 else "0")
    return listed
