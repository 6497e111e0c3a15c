"""The documentation site (mkdocs.yml, docs/, scripts/site_hooks.py): every public name
documented with a runnable example, the site built with warnings as errors, every Python
block on its pages run, and the built site checked in a real browser.

These tests need the ``docs`` extra (MkDocs, Material, mkdocstrings, playwright), which the
README's test command installs; they carry the ``docs`` marker, and .ci/run's passes on the
oldest supported versions leave them out (``-m 'not lint and not docs'``), as they leave out
the linters. Without the extra they fail, saying so; the browser test is skipped, saying
why, where Debian's ``/usr/bin/chromium`` is absent (.ci/run installs it with apt where it
can).

The public names and the rule for each (``test_every_public_name_has_a_docstring_and_an
_example``):

- the public names of a module are its ``__all__`` (each of the six modules has one);
- a class or a function (anything callable but a dtype) needs a docstring of its own (not
  one inherited, nor the one ``namedtuple`` or ``Enum`` writes) with a ``>>>`` example; pytest
  runs every one (``--doctest-modules`` over graphdsl and exporters);
- a submodule (``graphdsl.nn``, ``graphdsl.max.ops``...) needs a module docstring; its own
  names are checked where it is one of the six modules, and are on its API page otherwise;
- plain data: a dtype constant (``gd.float32``, a member of the ``DType`` enum) is
  documented by ``DType`` (a class, under the rule above) and by its row of the dtype table
  on the ``graphdsl`` API page; other data (a tuple, a type alias) needs an attribute
  docstring (the string after its assignment, which mkdocstrings shows, read with griffe);
  an example would not run there (doctest does not read attribute docstrings).
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

import graphdsl as gd

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MODULES = [
    "graphdsl",
    "graphdsl.ops",
    "graphdsl.nn",
    "graphdsl.max",
    "graphdsl.passes",
    "exporters.onnx",
]
pytestmark = pytest.mark.docs


def _require(module: str) -> Any:
    """``module``, or a failure saying to install the docs extra."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        pytest.fail(
            f"{e}: the docs extra is not installed (pip install -e '.[docs]'; the "
            "README's test command installs it)"
        )


# ---------------------------------------------------------------------------- public names


def public_names() -> list[tuple[str, str, object]]:
    """(module, name, object) of every public name of the six modules."""
    found = []
    for module in MODULES:
        mod = importlib.import_module(module)
        names = getattr(mod, "__all__", None)
        assert names is not None, f"{module} has no __all__: its public names are undefined"
        found += [(module, n, getattr(mod, n)) for n in names]
    return found


def is_code(obj: object) -> bool:
    """A class or a function: what needs a docstring with an example."""
    if isinstance(obj, (gd.DType, types.GenericAlias, types.UnionType, types.ModuleType)):
        return False
    return inspect.isclass(obj) or inspect.isroutine(obj) or callable(obj)


def own_docstring(obj: object) -> str:
    """The docstring ``obj`` itself has: a class's not inherited, and neither the one
    ``namedtuple`` writes (``Name(a, b)``) nor Enum's default."""
    if inspect.isclass(obj):
        doc = obj.__dict__.get("__doc__") or ""
        fields = getattr(obj, "_fields", None)
        if fields is not None and doc == f"{obj.__name__}({', '.join(fields)})":
            return ""
        if doc.strip() in ("An enumeration.", "Create a collection of name/value pairs."):
            return ""
        return doc
    return getattr(obj, "__doc__", None) or ""


def missing_docs() -> dict[str, str]:
    """'module.name' -> what it lacks, for every public name lacking something."""
    griffe = _require("griffe")
    loaded: dict[str, Any] = {}
    lacking: dict[str, str] = {}
    for module, name, obj in public_names():
        key = f"{module}.{name}"
        if isinstance(obj, types.ModuleType):
            if not (obj.__doc__ or "").strip():
                lacking[key] = "a module docstring"
        elif is_code(obj):
            doc = own_docstring(obj)
            if not doc.strip():
                lacking[key] = "a docstring"
            elif ">>>" not in doc:
                lacking[key] = "an example (>>>) in its docstring"
        elif isinstance(obj, gd.DType):
            if ">>>" not in own_docstring(gd.DType):
                lacking[key] = "an example in DType's docstring, which documents it"
        else:
            top = module.split(".")[0]
            if top not in loaded:
                loaded[top] = griffe.load(top, search_paths=[str(ROOT)])
            member = (
                loaded[top][module.removeprefix(top).lstrip(".")]
                if module != top
                else (loaded[top])
            )
            attr = member[name]
            if attr.docstring is None or not attr.docstring.value.strip():
                lacking[key] = "an attribute docstring (a string after its assignment)"
    return lacking


def test_every_public_name_has_a_docstring_and_an_example() -> None:
    names = public_names()
    lacking = missing_docs()
    print(f"public names: {len(names)} found, {len(names) - len(lacking)} documented")
    assert not lacking, "public names without what the docs need:\n" + "\n".join(
        f"  {k}: {v}" for k, v in sorted(lacking.items())
    )


def test_the_rule_sees_what_it_must() -> None:
    """The checks above would catch each kind of gap (their own test)."""

    class Bare:
        pass

    class Documented:
        """A class with an example.

        >>> 1
        1
        """

    class Child(Documented):
        pass

    def no_example() -> None:
        """Words only."""

    assert is_code(Bare) and not own_docstring(Bare)
    assert not own_docstring(Child)  # inherited docstrings do not count
    assert ">>>" in own_docstring(Documented)
    assert ">>>" not in own_docstring(no_example)
    assert not is_code(gd.float32) and not is_code(list[int]) and not is_code(int | str)


def test_doctest_fences_for_the_site() -> None:
    """scripts/site_griffe.py's conversion (its own doctest; scripts/ is not collected)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        site_griffe = _require("site_griffe")
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    result = doctest.testmod(site_griffe, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


# ---------------------------------------------------------------------------- the build


class Built:
    def __init__(self, site: Path, seconds: float, proc: subprocess.CompletedProcess[str]):
        self.site, self.seconds, self.proc = site, seconds, proc

    def check(self) -> Path:
        if self.proc.returncode != 0:
            pytest.fail(
                f"mkdocs build --strict failed (exit {self.proc.returncode}):\n"
                + self.proc.stdout[-5000:]
                + self.proc.stderr[-5000:]
            )
        return self.site


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The site built once with ``mkdocs build --strict`` into a temporary folder."""
    _require("mkdocs")
    _require("mkdocstrings")
    _require("material")
    site = tmp_path_factory.mktemp("site") / "site"
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    return Built(site, time.monotonic() - start, proc)


def test_mkdocs_build_strict(built: Built) -> None:
    site = built.check()
    pages = sorted(site.rglob("index.html"))
    print(f"mkdocs build --strict: {len(pages)} pages in {built.seconds:.1f} s into {site}")
    assert (site / "index.html").is_file() and (site / "search" / "search_index.json").is_file()
    for needed in (
        "ops/index.html",
        "ops/layers/index.html",
        "api/graphdsl/index.html",
        "benchmarks/index.html",
        "max-differences/index.html",
        "images/lattices/default.png",
        "images/benchmarks/build-ratios.png",
    ):
        assert (site / needed).is_file(), needed


def _ids(html: Path) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', html.read_text()))


def test_every_public_name_has_an_entry_on_the_site(built: Built) -> None:
    """An anchor for every public name on its module's API page (graphdsl.ops: on its op
    family's page), as the site's pages are generated (scripts/site_hooks.py)."""
    site = built.check()
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        hooks = _require("site_hooks")
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    ids: dict[str, set[str]] = {}
    missing = []
    for module, name, obj in public_names():
        if module == "graphdsl.ops":
            page = f"ops/{hooks.op_family(name)}"
            anchor = hooks.op_anchor(name)
        else:
            page = f"api/{hooks.API_MODULES[module]}"
            plain = isinstance(obj, (gd.DType, types.ModuleType))
            anchor = f"{module}.{name}" if plain else hooks.object_path(module, name, obj)
        if page not in ids:
            ids[page] = _ids(site / page / "index.html")
        if anchor not in ids[page]:
            missing.append(f"{module}.{name} (#{anchor} on {page}/)")
    assert not missing, "no entry on the site:\n" + "\n".join(missing)
    # and every op is found by the site's search (an entry of its index at the op's anchor)
    index = json.loads((site / "search" / "search_index.json").read_text())
    located = {d["location"].rsplit("#", 1)[-1] for d in index["docs"]}
    unsearchable = [n for n in gd.ops.__all__ if hooks.op_anchor(n) not in located]
    assert not unsearchable, f"ops missing from the search index: {unsearchable}"


# ---------------------------------------------------------------------------- the pages


def _doc_blocks() -> Any:
    import doc_blocks

    return doc_blocks


def doc_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


@pytest.mark.parametrize("page", doc_pages(), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_python_blocks_run(page: Path) -> None:
    """Every ```python block of a page runs (in order, one namespace) and prints what the page
    shows, or is marked <!-- not run: REASON --> with a reason."""
    db = _doc_blocks()
    found = db.blocks(str(page.relative_to(ROOT)), page.read_text())
    problems = db.run_page(str(page.relative_to(ROOT)), found)
    assert not problems, "\n\n".join(problems)


def test_generated_pages_have_no_unmarked_python_blocks() -> None:
    """The pages the hooks make (no runnable examples of their own: an op's or a name's
    example is its doctest) have no ```python block left unmarked; the includes of
    examples/ come marked."""
    _require("mkdocs")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        hooks = _require("site_hooks")
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    db = _doc_blocks()
    cheap = {
        "max-differences.md": hooks.max_differences_page(),
        "promotion.md": hooks.promotion_page(),
        **hooks.api_pages(),
    }
    included = {p.name: hooks.expand_includes(p.read_text()) for p in doc_pages()}
    for name, text in {**cheap, **included}.items():
        for block in db.blocks(name, text):
            if name in cheap:
                assert block.not_run is not None, f"{name}:{block.line}: a python block"
            assert not block.problems, f"{name}:{block.line}: {block.problems}"


def test_block_marks() -> None:
    """What counts as marked, and a reason is required."""
    db = _doc_blocks()
    text = (
        "<!-- not run: needs a GPU -->\n```python\nimport cupy\n```\n\n"
        "<!-- not run -->\n```python\nx = 1\n```\n\n"
        "```python\nprint(2)\n```\n<!-- output -->\n```text\n2\n```\n"
        "```python\nprint(3)\n```\n<!-- output -->\n```text\n4\n```\n"
    )
    found = db.blocks("t.md", text)
    assert [b.not_run for b in found] == ["needs a GPU", "", None, None]
    assert found[1].problems == ["marked 'not run' without a reason"]
    assert found[2].expect == "2"
    problems = db.run_page("t.md", found)
    assert len(problems) == 2
    assert "without a reason" in problems[0] and "prints\n3\nwhere the page shows\n4" in problems[1]


# ---------------------------------------------------------------------------- the browser


def test_site_in_a_real_browser(built: Built) -> None:
    """Headless Chromium opens every page of the built site (tests/site_browser.py)."""
    site = built.check()
    import site_browser

    why = site_browser.unavailable()
    if why:
        pytest.skip(why)
    report = site_browser.check(site)
    print(report.summary())
    assert report.pages >= 40 and report.links > 1000 and report.images >= 10
    assert not report.problems, "\n".join(report.problems[:60])
