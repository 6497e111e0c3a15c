"""The package works as users install it: a wheel, in a fresh venv, outside the source tree.

The sdist is built first and the wheel from it (``python -m build``), so a file the sdist
drops is missing from the wheel too. The wheel must hold every module and data file of
``graphdsl/`` and ``exporters/``; installed in a new venv, the quickstart and the CLI run
from a directory that is not the checkout, importing the installed copy.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("graphdsl", "exporters")
DATA_SUFFIXES = (".py", ".json", ".typed")


def _source_files() -> set[str]:
    files = set()
    for pkg in PACKAGES:
        for f in (ROOT / pkg).rglob("*"):
            if f.is_file() and f.suffix in DATA_SUFFIXES and "__pycache__" not in f.parts:
                files.add(f.relative_to(ROOT).as_posix())
    return files


# Build outputs in the checkout must not take part: an editable install's
# graphdsl.egg-info/SOURCES.txt lists every file, and setuptools then ships subpackages that
# its configuration misses as "package data" of their parent, hiding the bug this catches.
_NOT_SOURCE = shutil.ignore_patterns(
    "*.egg-info",
    "build",
    "dist",
    ".venv",
    "__pycache__",
    ".*_cache",
    ".git",
    ".hypothesis",
    "*.onnx",
    "*.onnx.data",
)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    tree = tmp_path_factory.mktemp("src") / "graphdsl"
    shutil.copytree(ROOT, tree, ignore=_NOT_SOURCE)
    r = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(tree)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out


def test_wheel_holds_every_module_and_data_file(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        shipped = {n for n in z.namelist() if n.split("/")[0] in PACKAGES}
    source = _source_files()
    assert {"graphdsl/passes/implicit_cast.py", "exporters/onnx/_export.py"} <= source
    assert source - shipped == set(), "files the wheel lacks"
    assert shipped - source == set(), "files in the wheel that the tree does not have"


def test_sdist_holds_every_source_file(dist: Path) -> None:
    import tarfile

    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    assert {"pyproject.toml", "README.md"} <= names
    assert _source_files() <= names


def test_installed_wheel_runs_outside_the_tree(dist: Path, tmp_path: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    py = env_dir / "bin" / "python"
    # pip of this interpreter installs into the new venv; the dependencies come from this
    # environment's site-packages (a path line, whose own .pth files are not run: this
    # environment's editable graphdsl stays out of sight)
    r = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index",
         "--quiet", str(wheel)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    Path(purelib, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = tmp_path / "elsewhere"
    work.mkdir()
    script = (ROOT / "examples" / "quickstart.py").read_text()
    (work / "quickstart.py").write_text(script)

    def run(*args: str) -> str:
        r = subprocess.run([str(py), *args], cwd=work, capture_output=True, text=True,
                           check=False, timeout=300)  # fmt: skip
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        return r.stdout

    where = run("-c", "import graphdsl, exporters.onnx; print(graphdsl.__file__)")
    assert where.startswith(str(env_dir)), f"imported {where!r}, not the installed wheel"
    out = run("quickstart.py")
    assert out.count("equal: True") == 3, out
    assert (work / "quickstart.onnx").is_file()
    table = run("-m", "graphdsl", "table", "--policy", "default")
    in_tree = subprocess.run(
        [sys.executable, "-m", "graphdsl", "table", "--policy", "default"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "| i16 |" in table and table == in_tree
