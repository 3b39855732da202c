#!/usr/bin/env bash
# `make demo`: mark on the bundled example program.
set -euo pipefail
build=${1:-build}
mark=$build/mark
demo=$build/examples/demo
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
has() { "$mark" --help 2>/dev/null | grep -q "^  $1 "; }

step "mark list $demo   (read from the file, without running it)"
"$mark" list "$demo"

step "$demo   (in-process: listed, disarmed, armed, hit, disarmed)"
"$demo"

if has record; then
  out=$(mktemp -d /tmp/mark-demo.XXXXXX)
  step "mark record -e 'http_*' -o $out/trace -- $demo --serve 1"
  "$mark" record -e 'http_*' -o "$out/trace" -- "$demo" --serve 1
  if has view; then
    step "mark view $out/trace | head"
    "$mark" view "$out/trace" | head -n 8 || true
  fi
  if has stats; then
    step "mark stats $out/trace"
    "$mark" stats "$out/trace"
  fi
fi

if has ps && has enable; then
  step "control a running process: mark ps / list / enable / disable"
  "$demo" --serve 3 >/dev/null &
  pid=$!
  sleep 0.5
  "$mark" ps || true
  "$mark" list "$pid" || true
  "$mark" enable "$pid" 'http_*' || true
  "$mark" list "$pid" 'http_*' || true
  "$mark" disable "$pid" 'http_*' || true
  wait "$pid" || true
fi
step "done"
