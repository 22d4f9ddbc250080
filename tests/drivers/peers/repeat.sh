#!/usr/bin/env bash
# Run tests/drivers/peers N times in a row and print one line per run and a total (docs/testing.md).
#   tests/drivers/peers/repeat.sh 10            # on an idle host
#   tests/drivers/peers/repeat.sh 10 --stress   # with `stress-ng --cpu 2` running beside each run
# Stops nothing on failure: every run is counted. Each run's pytest output: $OUT/run-K.txt.
set -u
cd "$(dirname "$0")/../../.."
runs=${1:?usage: repeat.sh N [--stress]}
stress=${2:-}
OUT=${OUT:-$(mktemp -d)}
pass=0
for k in $(seq 1 "$runs"); do
    hog=""
    if [ "$stress" = "--stress" ]; then
        stress-ng --cpu 2 --timeout 1800 >/dev/null 2>&1 &
        hog=$!
    fi
    start=$(date +%s)
    if timeout 1800 .venv/bin/python -m pytest -q -p no:cacheprovider tests/drivers/peers >"$OUT/run-$k.txt" 2>&1; then
        verdict=pass; pass=$((pass + 1))
    else
        verdict=FAIL
    fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    if [ -n "$hog" ]; then kill "$hog" 2>/dev/null; wait "$hog" 2>/dev/null; fi
    echo "run $k: $verdict in $(( $(date +%s) - start )) s (load average $load): $(tail -n 1 "$OUT/run-$k.txt")"
done
echo "passed $pass of $runs${stress:+ with stress-ng --cpu 2} (outputs in $OUT)"
[ "$pass" = "$runs" ]
