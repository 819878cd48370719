"""Inside a sandbox whose only way out is the egress proxy's Unix socket: listen on 127.0.0.1:PORT, carry each
connection to the socket, and run the command. Standard library only (it runs with the sandbox's Python).

    egress_bridge.py SOCKET PORT -- COMMAND...

The listener is bound before the command starts (so its first request finds it); a forked child serves it and
ends with the sandbox (its pid namespace ends when the command does). The command replaces this process, so its
exit status, stdin and stdout are the run's own.
"""

from __future__ import annotations

import os
import socket
import sys
import threading


def serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=carry, args=(client, path), daemon=True).start()


def carry(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    except OSError:
        pass
    for sock in (dst, src):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main() -> None:
    path, port, separator, *command = sys.argv[1:]
    if separator != "--" or not command:
        sys.exit("usage: egress_bridge.py SOCKET PORT -- COMMAND...")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(port)))
    listener.listen(64)
    if os.fork() == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.setsid()
        serve(listener, path)
        os._exit(0)
    listener.close()
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"bwrap: execvp {command[0]}: {exc.strerror}", file=sys.stderr)  # read as a start failure
        sys.exit(127)


if __name__ == "__main__":
    main()
