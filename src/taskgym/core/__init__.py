"""The concepts every domain shares: env, task, tool, reward, spaces, registry."""
