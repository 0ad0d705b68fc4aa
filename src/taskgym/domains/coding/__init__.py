"""The terminal coding domain (``coding-terminal-v0``)."""

from taskgym.domains.coding.env import GENERATORS, CodingEnv, prepare_workspace

__all__ = ["GENERATORS", "CodingEnv", "prepare_workspace"]
