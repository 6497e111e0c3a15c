"""Command line: promotion tables, lattice pictures, single promotions, graph explanations.

    python -m graphdsl table --policy anvil [--format md|csv]
    python -m graphdsl lattice --policy jax [--format dot|png] [-o FILE]
    python -m graphdsl promote int16 'f32?' --policy anvil
    python -m graphdsl explain examples/quickstart.py
    python -m graphdsl draw examples/quickstart.py [--format dot|png] [-o PREFIX]

Nothing is written where the command line does not say: DOT goes to stdout unless ``-o``
names a file, and PNG output needs ``-o``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from graphdsl.builtin_policies import policy, policy_names
from graphdsl.dtypes import DTypeError, dtype
from graphdsl.policies import Policy, Promoted, PromotionError

__all__ = ["main", "parse_type"]

_WEAK_CODES = {"i*": 1, "f*": 1.0, "c*": 1j}


def parse_type(text: str, p: Policy) -> Promoted:
    """Read ``int16``, ``f32?`` (ambiguous) or a weak code ``i*``/``f*``/``c*`` (a literal).

    >>> import graphdsl as gd
    >>> parse_type("f32?", gd.policy("anvil")), parse_type("i*", gd.policy("jax"))
    (Promoted(dtype=DType.float32, ambiguous=True), Promoted(dtype=DType.int64, ambiguous=True))
    """
    if text in _WEAK_CODES:
        return p.literal_type(_WEAK_CODES[text])
    if text.endswith("?"):
        return Promoted(dtype(text[:-1]), True)
    return Promoted(dtype(text), False)


def _policy_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policy", default="default", choices=policy_names(), help="promotion policy"
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m graphdsl", description="graphdsl: dtype promotion and typed graphs"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    table = sub.add_parser("table", help="print a policy's promotion table (generated)")
    _policy_arg(table)
    table.add_argument("--format", choices=["md", "csv"], default="md")
    table.add_argument(
        "--ambiguous", action="store_true", help="rows are ambiguous types (seed 004 style)"
    )

    lattice = sub.add_parser("lattice", help="draw a policy's lattice (Hasse diagram)")
    _policy_arg(lattice)
    lattice.add_argument("--format", choices=["dot", "png"], default="dot")
    lattice.add_argument("-o", "--output", help="output file (dot defaults to stdout)")

    promote = sub.add_parser(
        "promote", help="promote two types and say which rule or lattice path decided it"
    )
    promote.add_argument("lhs", help="e.g. int16, f32? (ambiguous), i* (a Python int)")
    promote.add_argument("rhs")
    _policy_arg(promote)
    explain = sub.add_parser("explain", help="explain the implicit casts of a script's graphs")
    explain.add_argument("script", help="a Python file that builds graphdsl graphs")
    draw = sub.add_parser("draw", help="draw the graphs a script builds (Casts highlighted)")
    draw.add_argument("script", help="a Python file that builds graphdsl graphs")
    draw.add_argument(
        "-o", "--output", help="output path prefix (a file per graph; dot defaults to stdout)"
    )
    draw.add_argument("--format", choices=["dot", "png"], default="dot")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        return _run(args)
    except (DTypeError, PromotionError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    if args.command == "table":
        p = policy(args.policy)
        print(p.table(fmt=args.format, ambiguous_rows=args.ambiguous))
        return 0
    if args.command == "lattice":
        lat = policy(args.policy).lattice
        if args.format == "png":
            if not args.output:
                print(_PNG_NEEDS_OUTPUT, file=sys.stderr)
                return 2
            lat.to_png(args.output)
            print(f"wrote {args.output}")
        elif args.output:
            with open(args.output, "w") as f:
                f.write(lat.to_dot())
            print(f"wrote {args.output}")
        else:
            print(lat.to_dot(), end="")
        return 0
    if args.command == "promote":
        p = policy(args.policy)
        a, b = parse_type(args.lhs, p), parse_type(args.rhs, p)
        d = p.decide(a.dtype, a.ambiguous, b.dtype, b.ambiguous)
        print(f"{a} x {b} -> {d.result}   (policy {p.name})")
        print(f"  rule: {d.rule}")
        return 0
    from graphdsl import _scripts

    if args.command == "explain":
        return _scripts.explain_script(args.script)
    if args.format == "png" and not args.output:
        print(_PNG_NEEDS_OUTPUT, file=sys.stderr)
        return 2
    return _scripts.draw_script(args.script, args.output, args.format)


_PNG_NEEDS_OUTPUT = "error: png output needs -o (where to write it); dot goes to stdout"
