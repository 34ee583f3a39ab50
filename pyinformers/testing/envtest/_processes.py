"""Supervising the child processes of a test control plane.

A :class:`Component` is one started executable (etcd, kube-apiserver, ...)
whose stdout and stderr go to a log file. It knows only its own process: it
never signals anything it did not start, and :meth:`Component.stop` ends it
(SIGTERM, then SIGKILL after a grace period) and reaps it.

:class:`ComponentExited` is how a crash surfaces: the component's name, its
exit status and the tail of its log.

Thread-safety: ``check``/``alive``/``log_tail`` may be called from any thread;
``start``/``stop`` from the owner only.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["Component", "ComponentExited", "log_tail"]

_TAIL_LINES = 25


def log_tail(path: Path, lines: int = _TAIL_LINES) -> str:
    """The last ``lines`` lines of the file at ``path`` ("" if unreadable)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])


class ComponentExited(RuntimeError):
    """A control-plane component is not running when it should be."""

    def __init__(self, name: str, returncode: int | None, log: Path) -> None:
        self.name = name
        self.returncode = returncode
        self.log = log
        tail = log_tail(log)
        super().__init__(
            f"{name} exited with status {returncode} (log: {log}); last lines:\n{tail}"
        )


class Component:
    """One supervised executable with its log file."""

    def __init__(
        self, name: str, argv: Sequence[str], log: Path, *, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = log
        self._env = env
        self._proc: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:
        pid = self._proc.pid if self._proc is not None else None
        return f"<Component {self.name} pid={pid} alive={self.alive}>"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            raise RuntimeError(f"{self.name} is already running")
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            # A session of its own: a Ctrl-C in the terminal reaches the test run,
            # which stops us in order, rather than killing etcd under kube-apiserver.
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self._env,
                start_new_session=True,
            )

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc is not None else None

    def check(self) -> None:
        """Raise :class:`ComponentExited` unless the process is running."""
        if not self.alive:
            raise ComponentExited(self.name, self.returncode, self.log)

    def log_tail(self, lines: int = _TAIL_LINES) -> str:
        return log_tail(self.log, lines)

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, wait up to ``timeout`` s, then SIGKILL; reap. Returns the exit status. Idempotent."""
        proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def rss_bytes(self) -> int | None:
        """Resident memory of the process (Linux ``/proc``), or None."""
        if not self.alive:
            return None
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None
