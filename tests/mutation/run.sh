#!/usr/bin/env bash
# Mutation testing of devlane's security core (issue 41) with mutmut, configured in pyproject.toml [tool.mutmut]:
# each mutant (one small change to a function of those modules) is run against the in-process tests that reach
# the function; a mutant no test fails "survived". Writes mutation-report.txt: per module the mutants, killed,
# survived and kill rate, then every survivor's diff. Survivors accepted as equivalent are listed, with the
# reason, in tests/mutation/equivalent.txt.
#
#   bash tests/mutation/run.sh             every mutant of every module (11,000 and more: hours on two cores)
#   bash tests/mutation/run.sh --ci        the fixed subset of tests/mutation/ci-subset.txt (about 9 min); fails
#                                          when its kill rate is below the threshold written there
#   bash tests/mutation/run.sh --module renderer/core/fence.py [--module ...]
#                                          every mutant of the modules named (minutes: while killing survivors)
#   options: --workers N (default 2), --survivors DIR (also DIR/mut-survivors-<module>.txt, one per module)
#
# Runs from a checkout with `pip install -c .ci/constraints.txt -e '.[test]'` (mutmut is in the test extra).
# mutants/ (mutmut's copy of the checkout, and its results) and mutation-report.txt are git-ignored.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

mode=full
workers=2
names=()
report_args=()
while [ $# -gt 0 ]; do
    case $1 in
        --ci) mode=ci ;;
        --module)
            module=${2:?--module needs a path such as renderer/core/fence.py}; shift
            [ -f "$module" ] || { echo "error: --module $module: no such file" >&2; exit 2; }
            mode=modules
            report_args+=(--module "$module")
            module=${module%.py}
            names+=("${module//\//.}.*") ;;
        --workers) workers=${2:?--workers needs a number}; shift ;;
        --survivors) report_args+=(--survivors "${2:?--survivors needs a directory}"); shift ;;
        -h | --help) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "error: unknown option $1 (see: bash tests/mutation/run.sh --help)" >&2; exit 2 ;;
    esac
    shift
done

if ! command -v mutmut >/dev/null 2>&1; then
    echo "error: mutmut is not installed here: pip install -c .ci/constraints.txt -e '.[test]'" >&2
    exit 1
fi
# The tests read ../shared beside the checkout; mutmut runs them in mutants/, one level deeper.
if [ -z "${DEVLANE_SHARED:-}" ] && [ -d ../shared ]; then
    DEVLANE_SHARED=$(cd ../shared && pwd)
    export DEVLANE_SHARED
fi

if [ "$mode" = ci ]; then
    mapfile -t names < <(python tests/mutation/report.py --globs)
    report_args+=(--ci)
fi

# mutmut keeps results per function and does not re-test a survivor when only the tests changed: start afresh.
rm -rf mutants
mkdir mutants
start=$(date +%s)
echo "==> mutmut run --max-children $workers ($mode; progress in mutants/run.log)"
status=0
mutmut run --max-children "$workers" "${names[@]}" >mutants/run.log 2>&1 || status=$?
seconds=$(($(date +%s) - start))
if [ "$status" -ne 0 ]; then
    tr '\r' '\n' <mutants/run.log | grep -v '^.\{0,2\}[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]' | tail -n 40 >&2
    if [ -s mutants/clean-run-failures.txt ]; then  # written by tests/mutation/plugin.py
        echo "the clean run (no mutant) failed on:" >&2
        tail -c 20000 mutants/clean-run-failures.txt >&2
    fi
    echo "error: mutmut run failed (exit status $status) after ${seconds} s; its output: mutants/run.log" >&2
    exit 1
fi
python tests/mutation/report.py --seconds "$seconds" "${report_args[@]}"
