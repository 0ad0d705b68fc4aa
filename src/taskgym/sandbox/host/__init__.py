"""The host operating system as the sandbox sees it: no backend, no session here.

- limits and confinement: :mod:`~taskgym.sandbox.host.cgroups` (memory, pids, CPU),
  :mod:`~taskgym.sandbox.host.seccomp` (the deny-list filter);
- files: :mod:`~taskgym.sandbox.host.fs` (file tools confined to one folder by descriptor),
  :mod:`~taskgym.sandbox.host.tree` (exact tree copies for snapshots),
  :mod:`~taskgym.sandbox.host.python_view` (what a sandbox sees of the host's Python);
- processes: :mod:`~taskgym.sandbox.host.procs` (pids named with their start time),
  :mod:`~taskgym.sandbox.host.cleanup` (the runtime root, and reaping what crashed runs left),
  :mod:`~taskgym.sandbox.host.os_errors` (``OSError`` into ``SandboxError`` at the contract);
- threads: :mod:`~taskgym.sandbox.host.blocking` (the bounded pool for what blocks),
  :mod:`~taskgym.sandbox.host.booting` (background job threads),
  :mod:`~taskgym.sandbox.host.at_fork` (``os.fork`` hooks run with the garbage collector off),
  :mod:`~taskgym.sandbox.host.gil_held` (the step's system calls without releasing the GIL,
  through the C helper ``_syscalls`` built by ``hatch_build.py`` when a compiler is there).
"""
