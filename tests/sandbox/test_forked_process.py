"""A process forked from one that holds sandboxes (``os.fork``; multiprocessing's ``fork``,
which is how AsyncVectorEnv starts its workers) keeps its hands off the parent's: its exit
closes none of the parent's sessions, spares or snapshots, and on docker it takes no
container from the parent's warm pool (before, parent and child took the same one, and the
parent's start broke the child's running episode) and removes its own containers.

Each program runs in a fresh interpreter (not forked from pytest's, whose exit handlers a
child must not run), and its child exits the ordinary way: its exit handlers run, and it
drops what it inherited."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest


def _report(program: str) -> dict[str, Any]:
    """The JSON report ``program`` prints last, run in a fresh interpreter."""
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    report: dict[str, Any] = json.loads(run.stdout.splitlines()[-1])
    return report


_LOCAL_PROGRAM = r"""
import gc, json, os, sys
import taskgym
env = taskgym.make("coding-terminal-v0")
env.reset(seed=0)
env.step({"tool": "bash", "args": {"command": "echo parent > mine.txt"}})
snap = env.unwrapped.snapshot()
children = env.unwrapped.fork(2)  # the env keeps spares for the next fork
for child in children:
    child.close()
pid = os.fork()
if pid == 0:
    del env, snap
    gc.collect()
    sys.exit(0)
_, status = os.waitpid(pid, 0)
shown = env.step({"tool": "bash", "args": {"command": "cat mine.txt"}})[0]["text"]
env.unwrapped.restore(snap)
restored = env.step({"tool": "bash", "args": {"command": "cat mine.txt"}})[0]["text"]
again = [c.step({"tool": "bash", "args": {"command": "cat mine.txt"}})[0]["text"]
         for c in env.unwrapped.fork(2)]
print(json.dumps({"status": status, "shown": shown, "restored": restored, "forked": again}))
"""


@pytest.mark.sandbox
def test_a_forked_childs_exit_closes_none_of_the_parents_local_sandboxes() -> None:
    report = _report(_LOCAL_PROGRAM)
    assert report["status"] == 0
    assert report["shown"].startswith("parent\n"), report  # the session
    assert report["restored"].startswith("parent\n"), report  # the snapshot's folder
    assert [text[:7] for text in report["forked"]] == ["parent\n"] * 2, report  # the spares


_DOCKER_PROGRAM = r"""
import json, os, sys, time
from taskgym.sandbox import SandboxSpec
from taskgym.sandbox.docker import DockerBackend
from taskgym.sandbox.docker.container import OWNER_LABEL

spec = SandboxSpec()
parent = DockerBackend.shared()
shape = parent.shape(spec)

def pooled():
    with parent.pool.lock:
        return [container.id for container, _ in parent.pool.ready.get(shape, [])]

parent.start(spec).close()  # the pool fills for this shape in the background
deadline = time.monotonic() + 120
while len(pooled()) < parent.pool.size and time.monotonic() < deadline:
    time.sleep(0.1)
report = {"pooled": pooled(), "parent_owner": parent.owner}
to_parent, from_child = os.pipe()
to_child, from_parent = os.pipe()
pid = os.fork()
if pid == 0:  # an episode through sandbox="docker"'s backend, a file left in its sandbox
    os.close(to_parent)
    os.close(from_parent)
    backend = DockerBackend.shared()
    session = backend.start(spec)
    wrote = session.exec("echo child > from-child.txt").exit_code
    labelled = backend.api.containers(filters={"label": f"{OWNER_LABEL}={backend.owner}"})
    os.write(from_child, json.dumps({"same_backend": backend is parent, "owner": backend.owner,
                                     "wrote": wrote, "labelled": len(labelled)}).encode())
    os.close(from_child)
    os.read(to_child, 1)  # the episode stays open while the parent starts one
    still = session.exec("cat from-child.txt").stdout  # the parent's start left it alone
    session.close()
    sys.exit(0 if still == "child\n" else 3)  # the exit handlers run, as in any program's
os.close(from_child)
os.close(to_child)
with os.fdopen(to_parent, "rb") as reader:
    report["child"] = json.loads(reader.read() or b"null")
session = parent.start(spec)  # from the parent's pool, while the child's episode runs
seen = session.exec("cat from-child.txt")
report["seen"] = [seen.exit_code, seen.stdout]
session.close()
os.close(from_parent)
_, status = os.waitpid(pid, 0)
report["child_status"] = status
report["still_running"] = [parent.api.inspect_container(c)["State"]["Running"]
                           for c in report["pooled"][:-1]]  # the one not taken
if report["child"]:
    owner = report["child"]["owner"]
    report["child_left"] = len(parent.api.containers(
        all=True, filters={"label": f"{OWNER_LABEL}={owner}"}))
print(json.dumps(report))
"""


@pytest.mark.docker
def test_a_forked_child_neither_takes_nor_closes_the_parents_containers() -> None:
    report = _report(_DOCKER_PROGRAM)
    assert report["pooled"], "the parent's warm pool did not fill in 120 s"  # (or is off)
    child = report["child"]
    assert child is not None and report["child_status"] == 0, report  # (it kept its file)
    assert not child["same_backend"] and child["owner"] != report["parent_owner"]
    assert child["wrote"] == 0
    assert child["labelled"] >= 1  # its own containers (its sandbox, its pool's), as its own
    assert report["still_running"] == [True] * (len(report["pooled"]) - 1)  # its exit left them
    assert report["child_left"] == 0  # and removed its own containers
    exit_code, shown = report["seen"]
    assert exit_code != 0 and "child" not in shown, report["seen"]  # no trace of its episode


_GC_IN_THE_HOOKS = r"""
import gc, json, os, time, weakref
from taskgym.sandbox.host import booting

# a job thread (whose child hook allocates) and a finalizer that takes the warm graders'
from taskgym.sandbox.grading import warm

# a job thread (whose child hook allocates) and a finalizer that takes the warm graders'
# lock, which the fork holds: the situation of a dropped env's lease collected there
booting.JobThread("test-job-thread", run=lambda job: None)
class Cycle:
    pass
def dropped() -> None:
    cycle = Cycle()
    cycle.me = cycle
    weakref.finalize(cycle, lambda: warm.LOCK.acquire() and warm.LOCK.release())
gc.set_threshold(1)  # a collection at nearly every allocation
for _ in range(50):
    dropped()
pid = os.fork()
if pid == 0:
    os._exit(0)
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.05)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    status = None
print(json.dumps({"child": status}))
"""


def test_a_collection_during_the_fork_takes_no_lock_the_fork_holds() -> None:
    """taskgym's at-fork hooks run with the collector off: a finalizer needing a lock held
    across the fork (a dropped env's warm-grader lease) waits until the hooks are done, in
    the parent as in the child, instead of hanging the child."""
    assert _report(_GC_IN_THE_HOOKS) == {"child": 0}


_FORKS_FROM_TWO_THREADS = r"""
import gc, json, os, threading
from taskgym.sandbox.host.at_fork import at_fork

first_in_window, let_go = threading.Event(), threading.Event()
def hold_the_first_fork() -> None:
    if threading.current_thread().name == "first":
        first_in_window.set()
        let_go.wait(10)
at_fork(before=hold_the_first_fork)

def fork() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
first = threading.Thread(target=fork, name="first")
first.start()
first_in_window.wait(10)
second = threading.Thread(target=fork, name="second")  # forks while the first is in its hooks
second.start()
second.join(0.5)
let_go.set()
first.join(20)
second.join(20)
print(json.dumps({"collecting": gc.isenabled(), "stuck": first.is_alive() or second.is_alive()}))
"""


def test_forks_from_two_threads_leave_the_collector_on() -> None:
    """A fork whose hooks start while another thread's are running waits for them: neither
    takes the other's collector, turned off, as the state to restore."""
    assert _report(_FORKS_FROM_TWO_THREADS) == {"collecting": True, "stuck": False}
