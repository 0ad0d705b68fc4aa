"""The terminal coding domain (``coding-terminal-v0``)."""

from taskgym.domains.coding.env import GENERATORS, CodingEnv, generated_tasks, prepare_workspace

__all__ = ["GENERATORS", "CodingEnv", "generated_tasks", "prepare_workspace"]
