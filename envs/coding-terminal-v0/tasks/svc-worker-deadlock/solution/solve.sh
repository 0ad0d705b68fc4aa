#!/bin/bash
set -euo pipefail
cat > /app/jobrunner/pool.py <<'PY'
"""jobrunner.pool: run jobs on a pool of worker threads.

Used by the ingest service: `jobs` is usually a generator reading job lines from a socket or a pipe,
so new jobs can arrive slowly and in bursts.
"""
import queue
import threading

_STOP = object()


class Report:
    def __init__(self):
        self.results = {}  # job_id -> handler return value
        self.errors = {}   # job_id -> repr() of the last exception


def run_jobs(jobs, handler, workers=4, retries=0, queue_size=8):
    """Run handler(payload) for every (job_id, payload) in jobs; return a Report."""
    q = queue.Queue(maxsize=queue_size)
    report = Report()
    lock = threading.Lock()

    def worker():
        while True:
            item = q.get()
            if item is _STOP:
                return
            job_id, payload = item
            for attempt in range(retries + 1):
                try:
                    result = handler(payload)
                except Exception as exc:  # retried inline: never re-queue from a worker
                    if attempt == retries:
                        with lock:
                            report.errors[job_id] = repr(exc)
                else:
                    with lock:
                        report.results[job_id] = result
                    break

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(workers)]
    for t in threads:
        t.start()
    try:
        for job_id, payload in jobs:
            q.put((job_id, payload))
    finally:
        for _ in threads:
            q.put(_STOP)
        for t in threads:
            t.join()
    return report
PY
