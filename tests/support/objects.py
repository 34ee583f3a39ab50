"""Objects tests write: small, valid, built the same way everywhere."""


def deployment(name: str, replicas: int = 1, namespace: str = "default") -> dict:
    """An nginx Deployment labelled ``app: name`` with ``replicas`` pods."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
