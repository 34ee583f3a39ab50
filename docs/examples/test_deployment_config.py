"""docs/testing.rst's example: DeploymentConfig tested end to end on the in-process API server."""

from deployment_config import DeploymentConfig  # your Controller subclass

from pyinformers.cache import SharedInformerFactory
from pyinformers.resources import CONFIGMAPS, DEPLOYMENTS
from pyinformers.testing import eventually


def test_the_child_configmap_follows_its_deployment(api_server, api_client):
    factory = SharedInformerFactory(api_client)
    controller = DeploymentConfig(factory)
    factory.start()
    controller.start()
    try:
        deployments, configmaps = factory.client(DEPLOYMENTS), factory.client(CONFIGMAPS)
        deployments.create(
            {
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                    },
                },
            }
        )
        child = eventually(
            lambda: api_server.objects("configmaps", namespace="default"), what="the child"
        )
        assert child[0]["data"] == {"replicas": "2"}

        configmaps.patch(
            "web-config", {"data": {"replicas": "5"}}, namespace="default"
        )  # drift: put back
        eventually(
            lambda: configmaps.get("web-config", "default")["data"] == {"replicas": "2"},
            what="the repair",
        )

        configmaps.delete("web-config", "default")  # deleted: recreated
        eventually(
            lambda: api_server.objects("configmaps", namespace="default"), what="the child again"
        )

        deployments.delete("web", "default")  # the server's garbage collector takes the child
        eventually(
            lambda: not api_server.objects("configmaps", namespace="default"), what="the collection"
        )
    finally:
        controller.stop(timeout=5)
        factory.stop()
