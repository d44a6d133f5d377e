"""The built site on this machine: served from a thread on 127.0.0.1, read by Debian's Chromium.

Shared by the printed edition (``vitbook.site.pdf``) and the browser tests, so that both read
the site as GitHub Pages serves it (text assets gzip-compressed when the browser asks) with the
same headless Chromium. Nothing is downloaded: Playwright drives the installed ``chromium``.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--font-render-hinting=none",
]


class _Handler(http.server.SimpleHTTPRequestHandler):
    GZIP = (".html", ".js", ".css", ".json", ".svg", ".xml", ".txt", ".map", ".py", ".ipynb")

    def do_GET(self) -> None:
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if (
            "gzip" not in self.headers.get("Accept-Encoding", "")
            or path.suffix not in self.GZIP
            or not path.is_file()
        ):
            return super().do_GET()
        body = gzip.compress(path.read_bytes(), mtime=0)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve ``folder`` on 127.0.0.1 (a free port) from a thread; yields the base URL."""
    handler = functools.partial(_Handler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def chromium_path() -> str:
    """``$VITBOOK_CHROMIUM``, else ``chromium`` on the PATH; FileNotFoundError if neither."""
    path = os.environ.get("VITBOOK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        raise FileNotFoundError(
            f"Chromium not found at {path}: `apt-get install chromium` (Debian's package; "
            f"Playwright must not download a browser)"
        )
    return path


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium (a Playwright ``Browser``), closed on exit.

    Playwright's sync API allows one of these per thread at a time: code that may run inside
    another (a test session holding its browser) should take that browser as an argument."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
