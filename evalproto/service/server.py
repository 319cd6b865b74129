"""The service as a process (what `evalproto serve` runs): a listening socket, uvicorn
serving the application until SIGINT or SIGTERM, the service's log lines on stderr, and
every evaluator that the server and its workers start ended with them."""

from __future__ import annotations

import logging
import signal
import socket
from typing import Tuple

import uvicorn

from evalproto.base.errors import SetupError
from evalproto.base.processes import keep_groups_after_exit
from evalproto.service.app import create_app
from evalproto.service.context import Service


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to host:port, or an error that says why not."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP named: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on
        # connections of a socket that says so; without it each answer on a kept-alive
        # connection waited ~40 ms for the client's delayed ACK between its two writes
        listening = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
    except OSError as exc:
        raise SetupError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return listening


def address(listening: socket.socket) -> str:
    """The URL a listening socket serves at."""
    host, port = listening.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def run(service: Service, listening: socket.socket) -> None:
    """Serve until SIGINT or SIGTERM, which stop the server cleanly: uvicorn handles
    them, then raises them again for the handlers it found, which here do nothing (the
    launcher's would report an interrupted run)."""
    keep_groups_after_exit()  # its evaluators, and its workers', end with them
    _log_errors()
    config = uvicorn.Config(create_app(service), log_level="info", timeout_graceful_shutdown=10)
    stopping: Tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.signal(number, lambda number, frame: None)
                for number in stopping}
    try:
        uvicorn.Server(config).run(sockets=[listening])
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _log_errors() -> None:
    """The service's log lines (one per refused request, with its id) on stderr, as
    uvicorn writes its own."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s:  evalproto: %(message)s"))
    logger = logging.getLogger("evalproto.service")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
