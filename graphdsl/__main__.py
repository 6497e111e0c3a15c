"""``python -m graphdsl``: see :mod:`graphdsl.cli`."""

from __future__ import annotations

import sys

from graphdsl.cli import main

sys.exit(main())
