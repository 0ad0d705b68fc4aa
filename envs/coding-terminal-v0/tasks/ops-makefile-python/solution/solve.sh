#!/bin/bash
set -euo pipefail
cat > /app/Makefile <<'MK'
PYTHON ?= python3
PKG := tallyho
VERSION = $(shell sed -n 's/^__version__ *= *["'"'"']\([^"'"'"']*\)["'"'"'].*/\1/p' src/$(PKG)/__init__.py)
DIST_NAME = $(PKG)-$(VERSION)

.PHONY: all lint test dist clean

all: lint test

lint:
	find src tests -name '*.py' -print0 | xargs -0 -r $(PYTHON) -c 'import sys, ast; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]'
	$(PYTHON) tools/check_style.py src tests

test:
	PYTHONPATH=src $(PYTHON) -m pytest -q -p no:cacheprovider tests

dist:
	@test -n "$(VERSION)" || { echo "cannot read __version__" >&2; exit 1; }
	rm -rf dist/$(DIST_NAME) dist/$(DIST_NAME).tar.gz dist/$(DIST_NAME).tar.gz.sha256
	mkdir -p dist/$(DIST_NAME)
	cp README.md pyproject.toml dist/$(DIST_NAME)/
	cd src && find $(PKG) -name '*.py' -not -path '*/__pycache__/*' | while read -r f; do \
		mkdir -p "../dist/$(DIST_NAME)/src/$$(dirname "$$f")" && cp "$$f" "../dist/$(DIST_NAME)/src/$$f"; done
	tar -C dist -czf dist/$(DIST_NAME).tar.gz $(DIST_NAME)
	rm -rf dist/$(DIST_NAME)
	cd dist && sha256sum $(DIST_NAME).tar.gz > $(DIST_NAME).tar.gz.sha256

clean:
	rm -rf dist .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
MK
