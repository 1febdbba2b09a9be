#!/usr/bin/env bash
# Sets up grader in ./.venv, a virtual environment of its own, so that it works whatever
# python3 this machine has: a stock Debian/Ubuntu one that refuses pip installs (PEP 668),
# pyenv, conda, Homebrew; as root or as a normal user. Safe to run again: it only adds
# what is missing. The README's commands then call .venv/bin/grader and .venv/bin/python.
#
# Where it is root on Debian/Ubuntu it first installs, with apt-get:
#   bubblewrap              the sandbox for student code (grader falls back to plain
#                           processes without it)
#   python3-venv            `python3 -m venv` on Debian/Ubuntu (only where it is missing)
#   chromium(+driver)       only for the browser tests of the HTML reports
#   tmux                    only for the tests of the terminal tables in a real terminal
# Elsewhere it skips them; `grader` says which sandbox it could use.
#
# PYTHON=/path/to/python picks the interpreter the venv is made from (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=.venv

say() { printf 'setup: %s\n' "$*" >&2; }

if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  want=()
  command -v bwrap >/dev/null 2>&1 || want+=(bubblewrap)
  { command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; } \
    || want+=(chromium chromium-driver)
  command -v tmux >/dev/null 2>&1 || want+=(tmux)
  "$PY" -c 'import ensurepip, venv' >/dev/null 2>&1 || want+=(python3-venv)
  if [ ${#want[@]} -gt 0 ]; then
    say "apt-get install ${want[*]}"
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends "${want[@]}" >/dev/null
  fi
fi

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c '' >/dev/null 2>&1; then
  say "creating $VENV with $("$PY" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
  rm -rf "$VENV"
  if ! "$PY" -m venv "$VENV"; then
    say "'$PY -m venv' failed. On Debian/Ubuntu: sudo apt-get install python3-venv;"
    say "or set PYTHON=/path/to/another/python3 (3.10 or newer)."
    exit 1
  fi
fi

pip=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)
# Pinned here (the CPU build, from local disk on our machines); the package accepts a range.
"$VENV/bin/python" -c 'import torch' >/dev/null 2>&1 || "${pip[@]}" "torch==2.13.0"
"${pip[@]}" -e ".[test]"
# What student code may import besides the standard library (matplotlib and seaborn for the
# lesson's plots), pinned in each shipped assignment's `environment:`; the sandbox shows
# .venv's packages to student code read-only.
reqs=$("$VENV/bin/grader" environment assignments/*/assignment.yaml --requirements)
if [ -n "$reqs" ]; then
  mapfile -t student_env <<<"$reqs"
  "${pip[@]}" "${student_env[@]}"
fi
say "ready: $VENV/bin/grader ($("$VENV/bin/grader" --version 2>/dev/null || echo installed))"
