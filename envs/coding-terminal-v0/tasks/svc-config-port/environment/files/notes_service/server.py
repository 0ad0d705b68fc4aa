"""notes_service: a tiny internal HTTP service that stores short notes in memory.

Usage: python3 server.py --config notes.ini

Endpoints:
  GET  /health  -> 200 {"status": "ok", "notes": <count>}
  GET  /notes   -> 200 [{"id": 1, "text": "..."}, ...]
  POST /notes   -> 201 {"id": N, "text": "..."}   body: {"text": "..."}
                   400 on invalid JSON / missing text, 507 when max_notes is reached
"""
import argparse
import configparser
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class NotesStore:
    def __init__(self, max_notes):
        self.max_notes = max_notes
        self._notes = []
        self._lock = threading.Lock()

    def add(self, text):
        with self._lock:
            if len(self._notes) >= self.max_notes:
                return None
            note = {"id": len(self._notes) + 1, "text": text}
            self._notes.append(note)
            return note

    def all(self):
        with self._lock:
            return list(self._notes)


def parse_listen(value):
    """'host:port' -> (host, port)."""
    host, port = value.split(":")
    return host, port


def load_config(path):
    cp = configparser.ConfigParser()
    cp.read(path)
    port_override = os.environ.get("NOTES_PORT")
    host, port = parse_listen(cp.get("server", "listen", fallback="127.0.0.1:8080"))
    if port_override:
        port = port_override
    host, port = parse_listen(cp.get("server", "listen", fallback="127.0.0.1:8080"))
    return {
        "host": host,
        "port": port,
        "max_notes": cp.getint("limits", "max_notes", fallback=100),
    }


def make_handler(store):
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
            if self.path == "/health":
                self._send(200, {"status": "ok", "notes": len(store.all())})
            elif self.path == "/notes":
                self._send(200, store.all())
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self):
            if self.path != "/notes":
                return self._send(404, {"error": "not found"})
            length = int(self.headers.get("Content-Length") or 0)
            try:
                data = json.loads(self.rfile.read(length) or b"null")
                text = data["text"]
                if not isinstance(text, str) or not text:
                    raise ValueError
            except (ValueError, KeyError, TypeError):
                return self._send(400, {"error": "expected {\"text\": \"...\"}"})
            note = store.add(text)
            if note is None:
                return self._send(507, {"error": "note limit reached"})
            self._send(201, note)

    return Handler


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    server = ThreadingHTTPServer((cfg["host"], cfg["port"]), make_handler(NotesStore(cfg["max_notes"])))
    print(f"notes_service listening on {cfg['host']}:{cfg['port']}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
