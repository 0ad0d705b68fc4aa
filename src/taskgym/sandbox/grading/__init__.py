"""Grading: one fresh sandbox per grade, and warm graders that start it ahead of time.

- :mod:`~taskgym.sandbox.grading.run`: :func:`run_grader`, the runner every verifier uses
  (a new sandbox seeded with the final workspace, secrets by descriptor, nonce-tagged reports);
- :mod:`~taskgym.sandbox.grading.warm`: the pools of pre-started, single-use graders, per kind;
- :mod:`~taskgym.sandbox.grading.warm_leases`: the demand that sizes those pools (an env's
  lease on its grader's kind) and the idle sweep;
- :mod:`~taskgym.sandbox.grading.warm_run`: one grade in a warm grader: forked by the backend's
  :meth:`~taskgym.sandbox.base.Backend.grader_forks` when it has them (local: grader zygotes),
  else taken from the pool.

Nothing here names a backend: what is backend-specific sits behind the
:class:`~taskgym.sandbox.base.Backend` contract (``start_prestarted``, ``grader_forks``).
"""

from taskgym.sandbox.grading.run import Grader, GraderRun, run_grader

__all__ = ["Grader", "GraderRun", "run_grader"]
