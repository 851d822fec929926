#!/bin/sh
# Rank-map time for 1k, 10k and 100k ranks (8 per node, tp=8 pp=4 dp=auto,
# a fat tree with shuffled names), against one plain sort of the same node
# array measured in the same run. Goal: 100k ranks under 100 ms.
set -u
b=${top_builddir:-../..}/tests/bench/bench_rankmap
[ -x "$b" ] || { echo "bench_rankmap not built (make -C tests bench/bench_rankmap)"; exit 1; }
"$b" 1024 10240 102400
