#!/usr/bin/env bash
# malloc_purge_stop_join: the program's pthread_join() of its last thread
# does not wait for uslub-purge's next deadline.
#
# When the program's last thread of its own exits, auto mode stops the
# purge thread and joins it in that thread's key destructor. A stop that
# reached the purge thread inside a purge pass was lost (the signal found
# nobody waiting), and the thread slept in its timed wait to its next
# deadline, ~USLUB_DECAY_MS (1 s): 5 of 12 runs of the larson workload
# with one thread took 1.03 s instead of ~25 ms. Runs it 8 times (a
# fresh process each: the purge thread starts at once) and fails on any
# run over 400 ms: before the fix, all 8 fast had a chance of ~1%.
#
#   purge_stop_join.sh MALLOCSUITE LIBUSLUB_MALLOC
set -u
suite=$1 lib=$2
slow=0
for run in 1 2 3 4 5 6 7 8; do
	line=$(env -u USLUB_DECAY_MS -u USLUB_BACKGROUND_THREAD LD_PRELOAD="$lib" \
		"$suite" --workload larson --threads 1 --scale 0.2 --label uslub) || {
		echo "FAIL: run $run: the workload failed"; exit 1; }
	ns=$(printf '%s\n' "$line" | sed -n 's/.*"time_ns":\([0-9]*\).*/\1/p')
	case $line in *'"ok":true'*) ;; *) echo "FAIL: run $run: $line"; exit 1 ;; esac
	case $line in *'"malloc_lib":"'*uslub*) ;; *)
		echo "FAIL: run $run: malloc is not uslub's: $line"; exit 1 ;; esac
	ms=$((ns / 1000000))
	echo "purge_stop_join: run $run: ${ms} ms (the workload, its thread's join included)"
	[ "$ms" -gt 400 ] && slow=$((slow + 1))
done
if [ "$slow" -gt 0 ]; then
	echo "FAIL: $slow of 8 runs over 400 ms: a join waited for uslub-purge's deadline"
	exit 1
fi
echo "purge_stop_join: ok"
