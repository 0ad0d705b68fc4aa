"""Sandboxes: a backend owns the isolation, a session runs commands in it."""

from taskgym.sandbox.base import Backend, ExecResult, ResourceUsage, SandboxSpec, Session

__all__ = ["Backend", "ExecResult", "ResourceUsage", "SandboxSpec", "Session", "get_backend"]


def get_backend(name: str) -> Backend:
    """The backend called ``name`` ("local" or "docker"); raises with install hints when unusable."""
    from taskgym.errors import ConfigError

    if name == "local":
        from taskgym.sandbox.local import LocalBackend

        return LocalBackend()
    if name == "docker":
        from taskgym.sandbox.docker import DockerBackend

        return DockerBackend.shared()
    raise ConfigError(f"unknown sandbox backend {name!r}; available: 'local', 'docker'")
