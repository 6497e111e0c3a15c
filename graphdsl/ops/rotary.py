"""Rotary position embeddings: ``rotary_embedding`` (a composition of slices, a negation,
products and a concat; no op of its own).

RoPE rotates each pair of features of a query or key by an angle that grows with the token's
position: with ``cos`` and ``sin`` of those angles (made once per position, e.g. by
``graphdsl.nn.RotaryEmbedding``), ``x * cos + rotate(x) * sin``. Two pairings are in use:

* ``interleaved=False`` (Hugging Face Llama's ``rotate_half``, GPT-NeoX): feature i pairs with
  feature i + rot/2, and ``cos``/``sin`` hold each angle twice, ``[a0..a(r/2-1), a0..]``;
* ``interleaved=True`` (GPT-J, Meta's original Llama): features 2i and 2i + 1 pair, and
  ``cos``/``sin`` hold each angle twice in a row, ``[a0, a0, a1, a1, ...]``.

A ``cos`` narrower than ``x`` (``rot < head_dim``: partial rotary, as Phi and GPT-NeoX use)
rotates the first ``rot`` features and passes the rest through.
"""

from __future__ import annotations

import numpy as np

from graphdsl.ops._define import Operand, Symbol
from graphdsl.ops.elementwise import add, mul
from graphdsl.ops.shape import concat, reshape
from graphdsl.ops.unary import negative
from graphdsl.shapes import ShapeError
from graphdsl.types import OpTypeError

__all__ = ["rotary_embedding"]


def rotary_embedding(x: Operand, cos: Operand, sin: Operand, interleaved: bool = False) -> Symbol:
    """``x`` (``(..., head_dim)``) with its first ``rot`` features rotated by the angles
    whose ``cos`` and ``sin`` (``(..., rot)``, broadcasting against ``x``'s leading axes)
    are given: ``x * cos + rotate(x) * sin``, ``rotate`` pairing features as ``interleaved``
    says (module docstring). Computed in x's, cos's and sin's promoted dtype, as the
    elementwise ops it builds.

    >>> import numpy as np, graphdsl as gd
    >>> t = gd.TensorType(gd.float32, ("seq", 4))
    >>> g = gd.Graph("rope", input_types={"x": t, "cos": t, "sin": t})
    >>> x, cos, sin = g.inputs
    >>> g.output(gd.ops.rotary_embedding(x, cos, sin))
    >>> angle = np.array([[0.0, np.pi / 2, 0.0, np.pi / 2]], np.float32)  # a0 = 0, a1 = pi/2
    >>> feeds = [np.array([[1, 2, 3, 4]], np.float32), np.cos(angle), np.sin(angle)]
    >>> gd.evaluate(g, feeds)[0].round(5)
    array([[ 1., -4.,  3.,  2.]], dtype=float32)
    """
    if not isinstance(x, Symbol):
        raise OpTypeError(f"rotary_embedding: x must be a Symbol, got {type(x).__name__}")
    xs = x
    c, s = (v if isinstance(v, Symbol) else x.graph.constant(np.asarray(v)) for v in (cos, sin))
    if not isinstance(interleaved, bool):
        raise OpTypeError(f"rotary_embedding: interleaved must be a bool, got {interleaved!r}")
    if xs.rank < 1 or c.rank < 1 or s.rank < 1:
        raise ShapeError(
            f"rotary_embedding needs x (..., head_dim), cos and sin (..., rot), got {xs.type}, "
            f"{c.type}, {s.type}"
        )
    head, rot = xs.shape[-1], c.shape[-1]
    if not (isinstance(rot, int) and isinstance(head, int)) or rot % 2 or rot > head:
        raise ShapeError(
            f"rotary_embedding: cos's last dimension ({rot!r}) must be an even static size "
            f"at most x's ({head!r}): the features rotated, in pairs"
        )
    if s.shape[-1] != rot:
        raise ShapeError(f"rotary_embedding: cos {c.type} and sin {s.type} must match")
    part = xs[..., :rot] if rot < head else xs
    if interleaved:  # pairs (2i, 2i + 1): rotate(x) = (-x1, x0) per pair
        pairs = reshape(part, [*part.shape[:-1], rot // 2, 2])
        even, odd = pairs[..., 0:1], pairs[..., 1:2]
        turned = reshape(concat([negative(odd), even], axis=-1), list(part.shape))
    else:  # halves: rotate(x) = (-x2, x1)
        turned = concat([negative(part[..., rot // 2 :]), part[..., : rot // 2]], axis=-1)
    rotated = add(mul(part, c), mul(turned, s))
    return concat([rotated, xs[..., rot:]], axis=-1) if rot < head else rotated
