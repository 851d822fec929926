#!/bin/sh
# tests/bench/goodput.sh: goodput of a 16,384-GPU job with Llama 3's
# published failure rate (419 unexpected interruptions in 54 days) under
# the wrapper's automatic Young/Daly checkpoint interval against fixed
# intervals (bench/goodput_sim, Monte Carlo, 200 runs). Costs: what
# bench/recovery.sh measured on the emulated cluster (if it ran), then
# production-sized costs (checkpoint 10-60 s, restart 1-10 min).
set -u
sim=$top_builddir/tests/bench/goodput_sim
[ -x "$sim" ] || { echo "goodput.sh: $sim not built (make -C tests bench/goodput_sim)"; exit 1; }
ratio() {
	awk '/^auto/ {a=$(NF-2)} /^fixed/ {f=$(NF-2); sub("%","",f); if (f+0 > b+0) {b=f; bi=$3}} {print}
	     END {sub("%","",a); printf "auto / best fixed (%s s): %.4f\n", bi, a / b}'
}
env=$top_builddir/build/bench-recovery.env
if [ -r "$env" ]; then
	. "$env"
	echo "== measured on the emulated cluster (bench/recovery.sh)"
	"$sim" --ckpt "$CKPT" --restart "$RESTART" --requeue "$REQUEUE" --requeue-frac 0.2 | ratio
fi
for c in "10 60 300" "30 300 1200" "60 600 1800"; do
	set -- $c
	echo "== checkpoint $1 s, restart $2 s, requeue $3 s"
	"$sim" --ckpt "$1" --restart "$2" --requeue "$3" --requeue-frac 0.2 | ratio
done
