"""inventory: stock-level service. Events are acknowledged immediately and persisted by a background flusher.

Usage: python3 service.py --port PORT --data-dir DIR   (listens on 127.0.0.1)

  POST /events      {"sku": "A-1", "delta": -3}  -> 202 {"queued": true}     (400 on bad input)
  GET  /stock/<sku> -> 200 {"sku": "A-1", "stock": 7}
  GET  /healthz     -> 200 {"status": "ok", ...} or 503 {"status": "fail", ...}
"""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FLUSH_INTERVAL = 0.2


class Inventory:
    def __init__(self, data_dir):
        self.data_dir = data_dir
        self.stock = {}
        self.pending = []
        self.lock = threading.Lock()
        self.last_flush = time.monotonic()
        self.flusher = threading.Thread(target=self._flush_loop, daemon=True)

    def start(self):
        self.flusher.start()

    def add_event(self, sku, delta):
        with self.lock:
            self.stock[sku] = self.stock.get(sku, 0) + delta
            self.pending.append({"sku": sku, "delta": delta})

    def get(self, sku):
        with self.lock:
            return self.stock.get(sku, 0)

    def _flush_loop(self):
        while True:
            time.sleep(FLUSH_INTERVAL)
            with self.lock:
                if not self.pending:
                    continue
                with open(os.path.join(self.data_dir, "events.log"), "a") as f:
                    for ev in self.pending:
                        f.write(json.dumps(ev) + "\n")
                self.pending.clear()
                self.last_flush = time.monotonic()


def make_handler(inv, health):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, code, obj):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/healthz":
                self._send(200 if health["status"] == "ok" else 503, health)
            elif self.path.startswith("/stock/"):
                sku = self.path[len("/stock/"):]
                self._send(200, {"sku": sku, "stock": inv.get(sku)})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self):
            if self.path != "/events":
                return self._send(404, {"error": "not found"})
            try:
                ev = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                sku, delta = ev["sku"], ev["delta"]
                if not isinstance(sku, str) or not sku or type(delta) is not int:
                    raise ValueError
            except (ValueError, KeyError, TypeError):
                return self._send(400, {"error": "expected {\"sku\": str, \"delta\": int}"})
            inv.add_event(sku, delta)
            self._send(202, {"queued": True})

    return Handler


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--data-dir", required=True)
    args = ap.parse_args(argv)
    inv = Inventory(args.data_dir)
    # storage is checked once at startup
    health = {"status": "ok" if os.path.isdir(args.data_dir) else "fail"}
    inv.start()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(inv, health))
    print(f"inventory listening on 127.0.0.1:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
