"""The terminal coding domain (``coding-terminal-v0``)."""

from taskgym.domains.coding.env import GENERATORS, CodingEnv

__all__ = ["GENERATORS", "CodingEnv"]
