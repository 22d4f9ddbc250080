#!/usr/bin/env bash
# The README's `make test` as a new user runs it: a fresh clone, nothing set up, repeated N times.
#   tools/checks/fresh_clone_test.sh N [--stress] [--remove-chromium] [--repo PATH]
# --stress           runs `stress-ng --cpu 4` beside each run (load average about 8 on 2 cores)
# --remove-chromium  uninstalls Debian's chromium before each run, so make test must install it
# Prints one line per run: pass/fail, the pytest summary, wall time, the load average seen.
set -u
n=${1:?usage: fresh_clone_test.sh N [--stress] [--remove-chromium] [--repo PATH]}; shift
stress=0; remove=0; repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
while [ $# -gt 0 ]; do
    case $1 in
        --stress) stress=1 ;; --remove-chromium) remove=1 ;; --repo) repo=$2; shift ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac; shift
done
if [ $stress = 1 ] && ! command -v stress-ng >/dev/null; then
    echo "error: --stress needs stress-ng (apt-get install stress-ng)" >&2; exit 2
fi
scratch=$(mktemp -d /tmp/robodyn-fresh.XXXXXX)
echo "commit $(git -C "$repo" rev-parse --short HEAD), $n runs, stress=$stress, remove-chromium=$remove, in $scratch"
for i in $(seq 1 "$n"); do
    dir=$scratch/run$i/robodyn
    mkdir -p "$(dirname "$dir")"
    git clone -q "$repo" "$dir"
    [ $remove = 1 ] && DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq chromium >/dev/null 2>&1
    spid=
    if [ $stress = 1 ]; then stress-ng --cpu 4 --timeout 3h >/dev/null 2>&1 & spid=$!; fi
    ( while sleep 30; do cut -d' ' -f1 /proc/loadavg; done ) > "$scratch/run$i/load.txt" & lpid=$!
    start=$(date +%s)
    (cd "$dir" && make test) > "$scratch/run$i/log.txt" 2>&1; rc=$?
    took=$(( $(date +%s) - start ))
    kill $lpid 2>/dev/null; [ -n "$spid" ] && kill "$spid" 2>/dev/null; wait 2>/dev/null
    summary=$(grep -E "^(=+ )?[0-9]+ (passed|failed)|[0-9]+ passed" "$scratch/run$i/log.txt" | tail -1)
    load=$(sort -n "$scratch/run$i/load.txt" | awk '{a[NR]=$1} END {if (NR) printf "%s-%s", a[1], a[NR]}')
    echo "run $i: $([ $rc = 0 ] && echo PASS || echo "FAIL rc=$rc") | $summary | ${took} s | load average $load | log $scratch/run$i/log.txt"
done
