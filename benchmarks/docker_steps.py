"""D1-D3: the docker backend's step, reset and idle memory, each beside its floor.

Measured in one run (rounds interleaved so machine load hits every layer alike):

- D1 step: ``bash`` ``echo hi`` through ``env.step`` on docker, against ``docker exec`` per
  command (the Docker SDK's exec_create + exec_start, and the ``docker exec`` CLI) and
  against a bare persistent ``docker exec -i bash`` in a container of the same image,
  ``echo hi; echo SENTINEL`` over its pipes (the floor).
  Targets: env.step - floor <= 0.3 ms; exec per command / env.step >= 100.
- D2 reset: ``env.reset`` with the warm pool (the pool refills while an episode runs; here
  a pause between resets stands for the episode) against a cold ``docker run --rm ...
  true`` of the same image. Target: cold / warm >= 5.
- D3 idle memory per started container: its cgroup's memory use plus its containerd shim's
  resident memory.

Needs a reachable engine and the images (``scripts/docker_setup.sh``).
"""

from __future__ import annotations

import argparse
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ENV_ID, TASK_ID, Row, load_note, median, ms, print_rows  # noqa: E402

import taskgym  # noqa: E402
from taskgym.sandbox import SandboxSpec  # noqa: E402
from taskgym.sandbox.docker import DockerBackend, DockerSession  # noqa: E402
from taskgym.sandbox.docker.images import env_image  # noqa: E402

IMAGE = env_image(ENV_ID)
ACTION: dict[str, Any] = {"tool": "bash", "args": {"command": "echo hi"}}


class PersistentExec:
    """The floor: one ``docker exec -i bash`` kept open, spoken to over its pipes."""

    def __init__(self, container_id: str) -> None:
        self.proc = subprocess.Popen(["docker", "exec", "-i", container_id, "bash"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        assert self.proc.stdin and self.proc.stdout
        self.fd_in, self.fd_out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        self.step()

    def step(self) -> None:
        os.write(self.fd_in, b"echo hi; echo SENTINEL\n")
        buf = b""
        poll = select.poll()
        poll.register(self.fd_out, select.POLLIN)
        while not buf.endswith(b"SENTINEL\n"):
            poll.poll(10_000)
            buf += os.read(self.fd_out, 65536)

    def close(self) -> None:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.close()
        self.proc.wait()
        self.proc.stdout.close()


def timed(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def bench_steps(rounds: int, exec_every: int) -> list[Row]:
    env = taskgym.make(ENV_ID, sandbox="docker", max_steps=10 * rounds)
    env.reset(options={"task_id": TASK_ID})
    session = env.unwrapped.session
    assert isinstance(session, DockerSession)
    api = session._backend.api
    floor_box = session._backend.start(SandboxSpec(image=IMAGE))
    assert isinstance(floor_box, DockerSession)
    floor_id = floor_box._container.id
    floor = PersistentExec(floor_id)

    def sdk_exec() -> None:
        exec_id = api.exec_create(floor_id, ["echo", "hi"], user="1000:1000")["Id"]
        api.exec_start(exec_id)

    def cli_exec() -> None:
        subprocess.run(["docker", "exec", floor_id, "echo", "hi"], capture_output=True,
                       check=True)

    times: dict[str, list[float]] = {"env.step": [], "floor": [], "sdk exec": [], "cli exec": []}
    for _ in range(50):  # warm up
        obs, *_ = env.step(ACTION)
        floor.step()
    assert obs["text"].startswith("hi"), obs["text"][:200]
    for index in range(rounds):
        times["env.step"].append(timed(lambda: env.step(ACTION)))
        times["floor"].append(timed(floor.step))
        if index % exec_every == 0:
            times["sdk exec"].append(timed(sdk_exec))
            times["cli exec"].append(timed(cli_exec))
    floor.close()
    floor_box.close()
    env.close()
    step, base = median(times["env.step"]), median(times["floor"])
    sdk, cli = median(times["sdk exec"]), median(times["cli exec"])
    print(f"\nD1 medians: env.step {ms(step):.3f} ms, persistent docker exec -i {ms(base):.3f} ms, "
          f"SDK exec per command {ms(sdk):.1f} ms, docker exec CLI {ms(cli):.1f} ms "
          f"({rounds} steps, {len(times['sdk exec'])} execs)")
    return [
        Row("D1 step: env.step echo hi", f"{ms(step):.3f} ms", f"{ms(base):.3f} ms (exec -i shell)",
            f"+{ms(step - base):.3f} ms", "<= +0.3 ms", ms(step - base) <= 0.3),
        Row("D1 step vs exec per command", f"{ms(step):.3f} ms", f"{ms(sdk):.1f} ms (SDK exec)",
            f"{sdk / step:.0f}x faster", ">= 100x", sdk / step >= 100),
        Row("D1 step vs docker exec CLI", f"{ms(step):.3f} ms", f"{ms(cli):.1f} ms (CLI)",
            f"{cli / step:.0f}x faster", ">= 100x", cli / step >= 100),
    ]


def bench_reset(rounds: int, pause: float) -> list[Row]:
    env = taskgym.make(ENV_ID, sandbox=DockerBackend(pool_size=2))
    env.reset(options={"task_id": TASK_ID})  # the first reset is cold and fills the pool
    warm: list[float] = []
    cold: list[float] = []
    for _ in range(rounds):
        time.sleep(pause)  # an episode: the pool refills meanwhile
        warm.append(timed(lambda: env.reset(options={"task_id": TASK_ID})))
        cold.append(timed(lambda: subprocess.run(
            ["docker", "run", "--rm", "--network", "none", "--cap-drop", "ALL", "--read-only",
             "--init", "-u", "1000:1000", IMAGE, "true"], capture_output=True, check=True)))
    env.close()
    w, c = median(warm), median(cold)
    print(f"\nD2 medians: reset with warm pool {ms(w):.1f} ms, cold docker run {ms(c):.1f} ms "
          f"({rounds} rounds)")
    return [Row("D2 reset (warm pool)", f"{ms(w):.1f} ms", f"{ms(c):.1f} ms (docker run)",
                f"{c / w:.1f}x faster", ">= 5x", c / w >= 5)]


def bench_memory(count: int) -> list[Row]:
    backend = DockerBackend(pool_size=0)
    sessions = [backend.start(SandboxSpec(image=IMAGE)) for _ in range(count)]
    time.sleep(1.0)
    cgroup, shim = [], []
    for session in sessions:
        assert isinstance(session, DockerSession)
        container = session._container
        memory_dir, _cpu = container.cgroups
        used = 0
        for name in ("memory.usage_in_bytes", "memory.current"):
            if (memory_dir / name).exists():
                used = int((memory_dir / name).read_text())
        cgroup.append(used)
        shim_pid = int(Path(f"/proc/{container.pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        status = Path(f"/proc/{shim_pid}/status").read_text()
        shim.append(int(next(line.split()[1] for line in status.splitlines()
                             if line.startswith("VmRSS:"))) * 1024)
    for session in sessions:
        session.close()
    backend.close()
    mb = 1 << 20
    total = median(cgroup) + median(shim)
    print(f"\nD3 medians over {count} idle containers: cgroup {median(cgroup) / mb:.1f} MB "
          f"(init, main, shell; page cache included), shim RSS {median(shim) / mb:.1f} MB")
    return [Row("D3 idle memory per container", f"{total / mb:.1f} MB",
                "cgroup + shim RSS", f"{median(cgroup) / mb:.1f} + {median(shim) / mb:.1f} MB",
                "(reported)", True)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000, help="steps per layer (D1)")
    parser.add_argument("--exec-every", type=int, default=20,
                        help="time one docker exec every this many steps (D1)")
    parser.add_argument("--resets", type=int, default=15, help="resets (D2)")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between resets (D2)")
    parser.add_argument("--containers", type=int, default=5, help="idle containers (D3)")
    args = parser.parse_args()
    print(load_note())
    rows = bench_steps(args.rounds, args.exec_every)
    rows += bench_reset(args.resets, args.pause)
    rows += bench_memory(args.containers)
    print_rows("docker backend", rows)
    print(load_note())
    return 0 if all(row.passed for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
