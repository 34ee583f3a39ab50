"""Running a sample operator's command line end to end (shared by the samples' tests)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from pyinformers.api._client import ResourceClient
from pyinformers.api._resource import Resource
from pyinformers.cache import SharedInformerFactory
from samples._support import Convergence, install_crd, load_yaml

REPOSITORY = Path(__file__).resolve().parents[2]


def run_operator_until_it_acts(
    k8s: Any,
    module: str,
    *,
    crd: Path,
    owner: Resource,
    example: Path,
    child: Resource,
    child_name: str,
    namespace: str,
) -> tuple[Any, int, str]:
    """Run ``python -m <module> --kubeconfig ... --install-crd`` against the test's server (``k8s`` fixture).

    Creates the example owner in ``namespace``, waits (up to 60 s, woken by
    the informer) for the child the operator makes, then sends SIGTERM.
    Returns the child (None if it never appeared), the process's exit code
    and its output.
    """
    kubeconfig = k8s.write_kubeconfig()
    client = k8s.api_client()
    factory = SharedInformerFactory(client, namespace=namespace, metrics_registry=False)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            module,
            "--kubeconfig",
            str(kubeconfig),
            "--install-crd",
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
            "--webhook-bind-address",
            "0",
        ],
        cwd=REPOSITORY,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        install_crd(client, crd)  # whoever comes first; both tolerate the other
        with Convergence([factory.informer(child)]) as convergence:
            factory.start()
            ResourceClient(client, owner).create(load_yaml(example), namespace=namespace)
            found, _ = convergence.wait(
                lambda: factory.lister(child).get(child_name, namespace=namespace), 60
            )
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=20)
        factory.stop(5)
    return found, process.returncode, output
