"""docs/controllers.rst's whole controller: every Deployment gets a ConfigMap recording its replicas.

Run it against a cluster (or ``python -m pyinformers.testing``) with
``python docs/examples/deployment_config.py``; test_deployment_config.py tests
it on the in-process API server.
"""

from pyinformers.api import meta
from pyinformers.controller import Controller, EnqueueForOwner, generation_changed
from pyinformers.manager import Manager
from pyinformers.resources import CONFIGMAPS, DEPLOYMENTS


class DeploymentConfig(Controller):
    """Every Deployment gets a ConfigMap <name>-config that records its replicas."""

    def __init__(self, factory):
        super().__init__("deployment-config", workers=4)
        self.deployments = factory.lister(DEPLOYMENTS)
        self.configmaps = factory.lister(CONFIGMAPS)
        # the writes this client makes (RBAC is generated from them: see deploying)
        self.configmap_client = factory.client(CONFIGMAPS, verbs=("create", "update"))
        # the owners: wake on spec changes only
        self.watch(factory.informer(DEPLOYMENTS), predicates=[generation_changed])
        # the children: any change wakes the owning Deployment
        self.watch(factory.informer(CONFIGMAPS), EnqueueForOwner("Deployment", owner_group="apps"))

    def reconcile(self, key):
        namespace, name = meta.split_key(key)
        owner = self.deployments.namespace(namespace).get(name)
        if owner is None:
            return None  # gone; the API server collects the children
        desired = {"replicas": str(owner["spec"].get("replicas", 1))}
        child = self.configmaps.namespace(namespace).get(f"{name}-config")
        if child is None:
            child = {
                "metadata": {"name": f"{name}-config", "namespace": namespace},
                "data": desired,
            }
            meta.set_controller_reference(owner, child)
            self.configmap_client.create(child)
        elif meta.is_controlled_by(child, owner) and child.get("data") != desired:
            fixed = meta.deep_copy(child)  # never mutate cached objects
            fixed["data"] = desired
            self.configmap_client.replace(fixed)
        return None


if __name__ == "__main__":
    manager = Manager()  # kubeconfig, in-cluster, or ~/.kube/config
    manager.add(DeploymentConfig(manager.factory))
    manager.run()  # until SIGTERM / SIGINT
