"""The built documentation site in a real browser: headless Chromium (Debian's ``chromium``,
driven by playwright through ``executable_path``; nothing is downloaded) opens every page,
served on localhost, and reports what a reader would meet:

- a console error or an uncaught exception in a page;
- a request outside the site (each is blocked and reported), or a response of 400 or more;
- an internal link to a page or file that does not exist, or to an anchor its page lacks;
- an image that does not load (``naturalWidth == 0``);
- a page without a title.

It also types queries into the site's search box and records the pages of the results, and
writes screenshots into the site (``_screenshots/``).

    python tests/site_browser.py site/     # check a site built with `mkdocs build`
"""

from __future__ import annotations

import functools
import http.server
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urlsplit

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# query -> the page (a path of the site) a result must be on
SEARCHES = {
    "implicit_cast": "api/passes/",
    "scaled_dot_product_attention": "ops/layers/",
    "load_state_dict": "api/nn/",
}
SCREENSHOTS = {"home": "", "op-reference": "ops/layers/", "tutorial": "port-pytorch/"}


def unavailable() -> str | None:
    """Why the browser check cannot run here, or None."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is absent (Debian: apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[docs]')"
    return None


@dataclass
class Report:
    pages: int = 0
    links: int = 0  # internal links checked (each <a href> of each page)
    anchors: int = 0  # of those, links with a #fragment whose element was looked for
    external_links: int = 0  # links out of the site (not followed)
    images: int = 0
    searches: dict[str, list[str]] = field(default_factory=dict)  # query -> result pages
    screenshots: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        hits = "; ".join(
            f"{q}: {len(r)} pages, {SEARCHES[q]} {'among them' if SEARCHES[q] in r else 'MISSING'}"
            for q, r in self.searches.items()
        )
        return (
            f"{self.pages} pages opened in {self.seconds:.1f} s, {self.links} internal links "
            f"checked ({self.anchors} with an anchor), {self.external_links} external links "
            f"(not followed), {self.images} images loaded; search: {hits}; screenshots: "
            + ", ".join(str(p) for p in self.screenshots)
        )


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serve(site: Path) -> Iterator[str]:
    """``site`` served on localhost in a thread; yields its base URL."""
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()


def page_paths(site: Path) -> list[str]:
    """The site's pages as URL paths ('' for the home page, 'ops/' for ops/index.html)."""
    paths = []
    for html in sorted(site.rglob("*.html")):
        rel = html.relative_to(site).as_posix()
        if rel == "404.html" or rel.startswith("_"):
            continue
        paths.append(rel[: -len("index.html")] if rel.endswith("index.html") else rel)
    return paths


_COLLECT = """() => ({
  title: document.title,
  ids: [...document.querySelectorAll('[id]')].map(e => e.id),
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  images: [...document.images].map(i => [i.currentSrc || i.src, i.complete && i.naturalWidth > 0]),
})"""


def check(site: Path, shots: Path | None = None) -> Report:
    """Open every page of the built ``site`` in Chromium; screenshots into ``shots`` (by
    default the site's ``_screenshots/``)."""
    from playwright.sync_api import Request, Route, sync_playwright

    start = time.monotonic()
    report = Report()
    shots = shots or site / "_screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    paths = page_paths(site)
    ids: dict[str, set[str]] = {}
    links: dict[str, list[str]] = {}
    profile = tempfile.mkdtemp(prefix="graphdsl-chromium-")
    try:
        with serve(site) as base, sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=ARGS,
                viewport={"width": 1280, "height": 900},
            )
            current = {"path": ""}

            def route(r: Route, request: Request) -> None:
                if request.url.startswith(base):
                    r.continue_()
                else:
                    report.problems.append(
                        f"{current['path'] or '/'}: a request outside the site: {request.url}"
                    )
                    r.abort()

            context.route("**/*", route)
            page = context.new_page()
            page.on(
                "console",
                lambda m: (
                    m.type == "error"
                    and report.problems.append(f"{current['path'] or '/'}: console error: {m.text}")
                ),
            )
            page.on(
                "pageerror",
                lambda e: report.problems.append(
                    f"{current['path'] or '/'}: uncaught exception: {e}"
                ),
            )
            page.on(
                "response",
                lambda r: (
                    r.status >= 400
                    and report.problems.append(f"{current['path'] or '/'}: {r.status} for {r.url}")
                ),
            )
            for path in paths:
                current["path"] = path
                page.goto(base + path, wait_until="load")
                got = page.evaluate(_COLLECT)
                report.pages += 1
                if not got["title"].strip():
                    report.problems.append(f"{path or '/'}: no title")
                ids[path] = set(got["ids"])
                links[path] = got["links"]
                for src, ok in got["images"]:
                    report.images += 1
                    if not ok:
                        report.problems.append(f"{path or '/'}: image does not load: {src}")
            for name, path in SCREENSHOTS.items():
                current["path"] = path
                page.goto(base + path, wait_until="load")
                out = shots / f"{name}.png"
                page.screenshot(path=str(out))
                report.screenshots.append(out)
            current["path"] = "(search)"
            for query in SEARCHES:
                report.searches[query] = search(page, base, query)
            context.close()
        _check_links(site, base, paths, ids, links, report)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    for query, want in SEARCHES.items():
        if want not in report.searches[query]:
            report.problems.append(
                f"search {query!r}: no result on {want} (results on {report.searches[query]})"
            )
    report.seconds = time.monotonic() - start
    return report


def search(page: Any, base: str, query: str) -> list[str]:
    """The pages (site paths) of the results of ``query`` in the site's search box."""
    page.goto(base, wait_until="load")
    box = page.locator("input.md-search__input")
    box.click()
    # the index (2.5 MB of JSON) is built in a web worker first (on a loaded machine that
    # takes tens of seconds); then the query is typed key by key, as a user types it (the
    # search runs on key events: a value filled in at once, after the index is ready, starts
    # no search)
    page.wait_for_function(
        "() => { const m = document.querySelector('.md-search-result__meta');"
        " return m !== null && m.textContent !== '' && !/initializing/i.test(m.textContent); }",
        timeout=180_000,
    )
    box.press_sequentially(query)
    page.wait_for_selector(".md-search-result__item", timeout=60_000)
    # each key runs a search, and the worker answers them in turn: the list first shown may
    # be a prefix's; read it until it stays the same for a second (a minute at most)
    hrefs: list[str] = []
    steady, deadline = 0, time.monotonic() + 60
    while steady < 4 and time.monotonic() < deadline:
        page.wait_for_timeout(250)
        now: list[str] = page.eval_on_selector_all(
            ".md-search-result__item a", "as => as.map(a => a.href)"
        )
        steady = steady + 1 if now == hrefs and now else 0
        hrefs = now
    found = []
    for href in hrefs:
        path = urlsplit(href).path.lstrip("/")
        if path not in found:
            found.append(path)
    return found


def _check_links(
    site: Path,
    base: str,
    paths: list[str],
    ids: dict[str, set[str]],
    links: dict[str, list[str]],
    report: Report,
) -> None:
    for path in paths:
        for href in links[path]:
            if not href.startswith(base):
                if urlsplit(href).scheme in ("http", "https"):
                    report.external_links += 1
                continue
            report.links += 1
            url, fragment = urldefrag(href)
            target = unquote(url[len(base) :])
            if target in ids:
                if fragment:
                    report.anchors += 1
                    if unquote(fragment) not in ids[target]:
                        report.problems.append(
                            f"{path or '/'}: a link to {target or '/'}#{fragment}: no such anchor"
                        )
                continue
            file = site / target
            if file.is_dir():
                file = file / "index.html"
            if not file.is_file():
                report.problems.append(f"{path or '/'}: a link to a missing page: {href}")


def main(argv: list[str]) -> int:
    why = unavailable()
    if why:
        print(f"skipped: {why}")
        return 0
    report = check(Path(argv[0]))
    print(report.summary())
    print("\n".join(report.problems) or "no problems")
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
