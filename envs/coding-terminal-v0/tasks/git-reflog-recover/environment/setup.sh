#!/bin/bash
# Builds /app: main had two good commits (jitter, Retry-After) plus a debug commit; a bad
# `git reset --hard HEAD~3` dropped all three and new work was committed on top. The reflog keeps them.
set -euo pipefail
cd /app
export GIT_AUTHOR_NAME="Mia Castellanos" GIT_AUTHOR_EMAIL="mia@netkit.example"
export GIT_COMMITTER_NAME="Mia Castellanos" GIT_COMMITTER_EMAIL="mia@netkit.example"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
t=1707000000
commit() { t=$((t+4000)); git add -A; GIT_AUTHOR_DATE="@$t +0000" GIT_COMMITTER_DATE="@$t +0000" git commit -q -m "$1"; }
git init -q -b main .
git config user.name "Agent" && git config user.email "agent@netkit.example"
printf '__pycache__/\n.pytest_cache/\n' > .gitignore
cat > retry.py <<'PY'
"""Retry helper for flaky network calls."""
import time


class TransientError(Exception):
    """An error worth retrying (connection reset, 503, ...)."""


def backoff_delays(attempts, base=0.5, cap=30.0):
    """Delays to sleep between `attempts` tries: exponential, capped."""
    return [min(cap, base * 2 ** i) for i in range(attempts - 1)]


def retry(func, attempts=3, sleep=time.sleep, retry_on=(TransientError,)):
    """Call func() until it succeeds or `attempts` tries failed; re-raise the last error."""
    delays = backoff_delays(attempts)
    for i in range(attempts):
        try:
            return func()
        except retry_on:
            if i == attempts - 1:
                raise
            sleep(delays[i])
PY
commit "Add retry helper"
cat > README.md <<'MD'
# netkit

Small helpers around our internal HTTP APIs. `retry.retry(func)` retries transient failures.
MD
commit "Add README"
cat > client.py <<'PY'
"""Thin HTTP client wrapper."""
import urllib.request

from retry import retry


def fetch(url, opener=urllib.request.urlopen):
    """GET url with retries, return the body as bytes."""
    return retry(lambda: opener(url).read())
PY
commit "Add fetch() client wrapper"
python3 - <<'PY'
src = open("retry.py").read()
src = src.replace('''def backoff_delays(attempts, base=0.5, cap=30.0):
    """Delays to sleep between `attempts` tries: exponential, capped."""
    return [min(cap, base * 2 ** i) for i in range(attempts - 1)]''', '''def backoff_delays(attempts, base=0.5, cap=30.0, rng=None):
    """Delays to sleep between `attempts` tries: exponential, capped.

    With an rng (random.Random), each delay is drawn uniformly from [0, delay] ("full jitter"),
    so that many clients retrying together do not hammer the server in lockstep.
    """
    delays = [min(cap, base * 2 ** i) for i in range(attempts - 1)]
    if rng is not None:
        delays = [rng.uniform(0, d) for d in delays]
    return delays''')
src = src.replace('''def retry(func, attempts=3, sleep=time.sleep, retry_on=(TransientError,)):
    """Call func() until it succeeds or `attempts` tries failed; re-raise the last error."""
    delays = backoff_delays(attempts)''', '''def retry(func, attempts=3, sleep=time.sleep, retry_on=(TransientError,), rng=None):
    """Call func() until it succeeds or `attempts` tries failed; re-raise the last error."""
    delays = backoff_delays(attempts, rng=rng)''')
open("retry.py", "w").write(src)
PY
commit "Add full jitter to retry backoff"
python3 - <<'PY'
src = open("retry.py").read()
src = src.replace('''    """An error worth retrying (connection reset, 503, ...)."""
''', '''    """An error worth retrying (connection reset, 503, ...)."""


class RateLimited(TransientError):
    """HTTP 429; retry_after is the server's Retry-After in seconds (or None)."""

    def __init__(self, message="rate limited", retry_after=None):
        super().__init__(message)
        self.retry_after = retry_after
''')
src = src.replace('''        except retry_on:
            if i == attempts - 1:
                raise
            sleep(delays[i])''', '''        except retry_on as exc:
            if i == attempts - 1:
                raise
            wait = delays[i]
            retry_after = getattr(exc, "retry_after", None)
            if retry_after is not None:
                wait = max(wait, retry_after)
            sleep(wait)''')
open("retry.py", "w").write(src)
PY
commit "Honour Retry-After when rate limited"
sed -i 's/^            sleep(wait)$/            print("DEBUG retry", i, wait, repr(exc))\n            sleep(wait)/' retry.py
commit "debug: print every retry (local only, do not push)"
GIT_COMMITTER_DATE="@$((t+600)) +0000" git reset -q --hard HEAD~3
cat > client.py <<'PY'
"""Thin HTTP client wrapper."""
import json
import urllib.request

from retry import retry


def fetch(url, opener=urllib.request.urlopen):
    """GET url with retries, return the body as bytes."""
    return retry(lambda: opener(url).read())


def fetch_json(url, opener=urllib.request.urlopen):
    """GET url with retries and decode the JSON body."""
    return json.loads(fetch(url, opener=opener).decode("utf-8"))
PY
commit "Add fetch_json()"
