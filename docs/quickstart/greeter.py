"""Your first controller (docs/quickstart.rst): every Greeting gets a ConfigMap with its message.

For each Greeting ``hello`` the controller keeps a ConfigMap ``hello-greeting``
whose ``data.message`` is the Greeting's ``spec.message``, owned by the
Greeting. Edit or delete the ConfigMap and it comes back; change the message
and the ConfigMap follows; delete the Greeting and the garbage collector
removes the ConfigMap.

    python greeter.py --kubeconfig kubeconfig.yaml   # a cluster, or `python -m pyinformers.testing`
    python greeter.py --demo                          # the in-process API server: create, break, heal, exit
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyinformers import (
    Controller,
    EnqueueForOwner,
    Manager,
    Resource,
    SharedInformerFactory,
    deep_copy,
    install_crd,
    set_controller_reference,
    split_key,
)
from pyinformers.manager import Operator
from pyinformers.resources import CONFIGMAPS

CRD = Path(__file__).with_name("crd.yaml")
GREETINGS = Resource.from_crd(CRD)  # quickstart.pyinformers.dev/v1 greetings, namespaced


#: The label selector of the ConfigMaps the greeter makes (and so caches).
MANAGED = "app.kubernetes.io/managed-by=greeter"


class Greeter(Controller):
    """Keeps a ``<name>-greeting`` ConfigMap next to every Greeting."""

    def __init__(self, factory: SharedInformerFactory) -> None:
        super().__init__("greeter")
        self.greetings = factory.lister(GREETINGS)  # the caches: read them in reconcile
        # Only the ConfigMaps this controller makes (labelled so): not every ConfigMap of the cluster.
        self.configmaps = factory.lister(CONFIGMAPS, label_selector=MANAGED)
        self.configmaps_client = factory.client(CONFIGMAPS, verbs=("create", "update"))
        # A Greeting event enqueues its key "namespace/name" ...
        self.watch(factory.informer(GREETINGS))
        # ... and so does an event on a ConfigMap a Greeting controls.
        self.watch(
            factory.informer(CONFIGMAPS, label_selector=MANAGED),
            EnqueueForOwner(GREETINGS.kind, owner_group=GREETINGS.group),
        )

    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        greeting = self.greetings.namespace(namespace).get(name)
        if greeting is None:
            return None  # deleted: the garbage collector removes its ConfigMap
        desired = configmap_for(greeting)
        current = self.configmaps.namespace(namespace).get(desired["metadata"]["name"])
        if current is None:
            self.configmaps_client.create(desired)
            self.log.info("created ConfigMap %s/%s", namespace, desired["metadata"]["name"])
        elif current.get("data") != desired["data"]:
            updated = deep_copy(current)  # never modify a cached object
            updated["data"] = desired["data"]
            self.configmaps_client.replace(updated)
            self.log.info("repaired ConfigMap %s/%s", namespace, desired["metadata"]["name"])
        return None  # done; raising would retry this key with backoff


def configmap_for(greeting: dict[str, Any]) -> dict[str, Any]:
    """The ConfigMap a Greeting should have, owned by it."""
    metadata = greeting["metadata"]
    configmap: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{metadata['name']}-greeting",
            "namespace": metadata["namespace"],
            "labels": {"app.kubernetes.io/managed-by": "greeter"},  # what MANAGED selects
        },
        "data": {"message": (greeting.get("spec") or {}).get("message", "")},
    }
    set_controller_reference(greeting, configmap)  # deleted with the Greeting
    return configmap


def demo(timeout: float = 15.0) -> int:
    """Run the controller on the in-process API server: create a Greeting, break its ConfigMap, see it heal."""
    import threading

    from pyinformers.testing import ApiServer, eventually

    with ApiServer() as server:
        manager = Manager(api_client=server.api_client(), metrics_port=0, health_port=0)
        install_crd(manager.api_client, CRD)
        manager.add(Greeter(manager.factory))
        runner = threading.Thread(target=manager.run, name="greeter-manager")
        runner.start()
        try:
            greetings, configmaps = (
                manager.factory.client(GREETINGS),
                manager.factory.client(CONFIGMAPS),
            )
            greetings.create(
                {
                    "metadata": {"name": "hello", "namespace": "default"},
                    "spec": {"message": "Hello, world"},
                }
            )
            made = eventually(
                lambda: _get(configmaps, "hello-greeting"), timeout, what="the ConfigMap"
            )
            print("created: ", made["data"])
            configmaps.delete("hello-greeting", "default")
            healed = eventually(
                lambda: (
                    (cm := _get(configmaps, "hello-greeting"))
                    and cm["metadata"]["uid"] != made["metadata"]["uid"]
                    and cm
                ),
                timeout,
                what="the ConfigMap to come back",
            )
            print("healed:  ", healed["data"])
        finally:
            manager.stop()
            runner.join(30)
    return 0


def _get(client: Any, name: str) -> Any:
    from pyinformers import NotFound

    try:
        return client.get(name, "default")
    except NotFound:
        return None


#: The program: the operator's flags (``--kubeconfig``, ``--leader-elect``,
#: probes and metrics; ``--help`` lists them), a Manager, SIGTERM handling.
OPERATOR = Operator(
    "greeter",
    build=lambda factory, recorder, options: Greeter(factory),
    prog="greeter.py",
    description="Your first controller (--demo: run it on the in-process API server, show it heal).",
    setup=lambda manager, options: install_crd(manager.api_client, CRD),
)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--demo"]:
        return demo()
    return OPERATOR.main(args)  # until Ctrl-C / SIGTERM


if __name__ == "__main__":
    sys.exit(main())
