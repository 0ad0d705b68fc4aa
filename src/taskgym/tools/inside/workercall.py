"""``python3 -I -S workercall.py <socket> <tag> '<json request>'``: send one request to an
episode's warm worker (``workerloop.py``) and print ``<tag> <mac> <reply json>``, or
``<tag>-GONE <why>`` when no server listens. The env trusts only a reply whose mac covers its
request. Every tool call starts this client, so it imports nothing beyond ``sys`` and the C
socket module (``socket.py`` pulls in ``enum`` and ``selectors``: 8 ms of a 25 ms step).
"""

import _socket
import sys

MESSAGE_LIMIT = 1 << 20
"""Longest reply read (the server's bound on a request or reply)."""


def call(path: str, tag: str, request: str) -> int:
    """Send ``request`` to the server on ``path`` and print its tagged reply (whatever it was)."""
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.connect(path)
        conn.sendall(request.encode() + b"\n")
        reply = b""
        while len(reply) < MESSAGE_LIMIT and (chunk := conn.recv(65536)):
            reply += chunk
    except OSError as exc:
        print(f"{tag}-GONE {exc}")
        return 1
    finally:
        conn.close()
    print(f"{tag} {reply[:MESSAGE_LIMIT].decode(errors='replace')}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: workercall.py <socket> <tag> '<json request>'")
    sys.exit(call(*sys.argv[1:]))
