#!/bin/sh
# The personal pool in one command: a pool in a fresh state directory, the
# example jobs in examples/jobs submitted to it, their progress while they
# run, the outcome, and a clean shutdown.
#
#   examples/demo.sh            (ferrocondor on PATH, or FERROCONDOR=path)
#
# A pool started by root runs each job as its owner and never as root, as
# HTCondor does: run as root, the demo runs itself as the user DEMO_USER
# (default nobody).
set -eu

FC=${FERROCONDOR:-ferrocondor}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ferrocondor-demo.XXXXXX")
state=$work/state
cp "$here"/jobs/* "$work"/
export FERROCONDOR_STATE="$state"
# The demo runs on HTCondor's defaults unless a configuration is given.
export CONDOR_CONFIG="${CONDOR_CONFIG:-ONLY_ENV}"

if [ "$(id -u)" = 0 ]; then
    # A pool run by root never runs a job as root (HTCondor's rule), so as
    # root the demo runs itself as an ordinary user (DEMO_USER, else
    # nobody), from copies of itself, its jobs and the binary that this
    # user can read (root's home and build directory are often closed).
    user=${DEMO_USER:-nobody}
    bin=$(command -v "$FC") || {
        echo "demo: $FC not found: put ferrocondor on PATH or set FERROCONDOR" >&2
        exit 2
    }
    mkdir "$work/jobs"
    cp "$here"/jobs/* "$work/jobs/"
    cp "$here/demo.sh" "$work/demo.sh"
    cp "$bin" "$work/ferrocondor"
    chown -R "$user" "$work"
    echo "demo: running as $user (a pool run by root never runs jobs as root)"
    exec setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups \
        env HOME="$work" TMPDIR="$work" FERROCONDOR="$work/ferrocondor" \
        sh "$work/demo.sh"
fi

echo "== starting a personal pool in $state"
"$FC" pool up --state "$state" >"$work/pool.log" 2>&1 &
pool=$!
trap 'kill "$pool" 2>/dev/null || true' EXIT
tries=0
until "$FC" q -af ClusterId >/dev/null 2>&1; do
    tries=$((tries + 1))
    if [ "$tries" -gt 400 ] || ! kill -0 "$pool" 2>/dev/null; then
        echo "demo: the pool did not start; its log:" >&2
        cat "$work/pool.log" >&2
        exit 1
    fi
    sleep 0.05
done
"$FC" status

cd "$work"
echo "== submitting the example jobs"
for f in hello.sub squares.sub words.sub fails.sub; do
    "$FC" submit "$f"
done
total=13

echo "== running"
start=$(date +%s)
while :; do
    states=$("$FC" q -af JobStatus)
    idle=$(printf '%s\n' "$states" | grep -c '^1$' || true)
    running=$(printf '%s\n' "$states" | grep -c '^2$' || true)
    held=$(printf '%s\n' "$states" | grep -c '^5$' || true)
    done_=$("$FC" history -af ClusterId | grep -c . || true)
    printf '[%3ss] %s of %s done, %s running, %s idle, %s held\n' \
        "$(($(date +%s) - start))" "$done_" "$total" "$running" "$idle" "$held"
    if [ "$idle" = 0 ] && [ "$running" = 0 ]; then
        break
    fi
    if [ "$(($(date +%s) - start))" -gt 300 ]; then
        echo "demo: jobs still not done after 5 minutes" >&2
        exit 1
    fi
    sleep 1
done

echo "== outcome"
"$FC" history
echo
"$FC" q -hold
echo
echo "-- hello.*.out:"; cat hello.*.out
echo "-- squares.*.out:"; cat squares.*.out
echo "-- count.txt (words in words.txt):"; cat count.txt
echo "-- the job event log has $(grep -c '^005 ' demo.log) terminations; see $work/demo.log"

echo "== shutting down"
"$FC" pool down --state "$state"
wait "$pool" 2>/dev/null || true
trap - EXIT
echo "demo: done; everything it made is in $work"
