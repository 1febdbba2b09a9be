#!/usr/bin/env bash
# Installs what grader needs on a fresh Debian/Ubuntu machine (or a laptop: the
# system packages are skipped where apt-get or root is missing).
#   bubblewrap          the sandbox for student code (grader falls back to plain processes without it)
#   chromium(+driver)   only for the browser tests of the HTML reports
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends bubblewrap chromium chromium-driver >/dev/null
fi
PY=${PYTHON:-python3}
# Pinned here (CPU build, installs from local disk); the package itself accepts a range.
"$PY" -m pip install -q --disable-pip-version-check "torch==2.13.0"
"$PY" -m pip install -q --disable-pip-version-check -e ".[test]"
