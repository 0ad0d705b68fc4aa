"""Sandboxes: a backend owns the isolation, a session runs commands in it."""

from taskgym.sandbox.base import Backend, ExecResult, ResourceUsage, SandboxSpec, Session
from taskgym.sandbox.config import BackendConfig, DockerConfig, LocalConfig, backend_config, get_backend

__all__ = ["Backend", "BackendConfig", "DockerConfig", "ExecResult", "LocalConfig", "ResourceUsage",
           "SandboxSpec", "Session", "backend_config", "get_backend"]
