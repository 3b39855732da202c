#!/bin/bash
# bench/fork/run.sh BUILD REPS SCALE WORKDIR - the fork table of `make bench`:
# a loop of fork, _exit, waitpid (wall and CPU time per round) in one
# program built compiled out and with libmark linked (nothing armed;
# MARK_AGENT=0; tracing on with MARK_TRACE).  The variants run alternately,
# so the ratios printed come from one run on the same machine state.
set -u
BUILD=$1 REPS=$2 SCALE=$3 WORK=$4
B=$BUILD/bench
ROUNDS=$(awk -v s="$SCALE" 'BEGIN { r = int(1000 * s); print (r < 100 ? 100 : r) }')
mkdir -p "$WORK"
XDG=$WORK/xdg
mkdir -p "$XDG" && chmod 700 "$XDG"
declare -A WALL CPU FAULTS
VARIANTS=(out out_libs out_thread libs_thread linked agent_off event_loop traced)
for ((rep = 0; rep < REPS; rep++)); do
	for v in "${VARIANTS[@]}"; do
		case $v in
		out) x=$("$B/bench_fork_out" "$ROUNDS") ;;
		out_libs) x=$("$B/bench_fork_out_libs" "$ROUNDS") ;;
		out_thread) x=$("$B/bench_fork_out" "$ROUNDS" thread) ;;
		libs_thread) x=$("$B/bench_fork_out_libs" "$ROUNDS" thread) ;;
		linked) x=$(XDG_RUNTIME_DIR=$XDG "$B/bench_fork_linked" "$ROUNDS") ;;
		agent_off) x=$(MARK_AGENT=0 "$B/bench_fork_linked" "$ROUNDS") ;;
		event_loop) x=$(XDG_RUNTIME_DIR=$XDG "$B/bench_fork_loop" "$ROUNDS") ;;
		traced)
			rm -rf "$WORK/trace"
			x=$(XDG_RUNTIME_DIR=$XDG MARK_TRACE=$WORK/trace "$B/bench_fork_linked" "$ROUNDS") ;;
		esac
		[ -n "$x" ] || { echo "S fork $v bench_fork printed nothing"; exit 1; }
		read -r w c f <<<"$x"
		WALL[$v]="${WALL[$v]:-} $w"
		CPU[$v]="${CPU[$v]:-} $c"
		FAULTS[$v]="${FAULTS[$v]:-} $f"
	done
done
rm -rf "$WORK/trace"
echo "I table_title fork 9. What a fork costs: µs per fork + _exit + waitpid round (issue 17)"
echo "I table_note fork Rows: \`out\` = compiled out (\`-DMARK_DISABLE\`, libmark not linked); \`out_libs\` = compiled out but loading libmark.so and liburcu-bp.so all the same (what their mappings cost a fork, apart from anything libmark does); \`out_thread\` = the same program with one extra thread asleep in poll() (what the agent thread costs any program: in a multi-threaded process the C library's fork takes and resets its allocator's arenas, the stdio list and other per-process state, and the child rewrites the other threads' descriptors, each a page written after fork); \`libs_thread\` = both at once, libmark.so and liburcu-bp.so loaded and one bare thread (the floor for any agent thread: what \`linked\` would cost if libmark's fork handlers cost nothing); \`linked\` = libmark linked, agent on, nothing armed; \`agent_off\` = the same with \`MARK_AGENT=0\`; \`event_loop\` = agent on, served from the program's loop (\`MARK_AGENT_EVENT_LOOP\`: no agent thread; each round polls the agent's descriptor); \`traced\` = \`MARK_TRACE\` on (each child records one event into its own \`pid-N/\` trace). Columns: wall-clock and CPU (user + system, parent and children) time per round, and page faults, minor and major (parent and children), per round, which the machine's load hardly disturbs: copy-on-write faults on each private page the fork handlers write, and faults on the file-mapped pages a child touches. $ROUNDS rounds per sample, the variants alternating. Goal: \`linked\` within noise of \`out\` (met by \`agent_off\` and \`event_loop\`; not met by \`linked\`, which pays what \`libs_thread\` pays plus its fork handlers' few faults: no sound agent without a thread was found, see docs/markers.md, fork)."
echo "I table_program fork bench/fork/run.sh"
for v in "${VARIANTS[@]}"; do
	echo "R fork $v wall us${WALL[$v]}"
	echo "R fork $v cpu us${CPU[$v]}"
	echo "R fork $v faults n${FAULTS[$v]}"
done
med() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
for kind in wall cpu faults; do
	if [ $kind = faults ]; then line="page faults"; else line="$kind time"; fi
	line="$line, ratio of medians to out in this run:"
	for v in out_libs out_thread libs_thread linked agent_off event_loop traced; do
		case $kind in
		wall) a=${WALL[$v]} b=${WALL[out]} ;;
		cpu) a=${CPU[$v]} b=${CPU[out]} ;;
		faults) a=${FAULTS[$v]} b=${FAULTS[out]} ;;
		esac
		line="$line $v $(ratio "$(med "$a")" "$(med "$b")")"
	done
	echo "I table_note fork $line."
done

# ---- a forking server: accept() and fork a backend per connection on
# 127.0.0.1 (bench/fork/fork_server.c), compiled out and linked, alternating.
CONNS=$(awk -v s="$SCALE" 'BEGIN { r = int(500 * s); print (r < 50 ? 50 : r) }')
declare -A SV
SVARIANTS=(out linked agent_off event_loop)
for ((rep = 0; rep < REPS; rep++)); do
	for v in "${SVARIANTS[@]}"; do
		case $v in
		out) x=$("$B/bench_forkserver_out" "$CONNS") ;;
		linked) x=$(XDG_RUNTIME_DIR=$XDG "$B/bench_forkserver_linked" "$CONNS") ;;
		agent_off) x=$(MARK_AGENT=0 "$B/bench_forkserver_linked" "$CONNS") ;;
		event_loop) x=$(XDG_RUNTIME_DIR=$XDG "$B/bench_forkserver_loop" "$CONNS") ;;
		esac
		[ -n "$x" ] || { echo "S forkserver $v bench_forkserver printed nothing"; continue; }
		read -r w c f r <<<"$x"
		SV[$v,wall]="${SV[$v,wall]:-} $w" SV[$v,cpu]="${SV[$v,cpu]:-} $c"
		SV[$v,faults]="${SV[$v,faults]:-} $f" SV[$v,rate]="${SV[$v,rate]:-} $r"
	done
done
echo "I table_title forkserver 9a. A forking server: one connection accepted, a backend forked for it, one byte answered (issue 17)"
echo "I table_note forkserver Rows: \`out\` = compiled out; \`linked\` = libmark linked, agent on, nothing armed; \`agent_off\` = the same with \`MARK_AGENT=0\`; \`event_loop\` = agent on, served from the accept loop (\`MARK_AGENT_EVENT_LOOP\`, no agent thread; one poll() more per connection).  A client process connects $CONNS times in a row to a server on 127.0.0.1 that forks a backend per connection (accept, fork, the backend writes one byte and exits, the server reaps it), as \`pgbench -C\` makes PostgreSQL do (PostgreSQL itself is not built here).  Columns: wall-clock µs per connection, CPU µs and page faults (minor and major) per connection (server, backends and client), connections per second.  Goal: \`linked\` within noise of \`out\` (met by \`agent_off\` and \`event_loop\`; \`linked\` pays what \`out_thread\` pays, see docs/markers.md)."
echo "I table_program forkserver bench/fork/run.sh (bench/fork/fork_server.c)"
for v in "${SVARIANTS[@]}"; do
	[ -n "${SV[$v,wall]:-}" ] || continue
	echo "R forkserver $v wall us${SV[$v,wall]}"
	echo "R forkserver $v cpu us${SV[$v,cpu]}"
	echo "R forkserver $v faults n${SV[$v,faults]}"
	echo "R forkserver $v rate conn/s${SV[$v,rate]}"
done
for kind in rate cpu faults; do
	line="$kind, ratio of medians to out in this run:"
	for v in linked agent_off event_loop; do
		[ -n "${SV[$v,$kind]:-}" ] && [ -n "${SV[out,$kind]:-}" ] || continue
		line="$line $v $(ratio "$(med "${SV[$v,$kind]}")" "$(med "${SV[out,$kind]}")")"
	done
	echo "I table_note forkserver $line."
done
