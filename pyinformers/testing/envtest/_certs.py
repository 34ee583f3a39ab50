"""Throwaway key material for a test control plane, made with the ``openssl`` CLI.

The ``kubernetes`` client does not depend on the ``cryptography`` package, so
rather than add a dependency for tests, the keys and certificates come from
``openssl`` (present wherever Kubernetes binaries run). Everything written
here is for a loopback-only control plane that lives as long as a test run.

* a CA and a serving certificate signed by it, for ``127.0.0.1`` and
  ``localhost`` (the client verifies the server against the CA);
* an RSA key pair that kube-apiserver signs ServiceAccount tokens with
  (``--service-account-signing-key-file``) and verifies them with
  (``--service-account-key-file``).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ServingCerts", "make_serving_certs", "make_service_account_keys", "OpenSSLMissing"]


class OpenSSLMissing(FileNotFoundError):
    """The ``openssl`` command is not on PATH."""


@dataclass(frozen=True)
class ServingCerts:
    ca_cert: Path
    cert: Path
    key: Path


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise OpenSSLMissing(
            "the `openssl` command is needed to make the test control plane's certificates"
        )
    done = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stderr.strip()}")


def make_serving_certs(
    directory: Path, *, ips: Sequence[str] = ("127.0.0.1",), dns: Sequence[str] = ("localhost",)
) -> ServingCerts:
    """Write ``ca.crt``/``ca.key`` and ``serving.crt``/``serving.key`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "3650",
        "-subj",
        "/CN=pyinformers-test-ca",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
        cwd=directory,
    )
    _openssl(
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "serving.key",
        "-out",
        "serving.csr",
        "-subj",
        "/CN=kube-apiserver",
        cwd=directory,
    )
    sans = ",".join([*(f"IP:{ip}" for ip in ips), *(f"DNS:{name}" for name in dns)])
    (directory / "serving.ext").write_text(
        f"subjectAltName={sans}\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        "serving.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "serving.crt",
        "-days",
        "3650",
        "-extfile",
        "serving.ext",
        cwd=directory,
    )
    return ServingCerts(
        ca_cert=directory / "ca.crt", cert=directory / "serving.crt", key=directory / "serving.key"
    )


def make_service_account_keys(directory: Path) -> tuple[Path, Path]:
    """Write an RSA key pair ``sa.key``/``sa.pub``; returns (private, public)."""
    directory.mkdir(parents=True, exist_ok=True)
    _openssl(
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
        "-out",
        "sa.key",
        cwd=directory,
    )
    _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=directory)
    return directory / "sa.key", directory / "sa.pub"
