"""`flashrsi offline-model` / `python -m flashrsi_dagster.offline_model`: serve in the foreground.

Prints `offline model simulator listening on <url>` once ready, logs one line per request to
stderr, and serves until SIGINT, SIGTERM or SIGHUP; then exits with 128 + the signal's number
(`lifecycle`).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from flashrsi_dagster.lifecycle import Stopped, raise_on_stop_signals, restore
from flashrsi_dagster.offline_model.config import ServerConfig
from flashrsi_dagster.offline_model.policies import ScriptError
from flashrsi_dagster.offline_model.server import OfflineModelServer

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flashrsi offline-model",
        description="Serve the offline model simulator (OpenAI and Anthropic APIs) until stopped.",
        allow_abbrev=False,
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (the default)")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--jitter-ms", type=float, default=0.0)
    parser.add_argument("--failure-rate", type=float, default=0.0)
    parser.add_argument(
        "--failure-kind",
        action="append",
        choices=["429", "500", "hang"],
        help="fault to inject (repeatable; default: all three)",
    )
    parser.add_argument("--hang-seconds", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--script",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="serve a YAML/JSON script as model simulator/script:NAME (repeatable)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        config = _config(args)
        server = OfflineModelServer(config).start()
    except (ValidationError, ScriptError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    logger = logging.getLogger("flashrsi.offline_model")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    previous = raise_on_stop_signals()
    try:
        print(f"offline model simulator listening on {server.url}", flush=True)
        while True:
            time.sleep(3600)
    except Stopped as stopped:
        return stopped.status
    finally:
        server.close()  # its threads: nothing outlives the process
        restore(previous)
        logger.removeHandler(handler)


def _config(args: argparse.Namespace) -> ServerConfig:
    scripts: dict[str, Path] = {}
    for item in args.script:
        name, separator, path = item.partition("=")
        if not separator or not name or not path:
            raise ValueError(f"--script expects NAME=PATH, got {item!r}")
        scripts[name] = Path(path)
    fields = dict(
        host=args.host,
        port=args.port,
        latency_ms=args.latency_ms,
        jitter_ms=args.jitter_ms,
        failure_rate=args.failure_rate,
        hang_seconds=args.hang_seconds,
        seed=args.seed,
        scripts=scripts,
    )
    if args.failure_kind:
        fields["failure_kinds"] = tuple(dict.fromkeys(args.failure_kind))
    return ServerConfig(**fields)
