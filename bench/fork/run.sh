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
VARIANTS=(out out_thread linked agent_off traced)
for ((rep = 0; rep < REPS; rep++)); do
	for v in "${VARIANTS[@]}"; do
		case $v in
		out) x=$("$B/bench_fork_out" "$ROUNDS") ;;
		out_thread) x=$("$B/bench_fork_out" "$ROUNDS" thread) ;;
		linked) x=$(XDG_RUNTIME_DIR=$XDG "$B/bench_fork_linked" "$ROUNDS") ;;
		agent_off) x=$(MARK_AGENT=0 "$B/bench_fork_linked" "$ROUNDS") ;;
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
echo "I table_note fork Rows: \`out\` = compiled out (\`-DMARK_DISABLE\`, libmark not linked); \`out_thread\` = the same program with one extra thread asleep in poll() (what the agent thread costs any program: in a multi-threaded process the C library's fork takes and resets its allocator's arenas, the stdio list and other per-process state, and the child rewrites the other threads' descriptors, each a page written after fork); \`linked\` = libmark linked, agent on, nothing armed; \`agent_off\` = the same with \`MARK_AGENT=0\`; \`traced\` = \`MARK_TRACE\` on (each child records one event into its own \`pid-N/\` trace). Columns: wall-clock and CPU (user + system, parent and children) time per round, and minor page faults (parent and children) per round, which the machine's load hardly disturbs: copy-on-write faults on each private page the fork handlers write, and faults on the file-mapped pages a child touches. $ROUNDS rounds per sample, the variants alternating. Goal: \`linked\` within noise of \`out\`."
echo "I table_program fork bench/fork/run.sh"
for v in "${VARIANTS[@]}"; do
	echo "R fork $v wall us${WALL[$v]}"
	echo "R fork $v cpu us${CPU[$v]}"
	echo "R fork $v faults n${FAULTS[$v]}"
done
med() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
for kind in wall cpu faults; do
	if [ $kind = faults ]; then line="minor faults"; else line="$kind time"; fi
	line="$line, ratio of medians to out in this run:"
	for v in out_thread linked agent_off traced; do
		case $kind in
		wall) a=${WALL[$v]} b=${WALL[out]} ;;
		cpu) a=${CPU[$v]} b=${CPU[out]} ;;
		faults) a=${FAULTS[$v]} b=${FAULTS[out]} ;;
		esac
		line="$line $v $(ratio "$(med "$a")" "$(med "$b")")"
	done
	echo "I table_note fork $line."
done
