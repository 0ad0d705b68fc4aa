"""The persistent-shell protocol both backends' sessions speak.

One bash per session, driven by trigger lines and answered on a status socket:

- :mod:`~taskgym.sandbox.shell.commands`: how a command rides the trigger line (or a command
  file), the control folder, the status line's limits;
- :mod:`~taskgym.sandbox.shell.protocol`: the status socket, the status line's parser, the
  output files and the runaway-output check;
- :mod:`~taskgym.sandbox.shell.session`: :class:`~taskgym.sandbox.shell.session.ShellSession`,
  what the local and docker sessions share;
- :mod:`~taskgym.sandbox.shell.plans` and :mod:`~taskgym.sandbox.shell.drivers`: a command as
  a generator that says what it waits for, and the drivers that run one (blocking, on an event
  loop) or many at once (one ``poll``);
- :mod:`~taskgym.sandbox.shell.output`: output as the agent sees it (decoded, head and tail
  kept).
"""
