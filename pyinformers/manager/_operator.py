"""The command line every pyinformers operator gets: controller-runtime's flags, each with an env var.

An operator is a name and a function that builds its controllers::

    OPERATOR = Operator(
        "sample-controller",
        build=lambda factory, recorder, options: FooController(factory, recorder, workers=options.workers),
        event_component="sample-controller",
    )

    if __name__ == "__main__":
        sys.exit(OPERATOR.main())

:meth:`Operator.main` parses the flags (:data:`FLAGS`), configures logging,
makes a :class:`~pyinformers.manager.Manager` and an
:class:`~pyinformers.record.EventRecorder`, builds the controllers and runs
until SIGTERM. :meth:`Operator.grants` builds the same controllers offline
(no API server) and returns what they need, which ``python -m pyinformers
rbac`` prints as RBAC (:mod:`pyinformers.rbac`).

Every flag reads its default from an environment variable
(``PYINFORMERS_`` + the flag name in capitals, dashes as underscores, e.g.
``PYINFORMERS_LEADER_ELECT=true``); a flag on the command line wins over the
variable, and the variable over the built-in default. ``--help`` lists each
flag with its variable and default.

Bind addresses are ``host:port`` (``:8443`` means every interface, ``0``
turns the server off), as in controller-runtime.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyinformers.api._permissions import Grant
from pyinformers.cache._transforms import drop_managed_fields
from pyinformers.controller._logcontext import reconcile_fields

__all__ = [
    "DEFAULT_HEALTH_PROBE_BIND_ADDRESS",
    "DEFAULT_METRICS_BIND_ADDRESS",
    "ENV_PREFIX",
    "FLAGS",
    "Flag",
    "JsonFormatter",
    "KeyValueFormatter",
    "Operator",
    "configure_logging",
    "parse_bind_address",
]

#: Environment variables are this prefix + the flag's name (``PYINFORMERS_NAMESPACE``).
ENV_PREFIX = "PYINFORMERS_"

#: ``/metrics``: HTTPS-capable and authenticated by default, on every interface (Prometheus scrapes the pod IP).
DEFAULT_METRICS_BIND_ADDRESS = ":8443"
#: ``/healthz`` and ``/readyz``: plain HTTP for the kubelet, on every interface (the kubelet probes the pod IP).
DEFAULT_HEALTH_PROBE_BIND_ADDRESS = ":8081"

#: Seconds :meth:`Operator.main` gives the event recorder to flush after the manager stopped (part of
#: the shutdown budget that terminationGracePeriodSeconds must cover; see Manager.stop_budget).
RECORDER_FLUSH_TIMEOUT = 3.0

_LOG_LEVELS = ("debug", "info", "warning", "error")
_SA_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _positive(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _shards(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"expected a number of shards >= 0 (0: no sharding), got {text!r}"
        )
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _workers(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1 worker, got {text!r}")
    return value


def parse_bind_address(text: str) -> tuple[str, int] | None:
    """``"host:port"`` -> ``(host, port)``; ``":port"`` binds every interface; ``"0"`` -> None (off).

    IPv6 hosts are bracketed (``[::1]:8443``). Raises ``ValueError`` naming the input.
    """
    text = text.strip()
    if text in ("0", ""):
        return None
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 < int(port_text) <= 65535:
        raise ValueError(
            f"bind address {text!r} is not host:port (like :8080 or 127.0.0.1:8080; 0 turns it off)"
        )
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port_text)


def _bind_address(text: str) -> tuple[str, int] | None:
    try:
        return parse_bind_address(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


@dataclass(frozen=True)
class Flag:
    """One command-line flag: its name, env var, parser, built-in default and help."""

    name: str
    help: str
    default: Any = None
    type: Callable[[str], Any] | None = None
    choices: Sequence[str] | None = None
    metavar: str | None = None

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper().replace("-", "_")

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")


#: controller-runtime's webhook port and certificate directory (where cert-manager's Secret is mounted).
DEFAULT_WEBHOOK_BIND_ADDRESS = ":9443"
DEFAULT_WEBHOOK_CERT_FILE = "/tmp/k8s-webhook-server/serving-certs/tls.crt"
DEFAULT_WEBHOOK_KEY_FILE = "/tmp/k8s-webhook-server/serving-certs/tls.key"

#: The flags of every operator, in ``--help`` order.
FLAGS: tuple[Flag, ...] = (
    Flag(
        "kubeconfig",
        "path of a kubeconfig; default: in-cluster config in a Pod, else $KUBECONFIG or ~/.kube/config",
        metavar="PATH",
    ),
    Flag(
        "namespace",
        "watch only this namespace (RBAC becomes a Role there); default: every namespace",
        metavar="NS",
    ),
    Flag(
        "leader-elect",
        "run for leadership on a Lease; only the leader runs controllers (use with replicas > 1)",
        False,
        _bool,
        metavar="BOOL",
    ),
    Flag("leader-election-id", "name of the Lease; default: the operator's name", metavar="NAME"),
    Flag(
        "leader-election-namespace",
        "namespace of the Lease; default: the Pod's namespace, else 'default'",
        metavar="NS",
    ),
    Flag(
        "shards",
        "split the keys over every replica in N shards held through Leases (docs/ha.rst); all "
        "replicas must agree on N; 0 turns sharding off; excludes --leader-elect",
        0,
        _shards,
        metavar="N",
    ),
    Flag(
        "shard-caches",
        "with --shards: each replica caches only the objects of the shards it holds, labelling "
        "them once (docs/ha.rst)",
        False,
        _bool,
        metavar="BOOL",
    ),
    Flag(
        "sharding-namespace",
        "namespace of the shard Leases; default: the Pod's namespace, else 'default'",
        metavar="NS",
    ),
    Flag(
        "metrics-bind-address",
        "host:port of /metrics; 0 turns it off",
        DEFAULT_METRICS_BIND_ADDRESS,
        _bind_address,
        metavar="ADDR",
    ),
    Flag(
        "metrics-secure",
        "authenticate and authorize /metrics through the API server (TokenReview, then "
        "SubjectAccessReview for get on /metrics); serve HTTPS with --metrics-cert-file/--metrics-key-file",
        True,
        _bool,
        metavar="BOOL",
    ),
    Flag(
        "metrics-cert-file",
        "PEM certificate for HTTPS on /metrics (reloaded when it changes)",
        metavar="PATH",
    ),
    Flag("metrics-key-file", "PEM private key for --metrics-cert-file", metavar="PATH"),
    Flag(
        "webhook-bind-address",
        "host:port of the webhook server (operators with webhooks; HTTPS); 0 turns it off",
        DEFAULT_WEBHOOK_BIND_ADDRESS,
        _bind_address,
        metavar="ADDR",
    ),
    Flag(
        "webhook-cert-file",
        "PEM certificate of the webhook server (reloaded when it changes)",
        DEFAULT_WEBHOOK_CERT_FILE,
        metavar="PATH",
    ),
    Flag(
        "webhook-key-file",
        "PEM private key for --webhook-cert-file",
        DEFAULT_WEBHOOK_KEY_FILE,
        metavar="PATH",
    ),
    Flag(
        "health-probe-bind-address",
        "host:port of /healthz and /readyz (plain HTTP for the kubelet); 0 turns them off",
        DEFAULT_HEALTH_PROBE_BIND_ADDRESS,
        _bind_address,
        metavar="ADDR",
    ),
    Flag("workers", "reconcile worker threads per controller", 2, _workers, metavar="N"),
    Flag(
        "kube-api-qps",
        "client-side throttle: at most this many requests a second to the API server; 0 turns it "
        "off (the server's Priority and Fairness guards it, as controller-runtime assumes)",
        0.0,
        _non_negative,
        metavar="QPS",
    ),
    Flag(
        "kube-api-burst",
        "requests the throttle lets through at once (with --kube-api-qps); 0: 1.5 x the QPS",
        0,
        _non_negative_int,
        metavar="N",
    ),
    Flag(
        "shutdown-timeout",
        "seconds in-flight reconciles get to finish on SIGTERM (keep it well under the "
        "Pod's terminationGracePeriodSeconds)",
        None,
        _positive,
        metavar="SECONDS",
    ),
    Flag("log-level", "least severe level logged", "info", str.lower, _LOG_LEVELS),
    Flag(
        "log-format",
        "text (human), json (one object a line) or kv (key=value, logfmt); json and kv add "
        "controller, key and reconcile_id to the lines of a reconcile",
        "text",
        str.lower,
        ("text", "json", "kv"),
    ),
)


def _env_default(flag: Flag, environ: Mapping[str, str]) -> Any:
    raw = environ.get(flag.env)
    if raw is None:
        return flag.default
    try:
        value = flag.type(raw) if flag.type else raw
    except (argparse.ArgumentTypeError, ValueError) as err:
        raise SystemExit(f"pyinformers: ${flag.env}: {err}") from None
    if flag.choices and value not in flag.choices:
        raise SystemExit(
            f"pyinformers: ${flag.env} must be one of {', '.join(flag.choices)}, got {raw!r}"
        )
    return value


def _help(flag: Flag) -> str:
    default = flag.default
    shown = (
        ""
        if default is None
        else f"; default {str(default).lower() if isinstance(default, bool) else default}"
    )
    return f"{flag.help} [${flag.env}{shown}]"


def add_flags(parser: argparse.ArgumentParser, environ: Mapping[str, str] | None = None) -> None:
    """Add :data:`FLAGS` to ``parser``, defaults read from ``environ`` (``os.environ`` when None)."""
    environ = os.environ if environ is None else environ
    group = parser.add_argument_group(
        "operator flags (each also read from the environment variable shown)"
    )
    for flag in FLAGS:
        kwargs: dict[str, Any] = {
            "dest": flag.dest,
            "default": _env_default(flag, environ),
            "help": _help(flag),
        }
        if flag.type is not None:
            kwargs["type"] = flag.type
        if flag.choices is not None:
            kwargs["choices"] = flag.choices
        if flag.metavar is not None:
            kwargs["metavar"] = flag.metavar
        if flag.type is _bool:
            kwargs["nargs"] = "?"  # --leader-elect alone means true
            kwargs["const"] = True
        group.add_argument(f"--{flag.name}", **kwargs)


# -- logging ---------------------------------------------------------------------------
def _record_fields(formatter: logging.Formatter, record: logging.LogRecord) -> dict[str, Any]:
    """The fields both structured formats carry, in order: ``ts level logger msg``, then during a
    reconcile ``controller key reconcile_id``, then ``error`` with the formatted exception."""
    fields: dict[str, Any] = {
        "ts": datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc).isoformat(
            timespec="milliseconds"
        ),
        "level": record.levelname.lower(),
        "logger": record.name,
        "msg": record.getMessage(),
    }
    fields.update(reconcile_fields())
    if record.exc_info:
        fields["error"] = formatter.formatException(record.exc_info)
    return fields


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``ts`` (RFC 3339, UTC), ``level``, ``logger``, ``msg``, and ``error``.

    ``error`` carries the formatted exception when there is one, so a
    traceback stays one line a log collector can index. During a reconcile
    the object also has ``controller``, ``key`` and ``reconcile_id``.
    """

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(_record_fields(self, record), ensure_ascii=False)


class KeyValueFormatter(logging.Formatter):
    """One ``key=value`` line per record (logfmt), with the same fields as :class:`JsonFormatter`."""

    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{k}={_logfmt(v)}" for k, v in _record_fields(self, record).items())


def _logfmt(value: Any) -> str:
    text = str(value)
    if text and not any(c in text for c in ' "=\n\t\\'):
        return text
    return json.dumps(text, ensure_ascii=False)


def configure_logging(
    level: str = "info", fmt: str = "text", stream: Any = None
) -> logging.Handler:
    """Replace the root logger's handlers with one writing ``fmt`` (text|json|kv) at ``level`` to ``stream``.

    Returns the handler (tests remove it). ``stream`` defaults to stderr.
    """
    if level not in _LOG_LEVELS:
        raise ValueError(f"log level must be one of {', '.join(_LOG_LEVELS)}, got {level!r}")
    formatters = {
        "text": lambda: logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"),
        "json": JsonFormatter,
        "kv": KeyValueFormatter,
    }
    if fmt not in formatters:
        raise ValueError(f"log format must be text, json or kv, got {fmt!r}")
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(formatters[fmt]())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    return handler


# -- the operator ----------------------------------------------------------------------
Build = Callable[[Any, Any, argparse.Namespace], Any | Iterable[Any]]


def pod_namespace(default: str = "default") -> str:
    """The namespace this Pod runs in (its ServiceAccount's), or ``default`` outside a Pod."""
    try:
        with open(_SA_NAMESPACE_FILE, encoding="utf-8") as handle:
            return handle.read().strip() or default
    except OSError:
        return default


class Operator:
    """A named operator: its controllers (``build``), its flags, its RBAC.

    :param name: the operator's name: default Lease name, RBAC role name.
    :param build: ``build(factory, recorder, options)`` returns a Controller
        or several; ``options`` is the parsed flags (``options.workers`` ...).
        It must only wire informers and clients (it also runs offline, for RBAC).
    :param event_component: the source component of its Events (None: no
        recorder; ``build`` gets None).
    :param description: the ``--help`` description.
    :param add_arguments: ``fn(parser)`` adds operator-specific flags.
    :param setup: ``fn(manager, options)`` runs after the Manager is made and
        before controllers are built (e.g. install a CRD).
    :param webhooks: a :class:`~pyinformers.webhook.Webhooks` the Manager
        serves (``--webhook-bind-address``, ``--webhook-cert-file``,
        ``--webhook-key-file``); ``python -m pyinformers webhooks`` prints
        its configurations.
    :param cache_transform: the Manager's ``cache_transform`` (default
        :func:`~pyinformers.cache.drop_managed_fields`; None: none).
    """

    def __init__(
        self,
        name: str,
        build: Build,
        *,
        event_component: str | None = None,
        description: str | None = None,
        prog: str | None = None,
        add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
        setup: Callable[[Any, argparse.Namespace], None] | None = None,
        webhooks: Any = None,
        cache_transform: Callable[[Any], Any] | None = drop_managed_fields,
    ) -> None:
        if cache_transform is not None and not callable(cache_transform):
            raise TypeError(f"cache_transform must be callable or None, got {cache_transform!r}")
        self.name = name
        self.webhooks = webhooks
        self.cache_transform = cache_transform
        self.build = build
        self.event_component = event_component
        self.description = description
        self.prog = prog
        self._add_arguments = add_arguments
        self._setup = setup

    # -- flags ----------------------------------------------------------------------------
    def parser(self, environ: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(
            prog=self.prog,
            description=self.description,
            epilog="Bind addresses are host:port (:8443 = every interface; 0 = off). "
            "See docs/deploying.rst for RBAC, manifests, probes and metrics security.",
        )
        add_flags(parser, environ)
        if self._add_arguments is not None:
            self._add_arguments(parser)
        return parser

    def parse(
        self, argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
    ) -> argparse.Namespace:
        """Parse ``argv`` (``sys.argv[1:]`` when None) over the env vars in ``environ``."""
        parser = self.parser(environ)
        options = parser.parse_args(argv)
        if bool(options.metrics_cert_file) != bool(options.metrics_key_file):
            parser.error("--metrics-cert-file and --metrics-key-file go together")
        if options.metrics_cert_file and not options.metrics_secure:
            parser.error("--metrics-cert-file needs --metrics-secure")
        if options.shard_caches and not options.shards:
            parser.error("--shard-caches needs --shards N (N >= 1)")
        if options.leader_elect and options.shards:
            parser.error(
                "--leader-elect and --shards exclude each other: a sharded replica already owns its keys alone"
            )
        if options.leader_election_id is None:
            options.leader_election_id = self.name
        return options

    # -- permissions ----------------------------------------------------------------------
    def grants(
        self, options: argparse.Namespace, *, lease_namespace: str | None = None
    ) -> list[Grant]:
        """What the operator needs, by building its controllers offline with ``options``.

        Informers and declared clients (recorded by the factory), Events when
        it records them, Leases (get, create, update in the Lease's namespace)
        with ``--leader-elect``, Leases (also list, watch and delete: replicas
        watch each other's membership and collect departed members' Leases)
        in the shards' namespace with ``--shards``, ``get`` and ``patch`` on the kinds that
        follow the shards with ``--shard-caches`` (the shard label), TokenReviews and SubjectAccessReviews with
        ``--metrics-secure`` and metrics on, and ``update`` on an owner's ``finalizers``
        subresource where the controller writes children it owns
        (:func:`owner_finalizer_grants`). Raises ``ValueError`` when a
        controller made a client without declaring its verbs.
        """
        from kubernetes import client as k8s_client

        from pyinformers.api._permissions import Permissions
        from pyinformers.cache._factory import SharedInformerFactory
        from pyinformers.resources import EVENTS, LEASES

        offline = k8s_client.ApiClient(k8s_client.Configuration(host="https://offline.invalid"))
        factory = SharedInformerFactory(
            offline, namespace=options.namespace, metrics_registry=False
        )
        factory._shardable = bool(options.shards and options.shard_caches)  # as the Manager's
        recorder = _OfflineRecorder() if self.event_component else None
        built = self.build(factory, recorder, options)
        controllers: list[Any] = list(built) if isinstance(built, (list, tuple)) else [built]
        undeclared = factory.permissions().undeclared()
        if undeclared:
            raise ValueError(
                f"operator {self.name!r}: clients made without declaring their verbs: "
                + ", ".join(str(r) for r in undeclared)
                + " (pass verbs=... to factory.client())"
            )
        extra = Permissions()
        if recorder is not None:
            extra.grant(EVENTS, ("create", "patch"), namespace=options.namespace)
        if options.leader_elect:
            namespace = options.leader_election_namespace or lease_namespace or pod_namespace()
            extra.grant(LEASES, ("get", "create", "update"), namespace=namespace)
        if options.shards:
            namespace = options.sharding_namespace or lease_namespace or pod_namespace()
            extra.grant(
                LEASES, ("get", "list", "watch", "create", "update", "delete"), namespace=namespace
            )
        if factory._shardable:  # the shard label is written on the kinds that follow the shards
            from pyinformers.manager._shard_caches import following

            for followed in following(factory, controllers):
                extra.grant(
                    followed.resource, ("get", "patch"), namespace=followed.selection.namespace
                )
        if options.metrics_secure and options.metrics_bind_address is not None:
            extra.grant_all(
                [
                    Grant("authentication.k8s.io", "tokenreviews", "create"),
                    Grant("authorization.k8s.io", "subjectaccessreviews", "create"),
                ]
            )
        declared = set(factory.permissions().grants())
        extra.grant_all(owner_finalizer_grants(controllers, factory, declared))
        return sorted(declared | set(extra.grants()))

    def rbac_yaml(
        self,
        argv: Sequence[str] = (),
        *,
        service_account_namespace: str = "default",
        service_account: str | None = None,
        role_name: str | None = None,
        header: str = "",
    ) -> str:
        """The RBAC YAML the operator needs when run with the flags ``argv`` (environment ignored).

        What ``python -m pyinformers rbac`` prints: the Roles/ClusterRoles of
        :meth:`grants` with their bindings to the ServiceAccount
        ``service_account_namespace/service_account`` (default: the operator's
        name), labelled as the operator's. The output depends on ``argv`` alone.
        """
        from pyinformers import rbac

        options = self.parse(argv, environ={})
        grants = self.grants(options, lease_namespace=service_account_namespace)
        documents = rbac.manifests(
            grants,
            name=role_name or self.name,
            service_account=service_account or self.name,
            service_account_namespace=service_account_namespace,
            labels={
                "app.kubernetes.io/name": self.name,
                "app.kubernetes.io/managed-by": "pyinformers",
            },
        )
        return rbac.dump(documents, header=header)

    # -- running --------------------------------------------------------------------------
    def manager_options(self, options: argparse.Namespace) -> dict:
        """Keyword arguments for :class:`~pyinformers.manager.Manager` from the parsed flags.

        ``--leader-elect`` maps to ``leader_election`` with the Lease's name
        and namespace, ``--shards N`` to ``sharding`` with N shards in a group
        named after the operator (docs/ha.rst).
        """
        from pyinformers.manager._leader import LeaderElectionConfig
        from pyinformers.manager._probes import TLSFiles
        from pyinformers.manager._sharding import ShardingConfig

        metrics, health = options.metrics_bind_address, options.health_probe_bind_address
        kwargs: dict[str, Any] = {
            "kubeconfig": options.kubeconfig,
            "namespace": options.namespace,
            "metrics_port": metrics[1] if metrics else 0,
            "health_port": health[1] if health else 0,
            "metrics_host": metrics[0] if metrics else None,
            "health_host": health[0] if health else None,
            "metrics_auth": bool(options.metrics_secure and metrics),
            "cache_transform": self.cache_transform,
        }
        if options.metrics_cert_file:
            kwargs["metrics_tls"] = TLSFiles(options.metrics_cert_file, options.metrics_key_file)
        webhook = options.webhook_bind_address
        if self.webhooks is not None and webhook:
            kwargs.update(
                webhooks=self.webhooks,
                webhook_host=webhook[0],
                webhook_port=webhook[1],
                webhook_tls=TLSFiles(options.webhook_cert_file, options.webhook_key_file),
            )
        if options.shutdown_timeout is not None:
            kwargs["shutdown_timeout"] = options.shutdown_timeout
        if options.kube_api_qps:
            kwargs["kube_api_qps"] = options.kube_api_qps
            kwargs["kube_api_burst"] = options.kube_api_burst or None
        if options.leader_elect:
            # The Lease's namespace: the flag's, else the Pod's, else 'default' as --help says
            # (pod_namespace), so a run on a laptop works without the flag.
            kwargs["leader_election"] = LeaderElectionConfig(
                name=options.leader_election_id,
                namespace=options.leader_election_namespace or pod_namespace(),
            )
        if options.shards:
            kwargs["sharding"] = ShardingConfig(
                self.name,
                shards=options.shards,
                namespace=options.sharding_namespace or pod_namespace(),
                shard_caches=bool(options.shard_caches),
            )
        return kwargs

    def main(self, argv: Sequence[str] | None = None) -> int:
        """Parse flags, log, run the Manager with the built controllers until SIGTERM; 0 on a clean exit."""
        from pyinformers.api._config import ConfigurationError
        from pyinformers.manager import Manager
        from pyinformers.record import EventRecorder

        options = self.parse(argv)
        configure_logging(options.log_level, options.log_format)
        if (
            options.metrics_secure
            and options.metrics_bind_address
            and not options.metrics_cert_file
        ):
            logging.getLogger("pyinformers.manager._operator").warning(
                "/metrics is authenticated but served over plain HTTP: scrapers' tokens cross the network in "
                "clear; give --metrics-cert-file and --metrics-key-file"
            )
        try:
            manager = Manager(**self.manager_options(options))
        except (
            ConfigurationError
        ) as err:  # no or bad kubeconfig, no Lease namespace outside a Pod: one line
            raise SystemExit(f"pyinformers: {err}") from None
        if self._setup is not None:
            self._setup(manager, options)
        recorder = (
            EventRecorder(manager.api_client, self.event_component)
            if self.event_component
            else None
        )
        try:
            built = self.build(manager.factory, recorder, options)
            controllers: list[Any] = list(built) if isinstance(built, (list, tuple)) else [built]
            for controller in controllers:
                manager.add(controller)
            manager.run()  # until SIGINT / SIGTERM
        finally:
            if recorder is not None:
                recorder.stop(timeout=RECORDER_FLUSH_TIMEOUT)
        return 0

    def __repr__(self) -> str:
        return f"<Operator {self.name!r}>"


def owner_finalizer_grants(controllers: Any, factory: Any, declared: set[Grant]) -> list[Grant]:
    """``update`` on ``<owner>/finalizers`` for each owner whose children the controllers write.

    :func:`~pyinformers.api.meta.set_controller_reference` sets
    ``blockOwnerDeletion: true``, and a cluster enforcing owner-reference
    permissions (the OwnerReferencesPermissionEnforcement admission plugin,
    on in OpenShift and many hardened clusters) lets only who may update the
    owner's ``finalizers`` subresource set it: without this grant the child's
    create is refused with a 403 there. An owner is found from a watch with
    :class:`~pyinformers.controller.EnqueueForOwner` (controller references
    only), its resource among the factory's informers, and its children's
    resource must be one the controller declared ``create``, ``update`` or
    ``patch`` on.
    """
    from pyinformers.controller import EnqueueForOwner

    writes = {
        (g.group, g.resource, g.namespace)
        for g in declared
        if g.verb in ("create", "update", "patch")
    }
    informed = [resource for resource, _ns in factory.informers()]
    out: list[Grant] = []
    for controller in controllers:
        for watch in getattr(controller, "watches", ()):
            handler = watch.handler
            if not isinstance(handler, EnqueueForOwner) or not handler.controller_only:
                continue
            child = getattr(getattr(watch.informer, "lister", None), "resource", None)
            if child is None:
                continue
            for resource in informed:
                if resource.kind != handler.owner_kind or resource.group != handler.owner_group:
                    continue
                for group, plural, namespace in writes:
                    if (group, plural) == (child.group, child.plural):
                        scope = namespace if resource.namespaced else None
                        out.append(
                            Grant(resource.group, f"{resource.plural}/finalizers", "update", scope)
                        )
    return out


class _OfflineRecorder:
    """Stands in for an EventRecorder while building controllers for RBAC: records nothing."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None
