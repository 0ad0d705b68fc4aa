"""W3: memory of one idle env after reset, beside an idle bare-bwrap-shell floor.

Measured in a fresh Python process (this script re-runs itself with ``--child``):

- the sandbox processes: sum of Pss (and Rss) from /proc/<pid>/smaps_rollup over the outer
  bwrap plus every process of the sandbox's pid namespace (bwrap init, bash);
- the sandbox's cgroup charge (memory.usage_in_bytes / memory.current: tmpfs, page cache);
- the growth of the Python process's RSS from ``taskgym.make`` + ``reset`` + one step,
  from just after ``import taskgym`` (first env, with the imports it triggers) and per
  further env (mean over several).

Target: the sandbox processes' Pss under 10 MB.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ENV_ID, TASK_ID, Row, load_note, print_rows, table  # noqa: E402

TARGET_MB = 10.0


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def _session_pids(env: Any) -> list[int]:
    """Outer bwrap + every process in the session's pid namespace (see LocalSession)."""
    from _floor import sandbox_pids

    launched = env.unwrapped.session._proc
    return [launched.proc.pid, *sandbox_pids(launched.pidns)]


def _cgroup_mb(env: Any) -> float | None:
    cgroup = env.unwrapped.session._proc.cgroup
    if cgroup is None:
        return None
    for d in cgroup.dirs:
        for name in ("memory.usage_in_bytes", "memory.current"):
            path = d / name
            if path.exists():
                return int(path.read_text()) / (1 << 20)
    return None


def child(extra_envs: int) -> dict[str, Any]:
    """Runs in a fresh process; returns the figures as a dict."""
    import taskgym

    gc.collect()
    time.sleep(0.05)
    rss_before = _rss_mb()
    env = taskgym.make(ENV_ID)
    env.reset(options={"task_id": TASK_ID})
    env.step({"tool": "bash", "args": {"command": "echo hi"}})
    gc.collect()
    time.sleep(0.1)
    rss_one = _rss_mb()
    from _floor import floor_idle_memory, process_memory

    pids = _session_pids(env)
    names = [Path(f"/proc/{p}/comm").read_text().strip() for p in pids]
    sandbox = process_memory(pids)
    cgroup = _cgroup_mb(env)
    others = []
    for _ in range(extra_envs):
        e = taskgym.make(ENV_ID)
        e.reset(options={"task_id": TASK_ID})
        e.step({"tool": "bash", "args": {"command": "echo hi"}})
        others.append(e)
    gc.collect()
    time.sleep(0.1)
    rss_many = _rss_mb()
    sandbox_shared = process_memory(pids)  # the same sandbox, now sharing pages with others
    for e in [env, *others]:
        e.close()
    time.sleep(0.05)
    floor = floor_idle_memory()  # measured alone, once every env is gone
    return {
        "floor": floor,
        "sandbox": sandbox,
        "sandbox_with_others": sandbox_shared,
        "process_names": names,
        "cgroup_mb": cgroup,
        "rss_before_mb": rss_before,
        "rss_growth_first_mb": rss_one - rss_before,
        "rss_growth_per_extra_mb": (rss_many - rss_one) / max(1, extra_envs),
        "extra_envs": extra_envs,
    }


def run(quick: bool = False) -> list[Row]:
    extra = 3 if quick else 8
    print(f"idle memory (fresh process, {extra} extra envs); {load_note()}")
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", str(extra)],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the measuring process failed:\n{proc.stderr}")
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    sb, fl, shared = r["sandbox"], r["floor"], r["sandbox_with_others"]
    rows = [
        ["taskgym sandbox processes (" + ", ".join(r["process_names"]) + ")",
         f"{sb['pss_mb']:.2f}", f"{sb['rss_mb']:.2f}"],
        [f"  same sandbox, {r['extra_envs']} more envs alive", f"{shared['pss_mb']:.2f}",
         f"{shared['rss_mb']:.2f}"],
        [f"floor sandbox processes ({fl['processes']:.0f})", f"{fl['pss_mb']:.2f}",
         f"{fl['rss_mb']:.2f}"],
        ["taskgym sandbox cgroup charge (tmpfs, cache, kernel)",
         "-" if r["cgroup_mb"] is None else f"{r['cgroup_mb']:.2f}", ""],
        ["Python RSS after import taskgym (baseline)", "", f"{r['rss_before_mb']:.1f}"],
        ["Python RSS growth: first make + reset", "", f"{r['rss_growth_first_mb']:+.2f}"],
        ["Python RSS growth: per further env", "", f"{r['rss_growth_per_extra_mb']:+.2f}"],
    ]
    print(table(["what", "Pss MB", "Rss MB"], rows))
    passed = sb["pss_mb"] < TARGET_MB
    summary = [Row(
        "W3 idle sandbox processes, Pss (Rss) MB",
        f"{sb['pss_mb']:.2f} ({sb['rss_mb']:.1f})",
        f"{fl['pss_mb']:.2f} ({fl['rss_mb']:.1f})",
        f"{sb['pss_mb'] - fl['pss_mb']:+.2f} MB; host Python +"
        f"{r['rss_growth_first_mb']:.1f} first / +{r['rss_growth_per_extra_mb']:.2f} per env",
        f"< {TARGET_MB:g} MB",
        passed,
    )]
    print_rows("idle memory", summary)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer extra envs")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child)))
        return
    run(args.quick)


if __name__ == "__main__":
    main()
