"""Run the in-process API server from the command line until SIGINT or SIGTERM.

    python -m pyinformers.testing --port 8001 --kubeconfig ./kubeconfig.yaml
    kubectl --kubeconfig ./kubeconfig.yaml get namespaces
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Optional

from pyinformers.testing.server import ApiServer


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pyinformers.testing", description="An in-process Kubernetes API server for tests and demos.")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--kubeconfig", metavar="FILE", help="write a kubeconfig for this server to FILE")
    parser.add_argument("--token", help="require this bearer token")
    parser.add_argument("--simulate-workloads", action="store_true", help="make Deployment status follow spec")
    parser.add_argument("--bookmark-interval", type=float, default=5.0, help="seconds between watch bookmarks")
    parser.add_argument("--compact-every", type=int, default=None, metavar="N", help="compact history every N writes")
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    args = _parser().parse_args(argv)
    server = ApiServer(
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
    if args.kubeconfig:
        print(f"kubeconfig written to {args.kubeconfig}", flush=True)
    while not done.wait(1.0):
        pass
    server.stop()
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
