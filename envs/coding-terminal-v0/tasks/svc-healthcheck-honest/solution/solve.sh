#!/bin/bash
set -euo pipefail
cd /app/inventory
python3 - <<'PY'
src = open("service.py").read()
old_loop = src[src.index("    def _flush_loop(self):"):src.index("def make_handler")]
new_loop = '''    def _flush_loop(self):
        while True:
            time.sleep(FLUSH_INTERVAL)
            with self.lock:
                batch, self.pending = self.pending, []
            if batch:
                try:
                    with open(os.path.join(self.data_dir, "events.log"), "a") as f:
                        for ev in batch:
                            f.write(json.dumps(ev) + "\\n")
                    self.last_flush = time.monotonic()
                except OSError:
                    with self.lock:  # keep the events and retry on the next iteration
                        self.pending[:0] = batch
            self.heartbeat = time.monotonic()

    def health(self):
        checks = {}
        probe = os.path.join(self.data_dir, f".healthz-probe-{os.getpid()}-{threading.get_ident()}")
        try:
            if not os.path.isdir(self.data_dir):
                raise OSError("data dir missing")
            with open(probe, "w") as f:
                f.write("probe")
            os.remove(probe)
            checks["storage"] = "ok"
        except OSError as exc:
            checks["storage"] = f"fail: data dir not writable ({exc})"
        age = time.monotonic() - self.heartbeat
        if not self.flusher.is_alive():
            checks["flusher"] = "fail: flusher thread died"
        elif age > 2.0:
            checks["flusher"] = f"fail: no flusher heartbeat for {age:.1f}s"
        else:
            checks["flusher"] = "ok"
        ok = all(v == "ok" for v in checks.values())
        return {"status": "ok" if ok else "fail", "checks": checks}


'''
src = src.replace(old_loop, new_loop)
src = src.replace("        self.last_flush = time.monotonic()\n        self.flusher =",
                  "        self.last_flush = time.monotonic()\n        self.heartbeat = time.monotonic()\n        self.flusher =")
src = src.replace('''            if self.path == "/healthz":
                self._send(200 if health["status"] == "ok" else 503, health)''', '''            if self.path == "/healthz":
                h = inv.health()
                self._send(200 if h["status"] == "ok" else 503, h)''')
src = src.replace('''    # storage is checked once at startup
    health = {"status": "ok" if os.path.isdir(args.data_dir) else "fail"}
''', "")
src = src.replace("def make_handler(inv, health):", "def make_handler(inv):")
src = src.replace("make_handler(inv, health)", "make_handler(inv)")
open("service.py", "w").write(src)
PY
