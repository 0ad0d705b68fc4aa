"""The container backend: hardened Docker containers around a persistent shell.

Each session is one long-lived container: no network, every capability dropped,
no-new-privileges, the local backend's seccomp deny list, a pids limit, a memory limit with
no extra swap, a read-only root with size-capped tmpfs for the workspace, ``/tmp`` and the
control folder, ``docker-init`` as pid 1, uid 1000; never privileged, no host path mounted.

The container's main process only waits for end-of-file on its stdin, which this process
holds open through an attach stream (``stdin_once``): when this process dies, even by
SIGKILL, the stream closes, the container exits and the engine removes it. Commands travel
through one ``docker exec -i`` bash kept open for the episode, driven by the same protocol as
a local session (:mod:`taskgym.sandbox.shell`: short commands ride the trigger line, longer
ones are sourced from a file on the control tmpfs, output goes to files on a tmpfs); each
command's status line comes back on a Unix socket the host listens on in the container's
control folder (:mod:`taskgym.sandbox.docker.status_helper`), with the writer's pid. A warm
pool per container shape holds started containers with their shell already open, so
``start()`` pays no container start.

Modules: :mod:`~taskgym.sandbox.docker.backend` (the backend), ``engine`` (the engine's
client), ``container`` (one hardened container and its shell), ``session``, ``pool``,
``prestart`` (pre-started graders), ``relay`` (descriptors of a one-shot run),
``status_helper``, ``workspace`` (a task image's own working folder), and the images:
``images``, ``host_python_image``, ``image_set`` (``taskgym images build``).

The engine must run on this machine and taskgym as root: files move in and out of the
workspace through ``/proc/<container pid>/root`` by file descriptor (never following a
link, exactly as locally; ``docker cp`` cannot reach a tmpfs), and a timed-out command's
processes are found by pid namespace and start time, as locally.
"""

from taskgym.sandbox.docker.backend import DockerBackend
from taskgym.sandbox.docker.session import DockerSession

__all__ = ["DockerBackend", "DockerSession"]
