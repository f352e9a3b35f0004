"""Inside the box: expose the endpoint socket as one loopback TCP port, then run the command.

Run as module ``inbox.relay`` with ``PORT SOCKET -- COMMAND...``. The box has no network (an
empty namespace with loopback only); the single unix socket bound in at SOCKET leads to the
parent's forwarder, which connects only to the one configured endpoint. The command is started
once the port listens; the relay exits with the command's status. The command may kill the relay
or use the socket directly: either way it reaches the one endpoint, or nothing.

``pump`` and ``splice`` are also the host's byte pumps (``skillgrad.sandbox.relay`` and
``skillgrad.harnesses.proxy`` import them from here): one implementation, kept in this
stdlib-only file because the box has no ``skillgrad`` to import.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading


def pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` to ``sink`` until ``source`` ends or fails, then half-close both."""
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                sock.shutdown(how)


def splice(client: socket.socket, upstream: socket.socket) -> None:
    """Pump both ways (client -> upstream on a daemon thread) until upstream's side ends."""
    threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
    pump(upstream, client)


def connect(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    splice(client, upstream)


def serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=connect, args=(client, path), daemon=True).start()


def main() -> None:
    port, path = int(sys.argv[1]), sys.argv[2]
    if sys.argv[3] != "--" or len(sys.argv) < 5:
        raise SystemExit("usage: relay PORT SOCKET -- COMMAND...")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    try:
        code = subprocess.call(sys.argv[4:])
    except OSError as exc:
        print(f"relay: cannot start {sys.argv[4]}: {exc}", file=sys.stderr)
        code = 127
    sys.exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()
