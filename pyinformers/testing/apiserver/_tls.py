"""A self-signed certificate for the in-process API server, made with the ``openssl`` command.

``kubectl`` (client-go) sends a bearer token only over TLS, so a server
started with a token serves HTTPS when it can: :func:`self_signed_certificate`
writes a certificate for ``127.0.0.1`` and ``localhost`` (its own CA, so a
kubeconfig can trust exactly it) and its key. Without ``openssl`` on the
``PATH`` it raises :class:`TlsUnavailable`, and the server says on start how to
connect instead.

Thread-safe (each call writes its own files).
"""

from __future__ import annotations

import os
import shutil
import subprocess

__all__ = ["TlsUnavailable", "self_signed_certificate"]


class TlsUnavailable(RuntimeError):
    """No certificate could be made (no ``openssl`` command, or it failed)."""


def self_signed_certificate(
    directory: str | os.PathLike[str], *, days: int = 30
) -> tuple[str, str]:
    """Write ``tls.crt`` and ``tls.key`` (mode 0600) into ``directory``; returns their paths."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise TlsUnavailable("the openssl command is not on PATH")
    directory = os.fspath(directory)
    cert, key = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
    command = [
        openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", str(days),
        "-keyout", key, "-out", cert, "-subj", "/CN=pyinformers-testing",
        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "-addext", "basicConstraints=critical,CA:TRUE",
    ]  # fmt: skip
    try:
        subprocess.run(command, check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise TlsUnavailable(f"openssl could not make a certificate: {exc}") from None
    os.chmod(key, 0o600)
    return cert, key
