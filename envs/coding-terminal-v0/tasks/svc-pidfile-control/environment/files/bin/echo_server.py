"""Tiny HTTP service managed by svcctl. GET / -> {"service": "echo", "pid": <pid>}.

On SIGTERM it finishes in-flight work (takes about a second), logs "shutdown complete" and exits 0.
"""
import argparse
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import os


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"service": "echo", "pid": os.getpid(), "path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)

    def on_term(signum, frame):
        def shutdown():
            time.sleep(1.0)  # drain in-flight requests
            server.shutdown()
        threading.Thread(target=shutdown).start()

    signal.signal(signal.SIGTERM, on_term)
    print(f"echo_server pid {os.getpid()} listening on 127.0.0.1:{args.port}", flush=True)
    server.serve_forever()
    server.server_close()
    print("shutdown complete", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
