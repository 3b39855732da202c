#!/bin/sh
# compile_check.sh pass|fail REGEX COMPILER ARGS...
# Compile a snippet; "pass" expects success, "fail" expects failure with a
# diagnostic matching REGEX (extended regex).  Prints the compiler output.
expect=$1 regex=$2
shift 2
out=$("$@" -c -o /dev/null 2>&1)
status=$?
printf '%s\n' "$out"
if [ "$expect" = pass ]; then
	if [ $status -ne 0 ]; then echo "FAIL: the snippet should compile: $*"; exit 1; fi
	echo "ok: compiled"
	exit 0
fi
if [ $status -eq 0 ]; then echo "FAIL: the snippet compiled, a diagnostic was expected: $*"; exit 1; fi
if ! printf '%s\n' "$out" | grep -Eq "$regex"; then
	echo "FAIL: the compiler failed, but without a diagnostic matching /$regex/"; exit 1
fi
echo "ok: rejected with the expected diagnostic"
