#!/usr/bin/env bash
# Ships traces recorded by scripts/gpu-record.sh as the replay's data:
#   sim/data/import_traces.sh record-all.tar [SET]     (SET default h200x2)
# Unpacks the bench traces into sim/data/traces/SET/<regime>-<launch>-<coll>/,
# drops the plugin's own traces (*-plugin-*: not a landscape, and large),
# copies the measured per-call event cost (derived/events.tsv, from
# overhead.jsonl) unless the tar brings one, and prints the size. The
# replay (--landscape h200-traces) prefers SET=h200x2 over derived/.
set -eu
TAR=$1 SET=${2:-h200x2}
HERE=$(cd "$(dirname "$0")" && pwd)
DST=$HERE/traces/$SET
mkdir -p "$DST"
tar -xf "$TAR" -C "$DST" --exclude='*-plugin-*' --exclude='*.probe'
[ -f "$DST/events.tsv" ] || cp "$HERE/traces/derived/events.tsv" "$DST/events.tsv"
echo "$(find "$DST" -name '*.jsonl.gz' | wc -l) traces, $(du -sh "$DST" | cut -f1) in $DST"
