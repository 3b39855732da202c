#!/usr/bin/env bash
# `mark list FILE [GLOB]` reads markers from ELF sections without running the file.
set -u
mark=$1 exe=$2 cxxlib=$3 dllib=$4 odd=${5:-}
fail=0
expect() { # description, command output, regex
  if ! grep -Eq -- "$3" <<<"$2"; then echo "FAIL: $1"; echo "$2"; fail=1; fi
}
out=$("$mark" list "$exe"); rc=$?
[ $rc -eq 0 ] || { echo "FAIL: exit status $rc"; fail=1; }
expect "api_basic with its format, kind and location" "$out" '^api_basic +"%d %p" +jump +.*/tests/test_api\.c:[0-9]+'
expect "the MARK_ENABLED site" "$out" '^api_basic +\(enabled test\) +jump +.*test_api_other_tu\.c'
expect "a header inline marker" "$out" '^api_inline +"%d" +jump +.*test_api_shared\.h:8'
expect "the count line" "$out" '^4 markers, [0-9]+ sites in '
out=$("$mark" list "$exe" 'api_t*')
expect "a glob" "$out" '^api_types '
if grep -q '^api_basic' <<<"$out"; then echo "FAIL: the glob matched api_basic"; fail=1; fi
out=$("$mark" list "$cxxlib")
expect "C++ template member descriptors of a shared object" "$out" '^cxx_member +"%d %s %p" +generic'
expect "C++ template" "$out" '^cxx_template +"%ld %s" +generic'
out=$("$mark" list "$dllib")
expect "immediate sites in a shared object" "$out" '^dl_rx +"%d %s" +immediate'
# errors
out=$("$mark" list /nonexistent/file 2>&1); rc=$?
[ $rc -ne 0 ] || { echo "FAIL: missing file exit status"; fail=1; }
expect "missing file message" "$out" 'cannot open /nonexistent/file'
out=$("$mark" list /etc/passwd 2>&1); rc=$?
expect "not ELF message" "$out" 'not an ELF file'
out=$("$mark" list /bin/true 2>&1); rc=$?
[ $rc -eq 1 ] || { echo "FAIL: no markers exit status $rc"; fail=1; }
expect "no markers message" "$out" 'has no markers'
out=$("$mark" list "$exe" 'zzz*' 2>&1)
expect "glob matching nothing" "$out" 'no marker of .* matches "zzz\*"'
# Sites that can never be armed are flagged: a jump site whose NOP was
# rewritten, and one whose code entry points outside executable code.
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
python3 "$(dirname "$0")/corrupt_sites.py" "$exe" "$work/bad" || { echo "FAIL: cannot write the damaged copies"; fail=1; }
out=$("$mark" list "$work/bad.nop" 2>&1)
expect "a rewritten NOP is flagged" "$out" 'NEVER ARMABLE: its instruction is not the NOP mark emits'
expect "the summary names the count" "$out" '1 site of .*bad\.nop can never be armed'
out=$("$mark" list "$work/bad.rodata" 2>&1)
expect "a site outside executable code is flagged" "$out" 'NEVER ARMABLE: its instruction is not in an executable section'
# An x86-64 jump site at an odd address (an older mark.h), which mark_arm refuses.
if [ -n "$odd" ]; then
  out=$("$mark" list "$odd" 2>&1)
  expect "an odd jump site is flagged" "$out" 'NEVER ARMABLE: it is at a misaligned address \(built with an older mark\.h: rebuild it\)'
fi
out=$("$mark" list "$exe" 2>&1)
if grep -q 'NEVER ARMABLE\|can never be armed' <<<"$out"; then echo "FAIL: a sound file has sites flagged"; echo "$out"; fail=1; fi
[ $fail -eq 0 ] && echo "ok"
exit $fail
