#!/usr/bin/env bash
# Issue 31's figure: a warm `mur run --task hello` of examples/hello-script
# (the installed build: -tags murdriver) against its floor, cmd/mur-floor (the
# same engine, the same two components from the same kind of compile cache,
# nothing else), alternated N times in one run so the machine's load falls on
# both alike. Prints, for each, the median and best wall time, the median CPU
# time (perf stat's task-clock, when perf is there: under load, wall time is
# mostly waiting for a core, CPU time is not) and the peak RSS (GNU time's %M,
# the largest ru_maxrss), the ratios of the medians, and the load average
# before and after. /bin/true's row is the measuring's own cost.
#
#   scripts/bench-warm-run.sh [N]          (default N=40)
#   MUR_BENCH_BIN=DIR scripts/bench-warm-run.sh   (use DIR/mur and DIR/mur-floor, no build)
#   MUR_BENCH_BEFORE=DIR …   (also alternate DIR/mur, another build: a before/after pair)
#
# Everything runs in a fresh temporary HOME; the machine's ~/.murmur is not
# touched.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-40}
root=$PWD
tmp=$(mktemp -d "${TMPDIR:-/tmp}/murmur-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export GOENV=off GOFLAGS= CGO_ENABLED=1

bin=${MUR_BENCH_BIN:-}
if [ -z "$bin" ]; then
  bin=$tmp/bin
  mkdir -p "$bin"
  go build -o "$bin/" -tags murdriver ./cmd/mur ./cmd/mur-floor
  CGO_ENABLED=0 go build -o "$bin/" ./cmd/mur-contain
fi
[ -x /usr/bin/time ] || { echo "bench-warm-run: needs GNU time at /usr/bin/time" >&2; exit 1; }

export HOME=$tmp/home
mkdir -p "$HOME"
cp -r examples/echo-tool examples/hello-script "$tmp/"
(cd "$tmp/echo-tool" && "$bin/mur" build >/dev/null && "$bin/mur" publish >/dev/null)
proj=$tmp/hello-script
cache=$tmp/floor-cache
(cd "$proj" && "$bin/mur" install >/dev/null)
# Warm-up: both components compiled into each cache, the page cache warm.
for _ in 1 2; do
  (cd "$proj" && "$bin/mur" run --task hello >/dev/null 2>&1)
  [ -z "${MUR_BENCH_BEFORE:-}" ] || (cd "$proj" && "$MUR_BENCH_BEFORE/mur" run --task hello >/dev/null 2>&1)
  "$bin/mur-floor" -cache "$cache" "$root/examples/hello-script/hello-script.wasm" "$root/examples/echo-tool/echo-tool.wasm"
done

perf=()
if perf stat -x, -e task-clock -o /dev/null true 2>/dev/null; then
  perf=(perf stat -x, -e task-clock -o "$tmp/cpu")
fi

# one NAME CMD...: runs CMD once from the project folder and appends
# "<wall ns> <peak KiB> <CPU ms>" to $tmp/NAME.
one() {
  local name=$1
  shift
  local t0 t1 cpu=0
  t0=$(date +%s%N)
  (cd "$proj" && "${perf[@]}" /usr/bin/time -f %M -o "$tmp/rss" "$@" >/dev/null 2>&1)
  t1=$(date +%s%N)
  [ ${#perf[@]} -eq 0 ] || cpu=$(awk -F, '$3 == "task-clock" {print $1}' "$tmp/cpu")
  echo "$((t1 - t0)) $(cat "$tmp/rss") $cpu" >>"$tmp/$name"
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
for ((i = 0; i < n; i++)); do
  one mur "$bin/mur" run --task hello
  [ -z "${MUR_BENCH_BEFORE:-}" ] || one before "$MUR_BENCH_BEFORE/mur" run --task hello
  one floor "$bin/mur-floor" -cache "$cache" "$root/examples/hello-script/hello-script.wasm" "$root/examples/echo-tool/echo-tool.wasm"
  one true /bin/true
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# stats NAME: "median-ms best-ms median-cpu-ms peak-MiB".
stats() {
  local cpu
  cpu=$(cut -d' ' -f3 "$1" | sort -n | awk '{c[NR]=$1} END {printf "%.2f", c[int((NR+1)/2)]}')
  sort -n "$1" | awk -v cpu="$cpu" '{t[NR]=$1; if ($2>m) m=$2}
    END {printf "%.2f %.2f %s %.1f", t[int((NR+1)/2)]/1e6, t[1]/1e6, cpu, m/1024}'
}
read -r mm mb mc mr <<<"$(stats "$tmp/mur")"
read -r fm fb fc fr <<<"$(stats "$tmp/floor")"
read -r tm tb tc tr <<<"$(stats "$tmp/true")"
row() { printf '%-24s %10s %9s %9s %9s\n' "$@"; }
row "" "median ms" "best ms" "CPU ms" "peak MiB"
row "mur run (hello-script)" "$mm" "$mb" "$mc" "$mr"
if [ -n "${MUR_BENCH_BEFORE:-}" ]; then
  read -r bm bb bc br <<<"$(stats "$tmp/before")"
  row "mur run, before" "$bm" "$bb" "$bc" "$br"
fi
row "mur-floor (the anchor)" "$fm" "$fb" "$fc" "$fr"
row "/bin/true" "$tm" "$tb" "$tc" "$tr"
awk -v m="$mm" -v f="$fm" -v mb="$mb" -v fb="$fb" -v mc="$mc" -v fc="$fc" 'BEGIN {
  printf "mur / floor: %.2f (median wall), %.2f (best wall)", m/f, mb/fb
  if (fc > 0) printf ", %.2f (median CPU)", mc/fc
  printf "\n" }'
echo "N=$n, load average $load0 before, $load1 after"
