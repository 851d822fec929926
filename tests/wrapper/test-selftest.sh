#!/bin/sh
# tests/wrapper/test-selftest.sh: a test double of `llm-train selftest
# --json FILE` (one task per node, the report of doc/contracts.md written
# by task 0): the nodes named in TEST_SELFTEST_WRONG give wrong answers,
# those in TEST_SELFTEST_SLOW are slow. Every task exits 88 when a node is
# bad, else 0. For the wrapper's preflight tests until the real one runs.
set -u
[ "${1:-}" = selftest ] && [ "${2:-}" = --json ] && [ -n "${3:-}" ] ||
	{ echo "usage: $0 selftest --json FILE" >&2; exit 64; }
file=$3
bad=
for n in $(scontrol show hostnames "$SLURM_STEP_NODELIST"); do
	v=ok
	case " ${TEST_SELFTEST_WRONG:-} " in *" $n "*) v=wrong;; esac
	case " ${TEST_SELFTEST_SLOW:-} " in *" $n "*) [ $v = ok ] && v=slow;; esac
	[ $v = ok ] || bad="$bad $n"
done
if [ "${SLURM_PROCID:-0}" = 0 ]; then
	{
		printf '{"version":1,"size":"small","elapsed_s":0.1,"median_gflops":40,"nodes":['
		sep=
		for n in $(scontrol show hostnames "$SLURM_STEP_NODELIST"); do
			v=ok ans=ok slow=false g=40 c=0.5
			case " $bad " in *" $n "*) v=bad;; esac
			case " ${TEST_SELFTEST_WRONG:-} " in *" $n "*) v=wrong ans=wrong;; esac
			[ $v = bad ] && v=slow slow=true g=12 c=1.7
			printf '%s{"node":"%s","ranks":[0],"answers":"%s","gflops":%s,"membw_gbs":9,"compute_s":%s,"slow":%s,"verdict":"%s"}' \
				"$sep" "$n" $ans $g $c $slow $v
			echo "selftest: $n: $v, $g GFLOP/s" >&2
			sep=,
		done
		printf '],"links":[],"bad_nodes":['
		sep=
		for n in $bad; do printf '%s"%s"' "$sep" "$n"; sep=,; done
		printf '],"verdict":"%s"}\n' "$([ -n "$bad" ] && echo bad || echo ok)"
	} >"$file.tmp" && mv "$file.tmp" "$file"
fi
[ -z "$bad" ] || exit 88
