"""Connecting to a cluster: build an ``ApiClient`` from the environment, check that the server answers.

:func:`build_api_client` finds the configuration the way ``kubectl`` and
client-go do (an explicit kubeconfig, the in-cluster service account, the
default kubeconfig); :func:`check_server` proves the server is reachable and
accepts our credentials. Both fail with :class:`ConfigurationError`, whose
message is one line that says what to fix, so a misconfigured program ends
with a message instead of a traceback.

Threading: stateless functions; the ``ApiClient`` they return is the official
client's and is as thread-safe as it is (its connection pool is).
"""

from __future__ import annotations

import os
from typing import Any

from pyinformers.api._transport import release, send

__all__ = ["ConfigurationError", "build_api_client", "check_server"]


class ConfigurationError(Exception):
    """We cannot talk to a cluster: bad or missing config, unreachable or refusing server.

    The message is one line that says what to fix.
    """


def one_line(err: BaseException) -> str:
    """``err`` as one line of text (its type's name when it has no message). Internal helper."""
    text = " ".join(str(err).split())
    return text or type(err).__name__


def build_api_client(kubeconfig: str | os.PathLike | None = None) -> Any:
    """An official ``kubernetes.client.ApiClient`` for the environment we run in.

    In order: the ``kubeconfig`` file if given; the in-cluster service-account
    configuration when ``KUBERNETES_SERVICE_HOST`` is set (running in a Pod);
    else the default kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``).
    Raises :class:`ConfigurationError` with a one-line reason that names the
    file. The one loader of the library: the Manager and the
    SharedInformerFactory both use it.
    """
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    if kubeconfig is not None:
        path = os.path.expanduser(os.fspath(kubeconfig))
        if not os.path.isfile(path):
            raise ConfigurationError(f"kubeconfig {path!r} does not exist (or is not a file)")
        try:
            return k8s_config.new_client_from_config(config_file=path)
        except Exception as err:
            raise ConfigurationError(f"cannot use kubeconfig {path!r}: {one_line(err)}") from None
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            configuration = k8s_client.Configuration()
            k8s_config.load_incluster_config(client_configuration=configuration)
            return k8s_client.ApiClient(configuration)
        except Exception as err:
            raise ConfigurationError(
                f"cannot use the in-cluster configuration: {one_line(err)}"
            ) from None
    default = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    first = default.split(os.pathsep)[0]
    if not os.path.isfile(first):
        raise ConfigurationError(
            f"no Kubernetes configuration: {first} does not exist and this is not a Pod "
            "(pass a kubeconfig path, set KUBECONFIG, or run in a cluster)"
        )
    try:
        # The file(s) named now: the client's own default was read from the environment at its import.
        return k8s_config.new_client_from_config(config_file=default)
    except Exception as err:
        raise ConfigurationError(f"cannot use kubeconfig {first!r}: {one_line(err)}") from None


def check_server(api_client: Any, timeout: float = 10.0) -> None:
    """GET ``/version``: raise :class:`ConfigurationError` unless the server answers and accepts us.

    Any answer other than 401 counts as reachable (a 403 on ``/version`` still
    proves the server is there and knows who we are).
    """
    host = getattr(getattr(api_client, "configuration", None), "host", "?")
    try:
        response = send(api_client, "GET", "/version", timeout=timeout)
        status = response.status
        try:
            response.read()
        except Exception:
            pass
        release(response, reusable=True)
    except Exception as err:
        raise ConfigurationError(
            f"cannot reach the API server at {host}: {one_line(err)}"
        ) from None
    if status == 401:
        raise ConfigurationError(
            f"the API server at {host} rejected our credentials (401 Unauthorized)"
        )
