"""The operator command line (pyinformers.manager._operator): flags, env vars, --help, logging formats."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from pyinformers.manager._operator import (
    FLAGS,
    JsonFormatter,
    Operator,
    configure_logging,
    parse_bind_address,
)
from pyinformers.manager._sharding import ShardingConfig

REPOSITORY = Path(__file__).resolve().parents[2]


def _operator():
    return Operator("demo-op", build=lambda factory, recorder, options: [], event_component="demo")


def test_defaults_are_the_documented_ones():
    options = _operator().parse([], environ={})
    assert options.metrics_bind_address == ("0.0.0.0", 8443)
    assert options.health_probe_bind_address == ("0.0.0.0", 8081)
    assert options.metrics_secure is True and options.leader_elect is False
    assert options.leader_election_id == "demo-op" and options.leader_election_namespace is None
    assert (options.log_level, options.log_format, options.workers) == ("info", "text", 2)
    assert (options.kube_api_qps, options.kube_api_burst) == (0.0, 0)  # no client-side throttle


def test_every_flag_reads_its_env_var_and_the_command_line_wins():
    environ = {
        "PYINFORMERS_KUBECONFIG": "/k",
        "PYINFORMERS_NAMESPACE": "team",
        "PYINFORMERS_LEADER_ELECT": "true",
        "PYINFORMERS_LEADER_ELECTION_ID": "lease",
        "PYINFORMERS_LEADER_ELECTION_NAMESPACE": "ops",
        "PYINFORMERS_METRICS_BIND_ADDRESS": "127.0.0.1:9000",
        "PYINFORMERS_METRICS_SECURE": "false",
        "PYINFORMERS_HEALTH_PROBE_BIND_ADDRESS": "0",
        "PYINFORMERS_WORKERS": "4",
        "PYINFORMERS_SHUTDOWN_TIMEOUT": "7.5",
        "PYINFORMERS_LOG_LEVEL": "DEBUG",
        "PYINFORMERS_LOG_FORMAT": "json",
        "PYINFORMERS_METRICS_CERT_FILE": "",
        "PYINFORMERS_METRICS_KEY_FILE": "",
        "PYINFORMERS_SHARDS": "0",
        "PYINFORMERS_SHARDING_NAMESPACE": "shards",
        "PYINFORMERS_SHARD_CACHES": "false",
        "PYINFORMERS_KUBE_API_QPS": "20",
        "PYINFORMERS_KUBE_API_BURST": "30",
        "PYINFORMERS_WEBHOOK_BIND_ADDRESS": "127.0.0.1:9443",
        "PYINFORMERS_WEBHOOK_CERT_FILE": "/w.crt",
        "PYINFORMERS_WEBHOOK_KEY_FILE": "/w.key",
    }
    assert {f.env for f in FLAGS} == set(environ)
    o = _operator().parse([], environ=environ)
    assert (
        o.kubeconfig,
        o.namespace,
        o.leader_elect,
        o.leader_election_id,
        o.leader_election_namespace,
    ) == ("/k", "team", True, "lease", "ops")
    assert o.metrics_bind_address == ("127.0.0.1", 9000) and o.metrics_secure is False
    assert o.health_probe_bind_address is None and (o.shards, o.sharding_namespace) == (0, "shards")
    assert o.shard_caches is False
    assert (o.workers, o.shutdown_timeout, o.log_level, o.log_format) == (4, 7.5, "debug", "json")
    assert (o.kube_api_qps, o.kube_api_burst) == (20.0, 30)
    webhook = (o.webhook_bind_address, o.webhook_cert_file, o.webhook_key_file)
    assert webhook == (("127.0.0.1", 9443), "/w.crt", "/w.key")
    o = _operator().parse(
        ["--namespace", "other", "--leader-elect=false", "--log-format", "text"], environ=environ
    )
    assert (o.namespace, o.leader_elect, o.log_format) == ("other", False, "text")
    assert _operator().parse(["--leader-elect"], environ={}).leader_elect is True


@pytest.mark.parametrize(
    "env, value, message",
    [
        ("PYINFORMERS_LEADER_ELECT", "maybe", "expected true or false"),
        ("PYINFORMERS_METRICS_BIND_ADDRESS", "8080", "is not host:port"),
        ("PYINFORMERS_LOG_FORMAT", "xml", "must be one of text, json"),
    ],
)
def test_a_bad_env_var_ends_with_one_line_naming_it(env, value, message):
    with pytest.raises(SystemExit, match=f"\\${env}.*{message}"):
        _operator().parse([], environ={env: value})


def test_bind_addresses():
    assert parse_bind_address(":8080") == ("0.0.0.0", 8080)
    assert parse_bind_address("127.0.0.1:1") == ("127.0.0.1", 1)
    assert parse_bind_address("[::1]:8443") == ("::1", 8443)
    assert parse_bind_address("0") is None
    for bad in ("8080", "host:", "host:99999", ":x"):
        with pytest.raises(ValueError, match="host:port"):
            parse_bind_address(bad)


def test_flags_map_onto_the_manager():
    operator = _operator()
    kwargs = operator.manager_options(
        operator.parse(
            [
                "--metrics-bind-address=127.0.0.1:9443",
                "--health-probe-bind-address=:9081",
                "--shutdown-timeout=12",
                "--metrics-cert-file=/c",
                "--metrics-key-file=/k",
            ],
            environ={},
        )
    )
    assert kwargs["metrics_port"] == 9443 and kwargs["metrics_host"] == "127.0.0.1"
    assert kwargs["health_port"] == 9081 and kwargs["health_host"] == "0.0.0.0"
    assert kwargs["metrics_auth"] is True and kwargs["metrics_tls"].cert_file == "/c"
    assert kwargs["shutdown_timeout"] == 12
    off = operator.manager_options(operator.parse(["--metrics-bind-address=0"], environ={}))
    assert off["metrics_port"] == 0 and off["metrics_auth"] is False


def test_the_cache_transform_is_the_managers_default_unless_the_operator_names_one():
    from pyinformers.cache import chain, drop_managed_fields, share_strings

    options = _operator().parse([], environ={})
    assert _operator().manager_options(options)["cache_transform"] is drop_managed_fields
    sharing = chain(drop_managed_fields, share_strings)
    operator = Operator("demo-op", build=lambda *_: [], cache_transform=sharing)
    assert operator.manager_options(options)["cache_transform"] is sharing
    assert (
        Operator("demo-op", build=lambda *_: [], cache_transform=None).manager_options(options)[
            "cache_transform"
        ]
        is None
    )
    with pytest.raises(TypeError, match="cache_transform must be callable"):
        Operator("demo-op", build=lambda *_: [], cache_transform="share")


def test_cert_and_key_go_together():
    with pytest.raises(SystemExit):
        _operator().parse(["--metrics-cert-file=/c"], environ={})


def test_json_logs_are_one_object_a_line_with_the_error_inside():
    stream = io.StringIO()
    handler = configure_logging("debug", "json", stream=stream)
    try:
        logging.getLogger("pyinformers.test").info("hello %s", "world")
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            logging.getLogger("pyinformers.test").exception("failed")
    finally:
        logging.getLogger().removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    first, second = map(json.loads, lines)
    assert (
        first["msg"] == "hello world"
        and first["level"] == "info"
        and first["logger"] == "pyinformers.test"
    )
    assert second["level"] == "error" and "RuntimeError: boom" in second["error"]
    assert isinstance(JsonFormatter().format(logging.makeLogRecord({"msg": "x"})), str)


@pytest.mark.parametrize("module", ["samples.sample_controller", "samples.mydeployment"])
def test_the_samples_help_documents_every_flag_and_its_env_var(module):
    out = subprocess.run(
        [sys.executable, "-m", module, "--help"],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for flag in FLAGS:
        assert f"--{flag.name}" in out and f"${flag.env}" in out, flag.name
    assert "--install-crd" in out


def test_leader_election_flags_map_onto_the_managers_leader_election():
    operator = _operator()
    kwargs = operator.manager_options(
        operator.parse(["--leader-elect", "--leader-election-namespace=ops"], environ={})
    )
    election = kwargs["leader_election"]
    assert (election.name, election.namespace) == ("demo-op", "ops")
    assert "leader_election" not in operator.manager_options(operator.parse([], environ={}))


def test_leader_election_outside_a_pod_uses_the_default_namespace_as_help_says():
    operator = _operator()
    kwargs = operator.manager_options(operator.parse(["--leader-elect"], environ={}))
    assert kwargs["leader_election"].namespace == "default"


def test_shards_flag_maps_onto_the_managers_sharding_and_excludes_leader_election(capsys):
    operator = _operator()
    kwargs = operator.manager_options(
        operator.parse(["--shards=6", "--sharding-namespace=ops"], environ={})
    )
    assert kwargs["sharding"] == ShardingConfig("demo-op", shards=6, namespace="ops")
    assert "leader_election" not in kwargs
    from_env = operator.parse([], environ={"PYINFORMERS_SHARDS": "4"})
    assert operator.manager_options(from_env)["sharding"].shards == 4
    assert "sharding" not in operator.manager_options(operator.parse([], environ={}))
    with pytest.raises(SystemExit):
        operator.parse(["--shards=2", "--leader-elect"], environ={})
    assert "exclude each other" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        operator.parse(["--shards=-1"], environ={})
    assert "shards >= 0" in capsys.readouterr().err
    cached = operator.parse(["--shards=6", "--shard-caches"], environ={})
    assert operator.manager_options(cached)["sharding"].shard_caches
    assert not kwargs["sharding"].shard_caches
    with pytest.raises(SystemExit):
        operator.parse(["--shard-caches"], environ={})
    assert "--shard-caches needs --shards" in capsys.readouterr().err


def test_a_configuration_problem_ends_main_with_one_line(tmp_path):
    missing = tmp_path / "nope"
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        with pytest.raises(SystemExit) as caught:
            _operator().main(
                [
                    "--kubeconfig",
                    str(missing),
                    "--metrics-bind-address=0",
                    "--health-probe-bind-address=0",
                ]
            )
    finally:  # main() configured the root logger: put pytest's back
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
    assert str(caught.value).startswith("pyinformers: ") and str(missing) in str(caught.value)
    assert "\n" not in str(caught.value)
