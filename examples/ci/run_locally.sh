#!/usr/bin/env bash
# Runs the steps of grade-pull-request.yml on this machine, against a fake pull request.
#
#   examples/ci/run_locally.sh CASE [CASE...]
#
# Each CASE is a folder under tests/corpus/ that the "pull request" adds under
# submissions/ (give two to see the workflow refuse a pull request that changes two).
# The workflow's own `run:` scripts are executed (read from the YAML, run with
# `bash -eo pipefail` as Actions does); the `uses:` steps are played by local stand-ins:
#
#   checkout (the pull request)  a git repository: a base commit with another student's
#                                submission, a pull request commit, and the merge commit
#                                GitHub checks out as refs/pull/N/merge (HEAD^1 = base)
#   checkout (hidden tests)      this repository's assignments/attention and reference/
#   setup-python, install        the grader installed here (scripts/setup.sh); GRADER
#                                names the command (default: grader)
#   upload-artifact              the files stay in WORKDIR
#
# Environment: WORKDIR (default: a new temporary folder) receives workspace/ (the
# repository), runner_temp/ (private/, reports/, junit.xml), step_summary.md,
# github_output and annotations.txt (the grading step's stdout). GRADER_SANDBOX
# (default bwrap, as in the workflow) and PYTHON (for reading the YAML) may be set.
# Exits with the exit code of the first step that fails, as the job would.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
workflow="$here/grade-pull-request.yml"
[ $# -ge 1 ] || { echo "usage: $0 CASE [CASE...]  (folders under tests/corpus/)" >&2; exit 64; }
work=${WORKDIR:-$(mktemp -d)}
PYTHON=${PYTHON:-python3}
export PATH="${GRADER_BIN:+$GRADER_BIN:}$PATH"

# ---- what the runner sets
export GITHUB_ACTIONS=true CI=true
export GITHUB_WORKSPACE="$work/workspace" RUNNER_TEMP="$work/runner_temp"
export GITHUB_STEP_SUMMARY="$work/step_summary.md" GITHUB_OUTPUT="$work/github_output"
mkdir -p "$GITHUB_WORKSPACE" "$RUNNER_TEMP"
: > "$GITHUB_STEP_SUMMARY"
: > "$GITHUB_OUTPUT"

# The `run:` script of the workflow step named $1, run as Actions runs it.
step() {
  local script
  script=$("$PYTHON" - "$workflow" "$1" <<'PY'
import sys
import yaml
workflow, name = sys.argv[1], sys.argv[2]
steps = [s for job in yaml.safe_load(open(workflow))["jobs"].values() for s in job["steps"]
         if s.get("name") == name]
if len(steps) != 1 or "run" not in steps[0]:
    sys.exit(f"{workflow}: no single run step named {name!r}")
print(steps[0]["run"])
PY
)
  echo "== step: $1" >&2
  bash --noprofile --norc -eo pipefail -c "$script"
}

output() { sed -n "s/^$1=//p" "$GITHUB_OUTPUT" | tail -n 1; }

# ---- "Check out the pull request merged into its base"
cd "$GITHUB_WORKSPACE"
git init -q -b main .
git config user.email ci@example.invalid
git config user.name "local run"
mkdir -p submissions
cp -R "$root/tests/corpus/correct_qkv_module" submissions/earlier_student
echo "# course repository" > README.md
rm -f submissions/*/expected.yaml
git add -A && git commit -qm "base: an earlier submission"
git checkout -qb pull-request
for case in "$@"; do
  cp -R "$root/tests/corpus/$case" "submissions/$case"
  rm -f "submissions/$case/expected.yaml"
done
git add -A && git commit -qm "pull request: my submission"
git checkout -q main
git merge -q --no-ff pull-request -m "Merge pull request #1"

# ---- "Find the one submission folder the pull request changes"
step "Find the one submission folder the pull request changes"

# ---- "Check out the hidden tests": the private repository's layout, from this repository
mkdir -p .hidden-tests/assignments
cp -R "$root/assignments/attention" .hidden-tests/assignments/attention
cp -R "$root/reference" .hidden-tests/reference
step "Move the hidden tests out of the workspace"
[ ! -e "$GITHUB_WORKSPACE/.hidden-tests" ]

# ---- "Grade the submission" (working-directory: runner.temp; its env: block)
cd "$RUNNER_TEMP"
export SUBMISSION="$GITHUB_WORKSPACE/$(output submission)"
export GRADER_SANDBOX="${GRADER_SANDBOX:-bwrap}" PYTHONSAFEPATH=1
set +e
step "Grade the submission" > "$work/annotations.txt"
code=$?
set -e
cat "$work/annotations.txt"
echo "grading step exited $code; step summary in $GITHUB_STEP_SUMMARY; reports in $RUNNER_TEMP/reports" >&2
exit "$code"
