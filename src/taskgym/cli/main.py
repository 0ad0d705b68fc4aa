"""``taskgym list | run | eval | doctor | images build | env check | task check | serve | mcp``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from taskgym.cli.mcp import add_mcp_parser
from taskgym.cli.options import add_env_options, positive_int
from taskgym.cli.serve import add_serve_parser

__all__ = ["main"]


def _env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"sandbox": args.sandbox}
    if args.tasks:
        kwargs["tasks"] = args.tasks
    if args.max_steps:
        kwargs["max_steps"] = args.max_steps
    return kwargs


def _agent_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    if args.agent == "openai":
        return {"base_url": args.base_url, "model": args.model, "images": args.images}
    if args.agent == "scripted":
        if not args.actions:
            raise SystemExit("--agent scripted needs --actions FILE (a JSON list of actions)")
        return {"actions": _read_actions(args.actions)}
    if args.agent == "random" and args.seed is not None:
        return {"seed": args.seed}
    return {}


def _read_actions(path: str) -> list[Any]:
    """The JSON list of actions in ``path`` (``--actions``), or a ConfigError saying what is wrong."""
    from taskgym.errors import ConfigError

    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"--actions {path}: cannot read it ({exc.strerror or exc}); give a "
                          "file holding a JSON list of actions") from None
    try:
        actions = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--actions {path}: not valid JSON ({exc.msg} at line {exc.lineno}, "
                          f"column {exc.colno}); it must hold a JSON list of actions such as "
                          '[{"tool": "bash", "args": {"command": "ls"}}]') from None
    if not isinstance(actions, list):
        raise ConfigError(f"--actions {path}: holds a JSON {type(actions).__name__}, not a list "
                          "of actions")
    return actions


def cmd_list(args: argparse.Namespace) -> int:
    import taskgym

    envs = taskgym.list_envs()
    width = max(map(len, envs))
    for env_id, description in envs.items():
        print(f"{env_id:<{width}}  {description}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    import taskgym
    from taskgym.agents import make_agent
    from taskgym.evaluation import run_episode

    agent_kwargs = _agent_kwargs(args)  # a bad --actions file fails before any env exists
    env = taskgym.make(args.env_id, **_env_kwargs(args))
    agent = make_agent(args.agent, env, **agent_kwargs)
    first = True

    def show(action: Any, obs: dict[str, str], info: dict[str, Any]) -> None:
        text = action if isinstance(action, str) else json.dumps(action, default=str)
        print(f"\n>>> step {info.get('step')}: {text[:2000]}")
        print(obs["text"])

    original_reset = env.reset

    def reset(**kw: Any) -> Any:
        nonlocal first
        obs, info = original_reset(**kw)
        if first:
            print(f"=== {args.env_id} / task {info['task_id']} / agent {args.agent}")
            print(obs["text"])
            first = False
        return obs, info

    env.reset = reset  # type: ignore[method-assign]
    try:
        record = run_episode(env, agent, seed=args.seed, task_id=args.task, on_step=show)
    finally:
        env.close()
    print(f"\n=== score {record.score:.3f} ({'success' if record.success else 'failure'}), "
          f"{record.steps} steps, {record.wall_sec:.2f}s" + (f": {record.reason}" if record.reason else ""))
    return 0


EXIT_NO_VERDICT = 1
"""``taskgym eval``: an episode had no verdict (the environment failed it, a crash included)."""
EXIT_ORACLE_NO_VERDICT = 3
"""``taskgym eval --agent oracle``: the oracle had an episode with no verdict, so this machine
cannot grade the env (what ``taskgym doctor`` and the listed reasons say to fix)."""
EVAL_EXIT_STATUS = """\
exit status:
  0  every episode was graded (whatever its score)
  1  some episode had no verdict: the environment failed it (a missing grader dependency,
     a sandbox that did not start, a crash); the rates above are over graded episodes
  2  taskgym refused the command (a bad option, an unknown env) before any episode ran
  3  the agent is the oracle and some episode had no verdict: this machine cannot grade
     the env as it is (see the reasons listed, and taskgym doctor)"""


def cmd_eval(args: argparse.Namespace) -> int:
    import taskgym

    output = args.output or f"taskgym-eval-{args.env_id}-{args.agent}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    results = taskgym.evaluate(
        args.env_id, agent=args.agent, episodes=args.episodes, workers=args.workers,
        output=output, agent_kwargs=_agent_kwargs(args),
        seeds=(range(args.seed, args.seed + args.episodes) if args.seed is not None and args.episodes
               else None),
        **_env_kwargs(args))
    print()
    print(results.table())
    failures = [r for r in results.records if r.graded and not r.success]
    if failures and args.agent == "oracle":
        print("\noracle episodes that did not succeed:")
        for r in failures:
            print(f"  {r.task_id} (seed {r.seed}): {r.reason or r.components}")
    no_verdict = [r for r in results.records if not r.graded]
    if no_verdict:
        print("\nepisodes with no verdict (the environment failed, not the agent):")
        for r in no_verdict:
            print(f"  {r.task_id} (seed {r.seed}) [{r.failure}]: {r.error or r.reason}")
    print(f"\nevery episode: {output}")
    if no_verdict and args.agent == "oracle":
        return EXIT_ORACLE_NO_VERDICT
    return EXIT_NO_VERDICT if no_verdict else 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from taskgym.doctor import run_checks
    from taskgym.sandbox import reap

    if args.reap:
        removed = reap()
        for path in removed:
            print(f"reaped {path}")
        print(f"reaped {len(removed)} leftover(s) of dead runs\n")
    checks = run_checks()
    width = max(len(c.name) for c in checks)
    for check in checks:
        mark = "ok " if check.ok else "-- " if check.optional else "NO "
        print(f"{mark} {check.name:<{width}}  {check.detail}")
        if not check.ok and check.fix:
            print(f"    {'':<{width}}  fix: {check.fix}")
    failed = [c for c in checks if not (c.ok or c.optional)]
    if any(c.optional and not c.ok for c in checks):
        print("\n--: optional, not needed for coding-terminal-v0 on the local sandbox; "
              "the fix line says what adds it")
    if failed:
        print(f"NO: {len(failed)} required check(s) failed; taskgym cannot run episodes "
              "here until they are fixed")
    return 1 if failed else 0


def cmd_images_build(args: argparse.Namespace) -> int:
    import docker
    from tqdm import tqdm

    from taskgym.core.registry import image_folders
    from taskgym.errors import SandboxUnavailableError
    from taskgym.sandbox.docker import DockerBackend
    from taskgym.sandbox.docker.image_set import HOST_PYTHON_TARGET, build_images, image_targets
    from taskgym.sandbox.docker.images import add_image_folders

    problem = DockerBackend.check()
    if problem is not None:
        raise SandboxUnavailableError(problem)
    add_image_folders(image_folders())  # a plugin's own images too
    client = docker.from_env(timeout=600)
    targets = image_targets(args.env_id)
    failed = []
    with tqdm(total=len(targets), desc="taskgym images", file=sys.stderr, dynamic_ncols=True,
              bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}]") as bar:
        for outcome in build_images(client, targets, rebuild_base=args.rebuild_base,
                                    rebuild_python=args.env_id == HOST_PYTHON_TARGET,
                                    log=lambda line: tqdm.write(line, file=sys.stderr)):
            bar.update()
            if outcome.error is not None:
                failed.append(outcome)
                tqdm.write(f"FAILED {outcome.tag} ({outcome.target}): {outcome.error}",
                           file=sys.stderr)
    for outcome in failed:
        print(f"FAILED {outcome.tag}: {outcome.error.splitlines()[0] if outcome.error else ''}",
              file=sys.stderr)
    print(f"{len(targets) - len(failed)} of {len(targets)} images ready"
          f"{'' if not failed else f'; {len(failed)} failed (their causes are above)'}")
    return 1 if failed else 0


def cmd_task_check(args: argparse.Namespace) -> int:
    import taskgym
    from taskgym.checks import oracle_then_null

    env = taskgym.make(args.env, tasks=args.path, sandbox=args.sandbox)
    base = env.unwrapped
    assert isinstance(base, taskgym.TaskEnv)
    ids = base.task_set.ids()
    bad = 0
    try:
        for task_id in ids:
            problems = []
            for attempt in (1, 2):
                problems += [f"run {attempt}: {p}" for p in oracle_then_null(env, task_id=task_id)[2]]
            status = "ok  " if not problems else "FAIL"
            print(f"{status} {task_id}")
            for p in problems:
                print(f"     {p}")
            bad += bool(problems)
    finally:
        env.close()
    print(f"{len(ids) - bad} of {len(ids)} tasks pass: oracle scores 1 and null scores 0, twice")
    return 1 if bad else 0


def cmd_env_check(args: argparse.Namespace) -> int:
    import taskgym

    kwargs: dict[str, Any] = {"sandbox": args.sandbox}
    if args.tasks:
        kwargs["tasks"] = args.tasks
    report = taskgym.check_task_env(args.env_id, tasks_per_set=args.tasks_per_set,
                                    grades=args.grades, **kwargs)
    width = max(map(len, report))
    for name, outcome in report.items():
        mark = "ok  " if outcome == "ok" else "FAIL"
        first, *rest = outcome.splitlines() or [""]
        print(f"{mark} {name}" if outcome == "ok" else f"{mark} {name:<{width}}  {first}")
        for line in rest:
            print(f"     {line}")
    passed = sum(outcome == "ok" for outcome in report.values())
    print(f"{passed} of {len(report)} checks pass for {args.env_id}")
    return 0 if passed == len(report) else 1


def build_parser() -> argparse.ArgumentParser:
    from taskgym import __version__

    parser = argparse.ArgumentParser(
        prog="taskgym", description="Task-sandbox environments for RL of LLM agents.")
    parser.add_argument("--version", action="version", version=f"taskgym {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("list", help="list registered envs").set_defaults(func=cmd_list)

    def episode_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("env_id")
        p.add_argument("--agent", default="oracle",
                       choices=["oracle", "null", "random", "scripted", "openai"])
        add_env_options(p)
        p.add_argument("--seed", type=int)
        p.add_argument("--base-url", help="OpenAI-compatible server (agent openai)")
        p.add_argument("--model", help="model name (agent openai)")
        p.add_argument("--images", action="store_true",
                       help="send the images tools return to the model (agent openai; "
                            "vision models only)")
        p.add_argument("--actions", help="JSON list of actions (agent scripted)")

    run = sub.add_parser("run", help="play one episode and print its transcript")
    episode_options(run)
    run.add_argument("--task", help="task id")
    run.set_defaults(func=cmd_run)

    ev = sub.add_parser("eval", help="evaluate an agent over many episodes",
                        description="Evaluate an agent over many episodes: success rate, mean "
                        "score and step success rate over the graded episodes, the no-verdict "
                        "rate and its classes beside them, every episode in a JSONL file.",
                        epilog=EVAL_EXIT_STATUS,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    episode_options(ev)
    ev.add_argument("--episodes", type=positive_int,
                    help="default: every task of a finite set once")
    ev.add_argument("--workers", type=positive_int, default=2,
                    help="parallel episodes, one env each (default: 2)")
    ev.add_argument("--output", help="JSONL file of every episode")
    ev.set_defaults(func=cmd_eval)

    doctor = sub.add_parser("doctor", help="what can run here, and how to fix what cannot")
    doctor.add_argument("--reap", action="store_true",
                        help="first remove the cgroups and folders that sandboxes of dead "
                             "runs left (a controller killed by SIGKILL, say)")
    doctor.set_defaults(func=cmd_doctor)

    images = sub.add_parser("images", help="container images of the docker backend")
    images_sub = images.add_subparsers(dest="images_command", required=True)
    build = images_sub.add_parser(
        "build", help="build taskgym/base offline (debootstrap + docker import), the "
                      "host-python image of the Python running this command when an env needs "
                      "it (renewed when made from another Python or before a package installed "
                      "since), then the image of one env or of every env with an "
                      "envs/<id>/Dockerfile; a failed image does not stop the others "
                      "(exit status 1); tags in $TASKGYM_IMAGE_NAMESPACE (default taskgym)")
    build.add_argument("env_id", nargs="?", help="an env id, or host-python: (re)build the "
                       "image for envs that use taskgym's own Python and its packages (large)")
    build.add_argument("--rebuild-base", action="store_true",
                       help="run debootstrap again even if taskgym/base exists")
    build.set_defaults(func=cmd_images_build)

    env_parser = sub.add_parser("env", help="env tools")
    env_sub = env_parser.add_subparsers(dest="env_command", required=True)
    env_check = env_sub.add_parser(
        "check", help="every promise of a taskgym env: Gymnasium's check_env, tool schemas, "
                      "oracle 1 / null 0, 500 garbage actions, limits, seeding, clean close, "
                      "the verifier's contract (malformed submissions, one verdict per state)")
    env_check.add_argument("env_id")
    env_check.add_argument("--sandbox", default="local")
    env_check.add_argument("--tasks", help="task folder(s), or a named set (default: curated)")
    env_check.add_argument("--tasks-per-set", type=int, default=2,
                           help="tasks of the set and of each generator that oracle and null play")
    env_check.add_argument("--grades", type=positive_int, default=20,
                           help="times the oracle's final state is graded (one verdict and one "
                                "reward expected; default: 20)")
    env_check.set_defaults(func=cmd_env_check)

    task = sub.add_parser("task", help="task folder tools")
    task_sub = task.add_subparsers(dest="task_command", required=True)
    check = task_sub.add_parser("check", help="oracle scores 1 and null scores 0, twice, for each task")
    check.add_argument("path")
    check.add_argument("--env", default="coding-terminal-v0")
    check.add_argument("--sandbox", default="local")
    check.set_defaults(func=cmd_task_check)
    add_serve_parser(sub)
    add_mcp_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from taskgym.errors import TaskgymError

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except TaskgymError as exc:
        print(f"taskgym: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
