import json
import os
import random
import subprocess

import pytest

TOOL = "/app/todo.py"


def run(cwd, *args, env_db=None):
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
    if env_db is not None:
        env["TODO_DB"] = env_db
    p = subprocess.run(["/usr/bin/python3", TOOL, *args], cwd=str(cwd), env=env, capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def db_json(path):
    return json.dumps(json.loads(path.read_text()), sort_keys=True)


def fmt(t):
    line = f"{t['id']:>3} [{'x' if t['done'] else ' '}] {t['text']}"
    if t["due"]:
        line += f" (due {t['due']})"
    return line + "".join(f" #{g}" for g in t["tags"])


def test_add_list_and_file_format(tmp_path):
    assert run(tmp_path, "add", "buy", "milk", "--tag", "home") == (0, "added 1\n", "")
    assert run(tmp_path, "add", "pay", "rent", "--due", "2024-06-01", "--tag", "home", "--tag", "money", "--tag", "home") == (0, "added 2\n", "")
    assert run(tmp_path, "add", "file", "taxes", "--due", "2024-04-15") == (0, "added 3\n", "")
    expected = {"next_id": 4, "tasks": [
        {"id": 1, "text": "buy milk", "done": False, "due": None, "tags": ["home"]},
        {"id": 2, "text": "pay rent", "done": False, "due": "2024-06-01", "tags": ["home", "money"]},
        {"id": 3, "text": "file taxes", "done": False, "due": "2024-04-15", "tags": []},
    ]}
    assert db_json(tmp_path / "todo.json") == json.dumps(expected, sort_keys=True)
    assert run(tmp_path, "list") == (0, "  3 [ ] file taxes (due 2024-04-15)\n"
                                        "  2 [ ] pay rent (due 2024-06-01) #home #money\n"
                                        "  1 [ ] buy milk #home\n", "")
    assert run(tmp_path, "list", "--tag", "money") == (0, "  2 [ ] pay rent (due 2024-06-01) #home #money\n", "")


def test_done_remove_stats_and_id_reuse(tmp_path):
    db = tmp_path / "sub" / "my.json"
    db.parent.mkdir()
    for i in range(1, 4):
        assert run(tmp_path, "--db", "sub/my.json", "add", f"task {i}") == (0, f"added {i}\n", "")
    assert run(tmp_path, "--db", "sub/my.json", "done", "3", "1", "3") == (0, "done 3\ndone 1\ndone 3\n", "")
    assert run(tmp_path, "--db", "sub/my.json", "list") == (0, "  2 [ ] task 2\n", "")
    assert run(tmp_path, "--db", "sub/my.json", "list", "--all") == (0, "  1 [x] task 1\n  2 [ ] task 2\n  3 [x] task 3\n", "")
    assert run(tmp_path, "--db", "sub/my.json", "stats") == (0, "open: 1, done: 2\n", "")
    assert run(tmp_path, "--db", "sub/my.json", "remove", "3") == (0, "removed 3\n", "")
    assert run(tmp_path, "--db", "sub/my.json", "add", "again") == (0, "added 4\n", "")
    assert run(tmp_path, "--db", "sub/my.json", "list", "--all") == (0, "  1 [x] task 1\n  2 [ ] task 2\n  4 [ ] again\n", "")
    assert not (tmp_path / "todo.json").exists()
    assert sorted(os.listdir(db.parent)) == ["my.json"]


def test_env_var_and_empty_listing(tmp_path):
    assert run(tmp_path, "list", env_db="e.json") == (0, "no tasks\n", "")
    assert run(tmp_path, "stats", env_db="e.json") == (0, "open: 0, done: 0\n", "")
    assert not (tmp_path / "e.json").exists()
    assert run(tmp_path, "add", "x", env_db="e.json") == (0, "added 1\n", "")
    assert (tmp_path / "e.json").exists() and not (tmp_path / "todo.json").exists()
    assert run(tmp_path, "--db", "o.json", "list", env_db="e.json") == (0, "no tasks\n", "")
    assert run(tmp_path, "list", "--tag", "nope", env_db="e.json") == (0, "no tasks\n", "")


def test_unknown_ids_change_nothing(tmp_path):
    run(tmp_path, "add", "a")
    run(tmp_path, "add", "b")
    before = (tmp_path / "todo.json").read_bytes()
    assert run(tmp_path, "done", "1", "7", "9") == (1, "", "todo: no such task: 7\n")
    assert run(tmp_path, "remove", "5") == (1, "", "todo: no such task: 5\n")
    assert (tmp_path / "todo.json").read_bytes() == before


@pytest.mark.parametrize("content", ["{not json", "[]", '{"next_id": 1}', '{"next_id": "1", "tasks": []}',
                                     '{"next_id": 2, "tasks": [{"id": 1, "text": "x"}]}'])
def test_corrupt_database(tmp_path, content):
    (tmp_path / "bad.json").write_text(content)
    assert run(tmp_path, "--db", "bad.json", "list") == (1, "", "todo: corrupt database: bad.json\n")
    assert run(tmp_path, "--db", "bad.json", "add", "x") == (1, "", "todo: corrupt database: bad.json\n")
    assert (tmp_path / "bad.json").read_text() == content


@pytest.mark.parametrize("args", [[], ["frobnicate"], ["add"], ["add", "x", "--due", "2024-02-30"],
                                  ["add", "x", "--due", "20240101"], ["add", "x", "--due", "2024-1-05"],
                                  ["add", "x", "--tag", "Home"], ["add", "x", "--tag", "a b"], ["done"], ["done", "one"],
                                  ["remove"], ["remove", "1.5"], ["list", "--tag"]])
def test_usage_errors(tmp_path, args):
    run(tmp_path, "add", "seed")
    before = (tmp_path / "todo.json").read_bytes()
    rc, out, err = run(tmp_path, *args)
    assert (rc, out) == (2, "") and err.strip() != ""
    assert (tmp_path / "todo.json").read_bytes() == before


def test_randomized_session(tmp_path):
    rng = random.Random(1234)
    model, next_id = [], 1
    for step in range(40):
        r = rng.random()
        if r < 0.45 or not model:
            words = [rng.choice(["fix", "call", "email", "read", "plan"]), rng.choice(["bob", "docs", "bug", "trip"])]
            args = ["add", *words]
            due = None
            if rng.random() < 0.6:
                due = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
                args += ["--due", due]
            tags = []
            for _ in range(rng.randint(0, 3)):
                g = rng.choice(["work", "home", "x-1"])
                args += ["--tag", g]
                if g not in tags:
                    tags.append(g)
            assert run(tmp_path, *args) == (0, f"added {next_id}\n", "")
            model.append({"id": next_id, "text": " ".join(words), "done": False, "due": due, "tags": tags})
            next_id += 1
        elif r < 0.65:
            t = rng.choice(model)
            t["done"] = True
            assert run(tmp_path, "done", str(t["id"])) == (0, f"done {t['id']}\n", "")
        elif r < 0.75:
            t = rng.choice(model)
            model.remove(t)
            assert run(tmp_path, "remove", str(t["id"])) == (0, f"removed {t['id']}\n", "")
        else:
            show_all = rng.random() < 0.5
            tag = rng.choice([None, "work", "home"])
            args = ["list"] + (["--all"] if show_all else []) + (["--tag", tag] if tag else [])
            sel = [t for t in model if (show_all or not t["done"]) and (tag is None or tag in t["tags"])]
            sel.sort(key=lambda t: (t["due"] is None, t["due"] or "", t["id"]))
            out = "".join(fmt(t) + "\n" for t in sel) or "no tasks\n"
            assert run(tmp_path, *args) == (0, out, ""), args
    assert db_json(tmp_path / "todo.json") == json.dumps({"next_id": next_id, "tasks": model}, sort_keys=True)
