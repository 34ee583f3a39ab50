"""The command line of the in-process API server: run it until SIGINT or SIGTERM.

python -m pyinformers.testing.apiserver --port 8001 --kubeconfig ./kubeconfig.yaml
kubectl --kubeconfig ./kubeconfig.yaml get namespaces
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import signal
import sys
import tempfile
import threading

from pyinformers.testing.apiserver._server import ApiServer
from pyinformers.testing.apiserver._tls import TlsUnavailable, self_signed_certificate


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pyinformers.testing.apiserver",
        description="An in-process Kubernetes API server for tests and demos.",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=int, default=0, help="port to listen on (default: a free one)"
    )
    parser.add_argument(
        "--kubeconfig", metavar="FILE", help="write a kubeconfig for this server to FILE"
    )
    parser.add_argument(
        "--token",
        help="require this bearer token (then HTTPS with a self-signed certificate: kubectl sends tokens only over TLS)",
    )
    parser.add_argument("--no-tls", action="store_true", help="serve plain HTTP even with --token")
    parser.add_argument(
        "--simulate-workloads", action="store_true", help="make Deployment status follow spec"
    )
    parser.add_argument(
        "--bookmark-interval", type=float, default=5.0, help="seconds between watch bookmarks"
    )
    parser.add_argument(
        "--compact-every",
        type=int,
        default=None,
        metavar="N",
        help="compact history every N writes",
    )
    return parser


def _tls(args: argparse.Namespace) -> tuple[tuple[str, str] | None, str]:
    """(certificate files, a notice for the user): HTTPS when a token is set, unless --no-tls."""
    if not args.token:
        return None, ""
    how = "the kubeconfig this server writes (--kubeconfig) carries the token"
    if args.no_tls:
        return (
            None,
            f"plain HTTP with a token: kubectl will not send it (it sends tokens only over TLS); {how} for other clients",
        )
    try:
        directory = tempfile.mkdtemp(prefix="pyinformers-testing-tls-")
        atexit.register(shutil.rmtree, directory, True)
        return (
            self_signed_certificate(directory),
            f"HTTPS with a self-signed certificate, since a token is set; {how} and trusts the certificate",
        )
    except TlsUnavailable as exc:
        return None, (
            f"serving plain HTTP ({exc}): kubectl sends no token over HTTP, so use --no-tls knowingly "
            f"or install openssl; {how} for other clients"
        )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    tls, notice = _tls(args)
    server = ApiServer(
        tls=tls,
        host=args.host,
        port=args.port,
        token=args.token,
        simulate_workloads=args.simulate_workloads,
        bookmark_interval=args.bookmark_interval,
        compact_every=args.compact_every,
    )
    done = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        done.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        server.start()
    except OSError as exc:
        print(f"cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    if args.kubeconfig:
        server.write_kubeconfig(args.kubeconfig)
    print(f"pyinformers.testing API server listening on {server.url}", flush=True)
    if notice:
        print(notice, flush=True)
    if args.kubeconfig:
        print(f"kubeconfig written to {args.kubeconfig}", flush=True)
    while not done.wait(1.0):
        pass
    server.stop()
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
