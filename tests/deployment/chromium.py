"""Debian's headless Chromium driven over the DevTools protocol, for the UI test: open a page,
wait until it shows given text, click, read the rendered text, save a screenshot and the DOM.

One browser serves every page (a cold `chromium --screenshot` costs seconds per page), and a
page is read once it shows what the test waits for, not after a fixed time budget."""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from websockets.sync.client import connect  # comes with dagster-webserver (uvicorn[standard])

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
]
CLICK = """((label, row) => {
  const scope = row === null ? [document]
    : [...document.querySelectorAll('tr')].filter(r => r.innerText.trim().startsWith(row));
  const found = scope.flatMap(s => [...s.querySelectorAll('a, button')])
    .find(e => e.innerText.trim() === label);
  if (found) found.click();
  return Boolean(found);
})"""


class Chromium:
    """One headless browser tab. `open` and `wait` return the page's rendered text."""

    def __init__(self, profile: Path, width: int = 1400, height: int = 1000) -> None:
        window = [f"--user-data-dir={profile}", f"--window-size={width},{height}"]
        self.process = subprocess.Popen(
            [CHROMIUM, *FLAGS, *window, "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            port = _devtools_port(profile / "DevToolsActivePort", self.process)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                page = next(t for t in json.loads(r.read()) if t["type"] == "page")
            self.socket = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
        except BaseException:
            self._kill()
            raise
        self.ids = itertools.count(1)

    def call(self, method: str, **params) -> dict:
        message_id = next(self.ids)
        self.socket.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:  # no domain is enabled, so little but the answer arrives
            message = json.loads(self.socket.recv(timeout=60))
            if message.get("id") == message_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    def text(self) -> str:
        return self.evaluate("document.body ? document.body.innerText : ''") or ""

    def open(self, url: str, *shows: str, hides: tuple[str, ...] = (), timeout: float = 90) -> str:
        self.call("Page.navigate", url=url)
        return self.wait(*shows, hides=hides, timeout=timeout)

    def wait(self, *shows: str, hides: tuple[str, ...] = (), timeout: float = 90) -> str:
        """The page's text once it shows every one of `shows` and none of `hides`."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            if all(s in text for s in shows) and not any(h in text for h in hides):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"the page never showed {shows} without {hides}:\n{text}")
            time.sleep(0.3)

    def wait_for(self, script: str, timeout: float = 60):
        """The value of a JavaScript expression once it is truthy."""
        deadline = time.monotonic() + timeout
        while not (value := self.evaluate(script)):
            if time.monotonic() > deadline:
                raise AssertionError(f"never true: {script}\n{self.text()}")
            time.sleep(0.3)
        return value

    def cell(self, row: str) -> str | None:
        """The text beside `row` in a two-column table (a metadata entry's value)."""
        script = f"""(() => {{
          const row = [...document.querySelectorAll('tr')]
            .find(r => r.cells.length > 1 && r.cells[0].innerText.trim() === {json.dumps(row)});
          return row ? row.cells[1].innerText.trim() : null;
        }})()"""
        return self.evaluate(script)

    def click(self, label: str, row: str | None = None) -> None:
        """Click the link or button labelled `label` (in the table row starting with `row`)."""
        clicked = self.evaluate(f"{CLICK}({json.dumps(label)}, {json.dumps(row)})")
        assert clicked, f"no {label!r} to click" + (f" in row {row!r}" if row else "")

    def save(self, png: Path) -> None:
        """A screenshot, and beside it the DOM it shows (`.html`)."""
        shot = self.call("Page.captureScreenshot", format="png")["data"]
        png.write_bytes(base64.b64decode(shot))
        png.with_suffix(".html").write_text(self.evaluate("document.documentElement.outerHTML"))

    def close(self) -> None:
        try:
            self.socket.close()
        finally:
            self._kill()

    def _kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=30)


def _devtools_port(active: Path, process: subprocess.Popen, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while not (active.is_file() and active.read_text().strip()):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"chromium did not open its DevTools port ({process.returncode})")
        time.sleep(0.1)
    return int(active.read_text().split()[0])
