"""A small sample controller: a ConfigMap summary next to every Deployment (the quickstart is docs/quickstart/greeter.py).

For each Deployment ``web`` the controller keeps a ConfigMap ``web-summary``
holding the Deployment's image and replicas, owned by the Deployment. Edit
or delete the ConfigMap and it comes back; scale the Deployment and the
summary follows; delete the Deployment and the garbage collector removes
the summary.

Run it:

* ``python -m samples.quickstart`` -- on the in-process API server: creates
  a Deployment, shows the summary appear, deletes the summary, shows it
  come back, and exits;
* ``python -m samples.quickstart --kubeconfig ~/.kube/config`` -- against a
  cluster, until Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Optional, Sequence

from pyinformers.api import meta
from pyinformers.controller import Controller, EnqueueForOwner
from pyinformers.resources import CONFIGMAPS, DEPLOYMENTS


class DeploymentSummary(Controller):
    """Keeps ``<deployment>-summary`` ConfigMaps in step with their Deployments."""

    def __init__(self, factory: Any) -> None:
        super().__init__("deployment-summary", workers=2)
        self.deployments = factory.lister(DEPLOYMENTS)
        self.configmaps = factory.lister(CONFIGMAPS)
        self.configmaps_client = factory.client(CONFIGMAPS)
        # A Deployment event enqueues the Deployment's key ("namespace/name") ...
        self.watch(factory.informer(DEPLOYMENTS))
        # ... and so does an event on a ConfigMap the Deployment controls.
        self.watch(factory.informer(CONFIGMAPS), EnqueueForOwner("Deployment", owner_group="apps"))

    def reconcile(self, key: str) -> None:
        namespace, name = meta.split_key(key)
        deployment = self.deployments.namespace(namespace).get(name)  # from the cache
        if deployment is None:
            return None  # deleted: the garbage collector removes its summary
        desired = summary_for(deployment)
        current = self.configmaps.namespace(namespace).get(desired["metadata"]["name"])
        if current is None:
            self.configmaps_client.create(desired)
        elif current.get("data") != desired["data"]:
            updated = meta.deep_copy(current)  # never modify a cached object
            updated["data"] = desired["data"]
            self.configmaps_client.replace(updated)
        return None  # done; raising would retry with backoff


def summary_for(deployment: dict) -> dict:
    """The ConfigMap a Deployment should have."""
    spec = deployment.get("spec") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{meta.name(deployment)}-summary", "namespace": meta.namespace(deployment)},
        "data": {
            "images": ",".join(c.get("image", "") for c in containers),
            "replicas": str(spec.get("replicas", 1)),
        },
    }
    meta.set_controller_reference(deployment, configmap)  # owned: GC'd with the Deployment
    return configmap


def run_in_process(timeout: float = 10.0) -> int:
    """Run the controller against an in-process API server, show it working, and stop."""
    from pyinformers.api.client import ResourceClient
    from pyinformers.cache import SharedInformerFactory
    from pyinformers.testing import ApiServer
    from samples._support import Convergence

    with ApiServer() as server:
        factory = SharedInformerFactory(server.api_client(), metrics_registry=False)
        controller = DeploymentSummary(factory)
        deployments = ResourceClient(factory.api_client, DEPLOYMENTS)
        with Convergence([factory.informer(CONFIGMAPS)]) as convergence:
            factory.start()
            controller.start()
            try:
                deployments.create({
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {
                        "replicas": 2,
                        "selector": {"matchLabels": {"app": "web"}},
                        "template": {
                            "metadata": {"labels": {"app": "web"}},
                            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
                        },
                    },
                })
                summary, _ = convergence.wait(lambda: controller.configmaps.namespace("default").get("web-summary"), timeout)
                if not summary:
                    print("the summary ConfigMap did not appear", file=sys.stderr)
                    return 1
                print("created:  ", summary["data"])
                factory.client(CONFIGMAPS).delete("web-summary", "default")
                uid = meta.uid(summary)
                back, _ = convergence.wait(
                    lambda: (cm := controller.configmaps.namespace("default").get("web-summary")) and meta.uid(cm) != uid and cm,
                    timeout,
                )
                if not back:
                    print("the summary ConfigMap did not come back", file=sys.stderr)
                    return 1
                print("recreated:", back["data"])
            finally:
                controller.stop(5.0)
                factory.shutdown(5.0)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m samples.quickstart", description="Your first controller.")
    parser.add_argument("--kubeconfig", help="run against this cluster (until Ctrl-C)")
    args = parser.parse_args(argv)
    if not args.kubeconfig:
        return run_in_process()
    from pyinformers.controller import Manager

    manager = Manager(args.kubeconfig)
    manager.add(DeploymentSummary(manager.factory))
    manager.run()  # until SIGINT / SIGTERM
    return 0


if __name__ == "__main__":
    sys.exit(main())
