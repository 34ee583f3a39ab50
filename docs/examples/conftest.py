# The in-process API server's fixtures (api_server, kubeconfig, api_client): one line in your conftest.py.
pytest_plugins = ["pyinformers.testing.pytest_plugin"]
