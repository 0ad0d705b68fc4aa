"""``python3 -I -S call.py '<json request>'``: send one request to the episode's warm worker
and print its JSON reply, starting the worker (``worker.py serve``) first when none is
running. Kept apart from the worker, and importing little, because every tool call starts it.
"""

import os
import socket
import sys
import time

STATE = "/tmp/.taskgym-mesh"
SOCKET = f"{STATE}/worker.sock"
START_SECONDS = 120.0


def call(request: str) -> int:
    deadline = time.monotonic() + START_SECONDS
    server = None
    while True:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.connect(SOCKET)
                conn.sendall(request.encode() + b"\n")
                reply = b"".join(iter(lambda: conn.recv(65536), b""))
            sys.stdout.write(reply.decode())
            return 0
        except (FileNotFoundError, ConnectionRefusedError):
            import subprocess

            if server is None:
                os.makedirs(STATE, exist_ok=True)
                worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
                with open(f"{STATE}/worker.log", "ab") as log:
                    server = subprocess.Popen([sys.executable, "-I", "-B", worker, "serve"],
                                              stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                              start_new_session=True)
            elif server.poll() is not None or time.monotonic() > deadline:
                import json

                with open(f"{STATE}/worker.log", errors="replace") as log:
                    tail = log.read()[-3000:]
                print(json.dumps({"ok": False, "text": f"the trimesh worker did not start:\n{tail}"}))
                return 1
            time.sleep(0.02)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: call.py '<json request>'")
    sys.exit(call(sys.argv[1]))
