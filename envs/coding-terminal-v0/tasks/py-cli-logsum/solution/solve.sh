#!/bin/bash
set -e
cat > /app/logsum.py <<'PY'
#!/usr/bin/env python3
"""Summarise access logs."""
import argparse
import datetime
import gzip
import json
import math
import re
import sys

LINE = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z) ([A-Z]+) (/\S*) (\d{3}) (\d+)ms (\d+)")
TS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


def valid_ts(text):
    if not TS.fullmatch(text):
        return False
    try:
        datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return False
    return True


def ts_arg(text):
    if not valid_ts(text):
        raise argparse.ArgumentTypeError(f"invalid timestamp: {text}")
    return text


def status_arg(text):
    if re.fullmatch(r"[1-5]xx", text) or (re.fullmatch(r"\d{3}", text) and 100 <= int(text) <= 599):
        return text
    raise argparse.ArgumentTypeError(f"invalid status: {text}")


def top_arg(text):
    if not re.fullmatch(r"\d+", text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"invalid --top: {text}")
    return int(text)


class Fail(Exception):
    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def parse_line(line):
    m = LINE.fullmatch(line)
    if not m or not valid_ts(m.group(1)):
        return None
    status = int(m.group(4))
    if not 100 <= status <= 599:
        return None
    return m.group(1), m.group(3), status, int(m.group(5)), int(m.group(6))


def normalise(path):
    path = path.split("?", 1)[0]
    return "/".join("{id}" if seg.isdigit() and seg.isascii() else seg for seg in path.split("/"))


def read_lines(name):
    if name == "-":
        return "<stdin>", sys.stdin.read().split("\n")
    try:
        if name.endswith(".gz"):
            with gzip.open(name, "rt", encoding="utf-8") as fh:
                data = fh.read()
        else:
            with open(name, encoding="utf-8") as fh:
                data = fh.read()
    except (OSError, EOFError, UnicodeDecodeError):
        raise Fail(f"cannot read {name}", 2)
    return name, data.split("\n")


def main(argv=None):
    p = argparse.ArgumentParser(prog="logsum")
    p.add_argument("files", nargs="*")
    p.add_argument("--since", type=ts_arg)
    p.add_argument("--until", type=ts_arg)
    p.add_argument("--status", type=status_arg, action="append", default=[])
    p.add_argument("--top", type=top_arg, default=5)
    p.add_argument("--strict", action="store_true")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    files = args.files or ["-"]
    try:
        sources = [read_lines(f) for f in files]
        records, skipped = [], 0
        for label, lines in sources:
            for lineno, raw in enumerate(lines, 1):
                line = raw.rstrip("\r")
                if not line.strip():
                    continue
                rec = parse_line(line)
                if rec is None:
                    if args.strict:
                        raise Fail(f"{label}:{lineno}: malformed line", 3)
                    skipped += 1
                    continue
                records.append(rec)
    except Fail as exc:
        print(f"logsum: {exc}", file=sys.stderr)
        return exc.code

    def keep(rec):
        ts, _, status, _, _ = rec
        if args.since and ts < args.since:
            return False
        if args.until and ts >= args.until:
            return False
        if args.status:
            s = str(status)
            return any(f == s or (f.endswith("xx") and f[0] == s[0]) for f in args.status)
        return True

    kept = [r for r in records if keep(r)]
    status = {f"{c}xx": 0 for c in range(1, 6)}
    counts = {}
    for _, path, code, _, _ in kept:
        status[f"{code // 100}xx"] += 1
        key = normalise(path)
        counts[key] = counts.get(key, 0) + 1
    durations = sorted(r[3] for r in kept)
    latency = None
    if durations:
        n = len(durations)
        pick = lambda q: durations[math.ceil(q * n / 100) - 1]
        latency = {"p50": pick(50), "p90": pick(90), "p99": pick(99), "max": durations[-1]}
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[: args.top]
    total_bytes = sum(r[4] for r in kept)
    if args.json:
        print(json.dumps({"requests": len(kept), "skipped": skipped, "bytes": total_bytes, "status": status,
                          "latency_ms": latency, "top_paths": [[k, v] for k, v in top]}))
    else:
        out = [f"requests: {len(kept)}", f"skipped: {skipped}", f"bytes: {total_bytes}",
               "status: " + " ".join(f"{k}={v}" for k, v in status.items())]
        if latency:
            out.append("latency_ms: " + " ".join(f"{k}={v}" for k, v in latency.items()))
        else:
            out.append("latency_ms: n/a")
        out.append("top paths:")
        out.extend(f"  {k} {v}" for k, v in top)
        print("\n".join(out))
    return 0 if kept else 1


if __name__ == "__main__":
    sys.exit(main())
PY
