#!/usr/bin/python3
"""Filters end to end: `mark record --filter`, MARK_FILTER, and refusal of a
bad expression before the program runs.

    test_filter_cli.py CASE MARK_BINARY RECORD_TARGET WORKDIR

RECORD_TARGET is tests/cli/record_target.c (tests/tracer/tracer_prog for the
case long_strings): 2 threads x 1000 of cli_req_begin "%d %p %s" (id, ptr, name = "req<id>"), cli_req_end "%d" (id),
cli_tick "%u" (tick = 0..999 per thread), and one cli_once "%x %f".
Exit 0 = pass, 1 = fail, 77 = skip.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import test_cli as t  # noqa: E402  (shared helpers: run, record, check_trace, ...)

check, run = t.check, t.run


def counts_of(mark, trace):
    st = run([mark, "stats", trace])
    check(st.returncode == 0, "mark stats failed: %s" % st.stderr)
    rows = t.stats_marker_counts(st.stdout)
    return {short: rows.get(t.marker_key(rows, short), 0)
            for short in ("cli_req_begin", "cli_req_end", "cli_tick", "cli_once")}


def case_record(mark, target, workdir):
    t.need_babeltrace2()
    # strings with a glob, integers, &&: req1, req10..req19 (ids < 100); the
    # other markers lack `name` (or `id`) and are not recorded
    trace, r = t.record(mark, target, workdir, "glob", "exit", "0",
                        extra=("--filter", 'id < 100 && name == "req1*"'))
    check(r.returncode == 0, "exit status %d: %s" % (r.returncode, r.stderr))
    got = counts_of(mark, trace)
    check(got == {"cli_req_begin": 11, "cli_req_end": 0, "cli_tick": 0, "cli_once": 0},
          "--filter 'id < 100 && name == \"req1*\"' recorded %r" % got)
    v = run([mark, "view", trace])
    ids = sorted(int(x.split("id=")[1].split()[0]) for x in v.stdout.splitlines() if "id=" in x)
    check(ids == [1] + list(range(10, 20)), "recorded ids %r" % ids)

    # two markers with the field `id`
    trace, r = t.record(mark, target, workdir, "or", "exit", "0",
                        extra=("--filter", "id == 7 || id == 1500"))
    got = counts_of(mark, trace)
    check(got == {"cli_req_begin": 2, "cli_req_end": 2, "cli_tick": 0, "cli_once": 0},
          "--filter 'id == 7 || id == 1500' recorded %r" % got)

    # bitwise & and a double, with -e; and || across fields that no marker has
    # together records nothing: each marker lacks one of them
    for name, expr, want in (
            ("bits", "tick & 0x3ff == 0x3e7", {"cli_tick": 2}),
            ("double", "flags & 0xf == 0xf && ratio < 0.5", {"cli_once": 1}),
            ("split", "tick == 3 || flags != 0", {}),
            # one comparison with N >= 0: the probe's shortcut, both ways round
            ("turned", "5 > tick", {"cli_tick": 10}),
            ("turned_le", "990 <= tick", {"cli_tick": 20}),
            ("ne", "tick != 3", {"cli_tick": 1998}),
            ("lt", "tick < 2", {"cli_tick": 4}),
            ("neg", "tick > -1", {"cli_tick": 2000}),   # not the shortcut: N < 0
            ("dbl", "ratio >= 0", {"cli_once": 1})):    # the shortcut's field is a double
        trace, r = t.record(mark, target, workdir, name, "exit", "0", extra=("-e", "cli_*", "--filter", expr))
        check(r.returncode == 0, "--filter '%s': exit %d %s" % (expr, r.returncode, r.stderr))
        got = counts_of(mark, trace)
        full = dict({"cli_req_begin": 0, "cli_req_end": 0, "cli_tick": 0, "cli_once": 0}, **want)
        check(got == full, "--filter '%s' recorded %r, want %r" % (expr, got, full))

    # a filter that rejects every event: the summary says the filter may be
    # why nothing was recorded (markers did fire), not only the -e globs
    trace, r = t.record(mark, target, workdir, "none", "exit", "0", extra=("--filter", "id < 0"))
    check(r.returncode == 0, "--filter 'id < 0': exit %d %s" % (r.returncode, r.stderr))
    check(sum(counts_of(mark, trace).values()) == 0, "--filter 'id < 0' recorded events")
    line = [l for l in r.stderr.splitlines() if "no event was recorded" in l]
    check(len(line) == 1 and 'none passed --filter "id < 0"' in line[0],
          "--filter 'id < 0': the summary does not name the filter: %r" % line)

    # MARK_FILTER in the environment, without `mark record`
    trace = t.fresh(workdir, "env")
    r = run([target, "exit", "0"], env=dict(os.environ, MARK_TRACE=trace, MARK_ENABLE="*",
                                            MARK_FILTER="tick >= 990"))
    check(r.returncode == 0, "MARK_FILTER run: %d %s" % (r.returncode, r.stderr))
    got = counts_of(mark, trace)
    check(got["cli_tick"] == 20 and got["cli_req_begin"] == 0, "MARK_FILTER='tick >= 990' recorded %r" % got)


def case_refuse(mark, target, workdir):
    ready = os.path.join(workdir, "ran")
    if os.path.exists(ready):
        os.unlink(ready)
    trace = t.fresh(workdir, "bad")
    r = run([mark, "record", "-o", trace, "--filter", "id = 3", "--", target, "wait", ready])
    check(r.returncode == 2, "bad --filter: exit %d, want 2 (usage error)" % r.returncode)
    check("column 4" in r.stderr and "use ==" in r.stderr, "bad --filter message: %r" % r.stderr)
    check(not os.path.exists(ready), "the program ran despite the bad filter")
    # a bad MARK_FILTER: the program runs untraced and is told why
    trace = t.fresh(workdir, "badenv")
    r = run([target, "exit", "0"], env=dict(os.environ, MARK_TRACE=trace, MARK_ENABLE="*",
                                            MARK_FILTER="(id == 3"))
    check(r.returncode == 0, "bad MARK_FILTER changed the program's exit: %d" % r.returncode)
    check("MARK_FILTER" in r.stderr and "column 9" in r.stderr and "tracing is off" in r.stderr,
          "bad MARK_FILTER message: %r" % r.stderr)


def case_meaningless(mark, target, workdir):
    """Expressions that parse but mean nothing are refused the same way by
    `mark record --filter` (before the program runs), `mark view/stats
    --filter` and MARK_FILTER (the program runs untraced): a floating-point
    mask, a string as a truth value beside && or ||, a comparison naming no
    field.  Each message gives the column and what to write instead.  Found
    by a review: all three were accepted (the mask was always 0, the
    string always true, the comparison always true or always false)."""
    cases = [("tick & 1.5", "column 6", "write an integer mask"),
             ('tick > 3 && "a"', "column 13", "a string alone is not a condition"),
             ("1 == 1", "column 1", "compares no field")]
    trace, r = t.record(mark, target, workdir, "all", "exit", "0")
    check(r.returncode == 0, "record: %d %s" % (r.returncode, r.stderr))
    for expr, column, words in cases:
        bad = t.fresh(workdir, "bad")
        r = run([mark, "record", "-o", bad, "--filter", expr, "--", target, "exit", "0"])
        check(r.returncode == 2 and column in r.stderr and words in r.stderr,
              "record --filter '%s': exit %d, %r (want 2, %s, %r)" % (expr, r.returncode, r.stderr, column, words))
        check(not os.path.exists(bad), "record --filter '%s': the program ran (%s was written)" % (expr, bad))
        for cmd in ("view", "stats"):
            r = run([mark, cmd, "--filter", expr, trace])
            check(r.returncode == 2 and column in r.stderr and words in r.stderr,
                  "%s --filter '%s': exit %d, %r" % (cmd, expr, r.returncode, r.stderr))
        env_trace = t.fresh(workdir, "badenv")
        r = run([target, "exit", "0"], env=dict(os.environ, MARK_TRACE=env_trace, MARK_ENABLE="*", MARK_FILTER=expr))
        check(r.returncode == 0 and "MARK_FILTER" in r.stderr and column in r.stderr and words in r.stderr and
              "tracing is off" in r.stderr, "MARK_FILTER='%s': exit %d, %r" % (expr, r.returncode, r.stderr))


def case_read(mark, target, workdir):
    """view/stats --filter: the same language on a recorded (unfiltered) trace,
    through mark's native reader and through libbabeltrace2 (MARK_READER=bt2)."""
    t.need_babeltrace2()
    trace, r = t.record(mark, target, workdir, "all", "exit", "0")
    check(r.returncode == 0, "record: %d %s" % (r.returncode, r.stderr))
    for reader in ("native", "bt2"):
        env = dict(os.environ, MARK_READER=reader) if reader == "bt2" else dict(os.environ)
        env.pop("MARK_READER", None) if reader == "native" else None
        v = run([mark, "view", "--filter", 'id < 100 && name == "req1*"', trace], env=env)
        check(v.returncode == 0, "%s: view --filter: %d %s" % (reader, v.returncode, v.stderr))
        ids = sorted(int(x.split("id=")[1].split()[0]) for x in v.stdout.splitlines() if "id=" in x)
        check(ids == [1] + list(range(10, 20)), "%s: view --filter shows ids %r" % (reader, ids))
        v = run([mark, "view", "--filter", "flags & 0xf == 0xf && ratio == 0.25", trace], env=env)
        lines = [l for l in v.stdout.splitlines() if l.strip()]
        check(len(lines) == 1 and "cli_once" in lines[0], "%s: view --filter on %%x/%%f: %r" % (reader, lines))
        st = run([mark, "stats", "--filter", "tick >= 990", trace], env=env)
        check(st.returncode == 0, "%s: stats --filter: %d %s" % (reader, st.returncode, st.stderr))
        rows = t.stats_marker_counts(st.stdout)
        got = rows.get(t.marker_key(rows, "cli_tick"))
        check(got == 20 and t.marker_key(rows, "cli_req_begin") is None,
              "%s: stats --filter 'tick >= 990': %r" % (reader, rows))
    for cmd in ("view", "stats"):
        b = run([mark, cmd, "--filter", "tick >", trace])
        check(b.returncode == 2 and "column 7" in b.stderr, "%s bad --filter: %d %r" % (cmd, b.returncode, b.stderr))


def case_long_strings(mark, prog, workdir):
    """A %s of 254 bytes or more is recorded as its first 252 bytes and "...":
    the probe must judge that text, not the program's longer string, so that
    `record --filter X` keeps exactly the events `view --filter X` shows of
    the same program recorded unfiltered.  PROG is tests/tracer/tracer_prog
    ("strings 10 1": t_str "%d %ld %s %s" tid, i, s, next, s cycling through
    "", "b", 253 x "m" (kept whole), "" and 1000 x "z" (kept truncated))."""
    trace = t.fresh(workdir, "all")
    r = run([prog, "strings", "10", "1"], env=dict(os.environ, MARK_TRACE=trace, MARK_ENABLE="t_str"))
    check(r.returncode == 0, "unfiltered run: %d %s" % (r.returncode, r.stderr))

    def ids(path, expr=None):
        v = run([mark, "view"] + (["--filter", expr] if expr else []) + [path])
        check(v.returncode == 0, "view %s: %d %s" % (path, v.returncode, v.stderr))
        return sorted(int(x.split(" i=")[1].split()[0]) for x in v.stdout.splitlines() if " i=" in x)

    check(len(ids(trace)) == 10, "unfiltered: %d events, want 10" % len(ids(trace)))
    for name, expr, want in (
            ("tail", 's == "*zzzz"', []),                 # the kept text ends with "..."
            ("dots", 's == "*z..."', [4, 9]),
            ("exact", 's == "%s..."' % ("z" * 252), [4, 9]),
            ("head", 'next == "zzz*" && s != "*..."', [3, 8]),
            ("whole", 's == "%s"' % ("m" * 253), [2, 7])):  # 253 bytes: kept whole
        shown = ids(trace, expr)
        check(shown == want, "%s: view --filter shows i=%r, want %r" % (name, shown, want))
        kept = t.fresh(workdir, name)
        r = run([prog, "strings", "10", "1"],
                env=dict(os.environ, MARK_TRACE=kept, MARK_ENABLE="t_str", MARK_FILTER=expr))
        check(r.returncode == 0, "%s: MARK_FILTER run: %d %s" % (name, r.returncode, r.stderr))
        got = ids(kept)
        check(got == shown, "%s: record with MARK_FILTER='%s' kept i=%r; view --filter on the unfiltered "
              "trace shows i=%r" % (name, expr if len(expr) < 40 else expr[:36] + "...", got, shown))


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}

if __name__ == "__main__":
    case, mark, target, workdir = sys.argv[1:5]
    os.makedirs(workdir, exist_ok=True)
    CASES[case](mark, target, workdir)
    if t.failures:
        print("FAILED: %d check(s)" % len(t.failures), file=sys.stderr)
        sys.exit(1)
    print("ok")
