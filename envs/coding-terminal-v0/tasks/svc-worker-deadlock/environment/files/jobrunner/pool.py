"""jobrunner.pool: run jobs on a pool of worker threads.

Used by the ingest service: `jobs` is usually a generator reading job lines from a socket or a pipe,
so new jobs can arrive slowly and in bursts.
"""
import queue
import threading


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
            try:
                job_id, payload, attempt = q.get(timeout=0.2)
            except queue.Empty:
                return  # queue drained: nothing left to do
            lock.acquire()
            try:
                result = handler(payload)
            except Exception as exc:
                if attempt < retries:
                    q.put((job_id, payload, attempt + 1))
                else:
                    report.errors[job_id] = repr(exc)
                    lock.release()
                continue
            report.results[job_id] = result
            lock.release()
            q.task_done()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(workers)]
    for t in threads:
        t.start()
    for job_id, payload in jobs:
        q.put((job_id, payload, 0))
    q.join()
    return report
