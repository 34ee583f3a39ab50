"""The pytest plugin, as a user's test suite loads it (run in a nested pytest session)."""

from __future__ import annotations

pytest_plugins = ["pytester"]


def test_the_plugin_provides_fixtures_and_the_apiserver_marker(pytester):
    pytester.makeconftest('pytest_plugins = ["pyinformers.testing.pytest_plugin"]\n')
    pytester.makepyfile(
        """
        import os

        import pytest
        from kubernetes import client, config


        def test_fixtures_talk_to_one_server(api_server, kubeconfig, api_client):
            assert os.path.exists(kubeconfig)
            other = config.new_client_from_config(config_file=kubeconfig)
            client.CoreV1Api(other).create_namespaced_config_map("default", {"metadata": {"name": "x"}})
            other.close()
            names = [c.metadata.name for c in client.CoreV1Api(api_client).list_namespaced_config_map("default").items]
            assert names == ["x"]
            assert [o["metadata"]["name"] for o in api_server.objects("configmaps", namespace="default")] == ["x"]


        def test_each_test_gets_a_fresh_server(api_server):
            assert api_server.objects("configmaps") == []


        @pytest.mark.apiserver(token="t0ken", bookmark_interval=0.5)
        def test_the_marker_passes_options(api_server, api_client):
            assert api_server.token == "t0ken"
            client.CoreV1Api(api_client).list_namespace()


        def test_the_factory_starts_servers_with_options(api_server_factory):
            server = api_server_factory(simulate_workloads=True)
            assert server.running
        """
    )
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=4)
