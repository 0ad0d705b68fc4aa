"""Snapshots and forks of a session, and the copy-on-write workspaces that make them cheap.

- :mod:`~taskgym.sandbox.snapshots.session_snapshot`: a workspace and a shell's state saved on
  the host, restored into any session of the same spec;
- :mod:`~taskgym.sandbox.snapshots.store`: where a snapshot's copy lives (memory or the runtime
  root, where files are clones);
- :mod:`~taskgym.sandbox.snapshots.spares`: sessions started ahead of time that a fork fills;
- :mod:`~taskgym.sandbox.snapshots.disk`: workspaces on a reflink filesystem (btrfs with quotas,
  XFS) so that a snapshot or fork copies no bytes;
- :mod:`~taskgym.sandbox.snapshots.loopfs`: such a filesystem on a loop device, to try it.
"""
