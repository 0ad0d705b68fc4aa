#!/bin/bash
set -e
cat > /app/todo.py <<'PY'
#!/usr/bin/env python3
"""Small todo manager storing its data in a JSON file."""
import argparse
import datetime
import json
import os
import re
import sys
import tempfile


class Fail(Exception):
    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def due_date(text):
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        raise argparse.ArgumentTypeError(f"invalid date: {text}")
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid date: {text}") from None
    return text


def tag(text):
    if not re.fullmatch(r"[a-z0-9-]+", text):
        raise argparse.ArgumentTypeError(f"invalid tag: {text}")
    return text


def build_parser():
    p = argparse.ArgumentParser(prog="todo")
    p.add_argument("--db")
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("add")
    a.add_argument("text", nargs="+")
    a.add_argument("--due", type=due_date)
    a.add_argument("--tag", type=tag, action="append", default=[])
    l = sub.add_parser("list")
    l.add_argument("--all", action="store_true")
    l.add_argument("--tag", type=tag)
    d = sub.add_parser("done")
    d.add_argument("ids", type=int, nargs="+")
    r = sub.add_parser("remove")
    r.add_argument("id", type=int)
    sub.add_parser("stats")
    return p


def valid(db):
    if not isinstance(db, dict) or set(db) != {"next_id", "tasks"}:
        return False
    if type(db["next_id"]) is not int or not isinstance(db["tasks"], list):
        return False
    for t in db["tasks"]:
        if not isinstance(t, dict) or set(t) != {"id", "text", "done", "due", "tags"}:
            return False
        if type(t["id"]) is not int or not isinstance(t["text"], str) or type(t["done"]) is not bool:
            return False
        if t["due"] is not None and not isinstance(t["due"], str):
            return False
        if not isinstance(t["tags"], list) or not all(isinstance(x, str) for x in t["tags"]):
            return False
    return True


def load(path):
    if not os.path.exists(path):
        return {"next_id": 1, "tasks": []}
    try:
        with open(path, encoding="utf-8") as fh:
            db = json.load(fh)
    except (ValueError, OSError):
        raise Fail(f"corrupt database: {path}")
    if not valid(db):
        raise Fail(f"corrupt database: {path}")
    return db


def save(path, db):
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".todo-", dir=directory)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(db, fh, indent=2)
        fh.write("\n")
    os.replace(tmp, path)


def find(db, task_id):
    for t in db["tasks"]:
        if t["id"] == task_id:
            return t
    raise Fail(f"no such task: {task_id}")


def fmt(t):
    line = f"{t['id']:>3} [{'x' if t['done'] else ' '}] {t['text']}"
    if t["due"]:
        line += f" (due {t['due']})"
    for g in t["tags"]:
        line += f" #{g}"
    return line


def run(args):
    path = args.db or os.environ.get("TODO_DB") or "todo.json"
    db = load(path)
    out = []
    if args.command == "add":
        tags = list(dict.fromkeys(args.tag))
        tid = db["next_id"]
        db["tasks"].append({"id": tid, "text": " ".join(args.text), "done": False, "due": args.due, "tags": tags})
        db["next_id"] = tid + 1
        save(path, db)
        out.append(f"added {tid}")
    elif args.command == "list":
        tasks = [t for t in db["tasks"] if (args.all or not t["done"]) and (args.tag is None or args.tag in t["tags"])]
        tasks.sort(key=lambda t: (t["due"] is None, t["due"] or "", t["id"]))
        out.extend(fmt(t) for t in tasks)
        if not tasks:
            out.append("no tasks")
    elif args.command == "done":
        tasks = [find(db, i) for i in args.ids]
        for t in tasks:
            t["done"] = True
        save(path, db)
        out.extend(f"done {i}" for i in args.ids)
    elif args.command == "remove":
        t = find(db, args.id)
        db["tasks"].remove(t)
        save(path, db)
        out.append(f"removed {args.id}")
    elif args.command == "stats":
        n_done = sum(1 for t in db["tasks"] if t["done"])
        out.append(f"open: {len(db['tasks']) - n_done}, done: {n_done}")
    return out


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        lines = run(args)
    except Fail as exc:
        print(f"todo: {exc}", file=sys.stderr)
        return exc.code
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
PY
