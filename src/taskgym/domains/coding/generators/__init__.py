"""Seeded task generators for ``coding-terminal-v0``.

Each generator module exposes ``NAME``, ``DESCRIPTION`` and ``generate(seed, dest)``, which writes
one complete task folder (instruction.md, task.toml, environment/files, solution/solve.sh, tests/)
into ``dest``. The same seed always produces the same files byte for byte.
"""
