"""The ``taskgym`` command line."""

from taskgym.cli.main import main

__all__ = ["main"]
