#!/usr/bin/env bash
# Install the test dependencies and run everything CI runs: lint, types, docs, tests
# (the sandbox conformance and escape tests also as an unprivileged user, where possible).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install.sh --test

python3 -m ruff check src tests benchmarks
python3 -m mypy
NO_MKDOCS_2_WARNING=1 python3 -m mkdocs build --strict --quiet --site-dir "$(mktemp -d)"
TASKGYM_REQUIRE_SANDBOX=1 python3 -m pytest "$@"
./scripts/test_unprivileged.sh
