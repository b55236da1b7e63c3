"""Run the reference services as separate local processes (for examples, tests and benchmarks)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from privsum._validation import invalid

__all__ = ["LocalService", "local_deployment", "start_service"]

_READY = "listening on "


class LocalService:
    """A service process started by `start_service`: its URL, its process and its last output lines.

    A thread reads the process's output for as long as it runs (a service that logs many warnings,
    e.g. for malformed requests, would otherwise block once the pipe is full); `output` keeps the
    last 200 lines.
    """

    def __init__(self, role: str, process: subprocess.Popen, url: str) -> None:
        self.role, self.process, self.url = role, process, url
        self.lines: deque[str] = deque(maxlen=200)
        self._reader = threading.Thread(target=self._drain, name=f"privsum-{role}-output", daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        """The last lines the process printed (warnings of the service, a traceback if it failed)."""
        return "".join(self.lines)

    def peak_memory_bytes(self) -> int | None:
        """The process's peak resident memory (Linux ``VmHWM``), or None where unavailable."""
        try:
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate the process (and kill it if it does not stop within ``timeout`` seconds)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)


def start_service(role: str, protocol_file: str | Path, *, extra: list[str] | None = None, timeout: float = 60.0,
                  host: str = "127.0.0.1") -> LocalService:
    """Start ``python -m privsum <role> --protocol-file F --port 0`` and wait for its ``listening on`` line."""
    if role not in ("shuffler", "analyzer"):
        raise invalid("role", "start_service", "'shuffler' or 'analyzer'", role)
    command = [sys.executable, "-m", "privsum", role, "--protocol-file", str(protocol_file), "--host", host, "--port", "0"]
    environment = os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, [_source_root(), os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen(command + (extra or []), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=environment)
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    lines = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if _READY in line:
            return LocalService(role, process, line.split(_READY, 1)[1].strip())
    process.kill()
    raise RuntimeError(f"the {role} did not start within {timeout} s: {''.join(lines)[-2000:]}")


@contextmanager
def local_deployment(protocol_file: str | Path, *, timeout: float = 60.0,
                     extra: list[str] | None = None) -> Iterator[tuple[LocalService, LocalService]]:
    """An analyzer and a shuffler (forwarding to it) as two processes on 127.0.0.1; stopped on exit.

    ``extra`` options go to both (e.g. ``["--operator-token-file", F]``).
    """
    analyzer = start_service("analyzer", protocol_file, extra=extra, timeout=timeout)
    try:
        shuffler = start_service("shuffler", protocol_file, extra=["--analyzer-url", analyzer.url, *(extra or [])],
                                 timeout=timeout)
        try:
            yield shuffler, analyzer
        finally:
            shuffler.stop()
    finally:
        analyzer.stop()


def _source_root() -> str:
    """The directory holding this privsum package (so that child processes import the same code)."""
    return str(Path(__file__).resolve().parents[2])
