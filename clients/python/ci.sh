#!/usr/bin/env bash
# The Python client's CI: build the wheel, install it into a virtualenv OUTSIDE the repository (one per CI run,
# reused by both server modes), and run the client's tests from outside the repository against a live server —
# the embedded defaults, or PostgreSQL + Redis + a real Celery worker when MEMORYHUB_SERVER_DATABASE_URL and
# MEMORYHUB_SERVER_REDIS_URL are set (tests/conftest.py starts the processes).
#
#   bash clients/python/ci.sh VENV_DIR [pytest args]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
VENV=${1:?usage: ci.sh VENV_DIR [pytest args]}
shift
PY="$VENV/bin/python"

if [ ! -x "$PY" ]; then
  python3 -m venv "$VENV"
  "$PY" -m pip install -q -r "$HERE/requirements-test.txt"
fi
if [ ! -f "$VENV/.wheel-installed" ]; then
  DIST=$(mktemp -d)
  "$PY" -m build --wheel --no-isolation --outdir "$DIST" "$HERE" >/dev/null
  WHEEL=$(ls "$DIST"/memoryhub_client-*.whl)
  "$PY" -m pip install -q --force-reinstall --no-deps "$WHEEL"
  "$PY" -m pip install -q "${WHEEL}[langchain,langgraph]"
  rm -rf "$DIST"
  touch "$VENV/.wheel-installed"
fi

# LangGraph's own store tests, taken from the published langgraph-checkpoint sdist at test time (never committed).
if [ ! -f "$VENV/langgraph-store-tests/tests/test_store.py" ]; then
  VERSION=$("$PY" -c 'import importlib.metadata as m; print(m.version("langgraph-checkpoint"))')
  SDIST=$(mktemp -d)
  "$PY" -m pip download -q --no-binary :all: --no-deps "langgraph-checkpoint==$VERSION" -d "$SDIST"
  tar -xzf "$SDIST"/langgraph_checkpoint-"$VERSION".tar.gz -C "$SDIST"
  mkdir -p "$VENV/langgraph-store-tests"
  cp -r "$SDIST/langgraph_checkpoint-$VERSION/tests" "$VENV/langgraph-store-tests/tests"
  rm -rf "$SDIST"
fi

cd "$VENV"  # nothing under the repository is importable from here: the tests use the installed wheel
MEMORYHUB_REPO="$REPO" LANGGRAPH_STORE_TESTS="$VENV/langgraph-store-tests" \
  "$PY" -m pytest -p no:cacheprovider --rootdir "$HERE" -c "$HERE/pyproject.toml" "$HERE/tests" "$@"
