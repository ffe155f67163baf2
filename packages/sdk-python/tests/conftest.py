"""Real engines for the tests: the repository's ``svc`` CLI (``bin/run.js --json``) started in a
temporary project whose listener and HTTP ports are 0 (never the defaults), its ``engine_ready``
line read from stdout. ``SVC_TEST_NODE`` names the Node binary (default: the repository's
``node_modules/.bin/node``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
NODE = os.environ.get("SVC_TEST_NODE") or str(ROOT / "node_modules" / ".bin" / "node")
SVC_BIN = str(ROOT / "bin" / "run.js")

QUEUE_YAML = """  - name: queue
    config:
      queue_configs:
        jobs:
          max_retries: 2
          backoff_ms: 50
"""


def _config(port: int = 0) -> str:
    return (
        "workers:\n"
        f"  - name: svc-worker-manager\n    config:\n      port: {port}\n"
        "  - name: svc-http\n    config:\n      port: 0\n"
        "  - name: svc-stream\n    config:\n      port: 0\n" + QUEUE_YAML
    )


class Engine:
    """One ``svc`` process; :meth:`restart` starts it again on the same worker port."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.http_url = ""
        self.output: list[str] = []

    def start(self, port: int = 0) -> Engine:
        (self.dir / "config.yaml").write_text(_config(port))
        env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
        self.proc = subprocess.Popen(
            [NODE, SVC_BIN, "--json"], cwd=self.dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        ready: dict[str, Any] = {}
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 60
        for line in self.proc.stdout:
            self.output.append(line)
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("event") == "engine_ready":
                ready = event
                break
            if time.monotonic() > deadline:
                break
        if not ready:
            raise RuntimeError("svc did not become ready:\n" + "".join(self.output))
        self.url = ready["engine_url"]
        self.http_url = ready["http_url"]
        stream = self.proc.stdout
        threading.Thread(target=lambda: [self.output.append(line) for line in stream], daemon=True).start()
        return self

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].strip("/"))

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    directory = Path(tempfile.mkdtemp(prefix="svc-py-test-"))
    e = Engine(directory).start()
    try:
        yield e
    finally:
        e.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture()
def own_engine() -> Iterator[Engine]:
    directory = Path(tempfile.mkdtemp(prefix="svc-py-test-"))
    e = Engine(directory).start()
    try:
        yield e
    finally:
        e.stop()
        shutil.rmtree(directory, ignore_errors=True)


def eventually(check: Callable[[], Any], timeout_s: float = 20.0, interval_s: float = 0.05) -> Any:
    """Polls ``check`` until it returns a truthy value (returned) or ``timeout_s`` passes (AssertionError)."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except AssertionError:
            pass
        time.sleep(interval_s)
    raise AssertionError(f"condition not met within {timeout_s}s (last: {last!r})")
