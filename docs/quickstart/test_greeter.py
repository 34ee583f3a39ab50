"""Testing the first controller: the in-process API server (the api_client fixture) and eventually()."""

from greeter import CRD, GREETINGS, Greeter

from pyinformers import SharedInformerFactory, install_crd
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import eventually


def test_a_greeting_gets_its_configmap_back_after_a_delete(api_client):
    install_crd(api_client, CRD)
    factory = SharedInformerFactory(api_client)
    controller = Greeter(factory)
    factory.start()
    controller.start()  # waits for the caches, then starts the workers
    try:
        factory.client(GREETINGS).create(
            {"metadata": {"name": "hi", "namespace": "default"}, "spec": {"message": "hi there"}}
        )
        cached = controller.configmaps.namespace("default")
        first = eventually(lambda: cached.get("hi-greeting"), what="the ConfigMap")
        assert first["data"] == {"message": "hi there"}

        factory.client(CONFIGMAPS).delete("hi-greeting", "default")
        eventually(
            lambda: (
                (cm := cached.get("hi-greeting"))
                and cm["metadata"]["uid"] != first["metadata"]["uid"]
            ),
            what="the ConfigMap to come back",
        )
    finally:
        controller.stop(5)
        factory.stop(5)
