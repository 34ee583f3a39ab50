"""Finding the control-plane binaries (etcd, kube-apiserver, kube-controller-manager).

The directory layout is controller-runtime's ``KUBEBUILDER_ASSETS``: one
directory holding the executables under their usual names. Where to look, in
order:

1. an explicit directory (``ControlPlane(binary_dir=...)``, ``--binary-dir``);
2. the ``KUBEBUILDER_ASSETS`` environment variable (``setup-envtest use -p path``
   prints such a directory; its assets have no kube-controller-manager, so a
   control plane without one is what they support);
3. the cache ``make envtest`` builds into:
   ``$PYINFORMERS_ENVTEST_HOME`` (default ``$XDG_DATA_HOME/pyinformers-envtest``,
   i.e. ``~/.local/share/pyinformers-envtest``), ``k8s/<version>-<os>-<arch>/``,
   the highest version first;
4. setup-envtest's own store, ``~/.local/share/kubebuilder-envtest/k8s/<version>-<os>-<arch>/``.

The first candidate directory that holds every binary asked for wins. If none
does, :class:`MissingBinaries` says, in one line, where it looked and how to
get them.
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Binaries", "MissingBinaries", "find_binaries", "candidate_dirs", "envtest_home"]

ETCD = "etcd"
KUBE_APISERVER = "kube-apiserver"
KUBE_CONTROLLER_MANAGER = "kube-controller-manager"

HOW_TO_GET = "run `make envtest` (builds them from Go modules) or point KUBEBUILDER_ASSETS at setup-envtest assets"


class MissingBinaries(FileNotFoundError):
    """No candidate directory holds the control-plane binaries needed."""


@dataclass(frozen=True)
class Binaries:
    """Paths of the control-plane executables found in ``directory``."""

    directory: Path
    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path | None  # None when the directory has none (setup-envtest assets)


def envtest_home() -> Path:
    """The root of ``make envtest``'s per-user cache."""
    explicit = os.environ.get("PYINFORMERS_ENVTEST_HOME")
    if explicit:
        return Path(explicit)
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return Path(data) / "pyinformers-envtest"


def _platform_suffix() -> str:
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
    return f"-{platform.system().lower()}-{arch}"


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", name.split("-", 1)[0]))


def _versioned_dirs(root: Path) -> list[Path]:
    """``root/k8s/<version>-<os>-<arch>`` directories for this platform, newest first."""
    k8s = root / "k8s"
    try:
        entries = [p for p in k8s.iterdir() if p.is_dir() and p.name.endswith(_platform_suffix())]
    except OSError:
        return []
    return sorted(entries, key=lambda p: _version_key(p.name), reverse=True)


def candidate_dirs(binary_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Every directory searched, in order (see the module docstring)."""
    dirs: list[Path] = []
    if binary_dir:
        dirs.append(Path(binary_dir))
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets:
        dirs.append(Path(assets))
    dirs.extend(_versioned_dirs(envtest_home()))
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    dirs.extend(_versioned_dirs(Path(data) / "kubebuilder-envtest"))
    return dirs


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _describe(searched: Sequence[Path]) -> str:
    if searched:
        return ", ".join(str(d) for d in searched)
    return f"(nothing: no directory given, KUBEBUILDER_ASSETS unset, no {envtest_home() / 'k8s'}/<version>-*)"


def find_binaries(
    binary_dir: str | os.PathLike[str] | None = None,
    *,
    need: Iterable[str] = (ETCD, KUBE_APISERVER),
) -> Binaries:
    """The first candidate directory holding every binary in ``need``.

    An explicit ``binary_dir`` is the only place looked at when given (a
    caller who names a directory means that one). Raises
    :class:`MissingBinaries` with a one-line message otherwise.
    """
    needed = tuple(need)
    searched = [Path(binary_dir)] if binary_dir else candidate_dirs()
    for directory in searched:
        if all(_executable(directory / name) for name in needed):
            kcm = directory / KUBE_CONTROLLER_MANAGER
            return Binaries(
                directory=directory,
                etcd=directory / ETCD,
                kube_apiserver=directory / KUBE_APISERVER,
                kube_controller_manager=kcm if _executable(kcm) else None,
            )
    raise MissingBinaries(
        f"control-plane binaries ({', '.join(needed)}) not found in {_describe(searched)}; {HOW_TO_GET}"
    )
