#!/bin/sh
# The plugin must export exactly the NCCL ABI symbols of
# tuner/plugin/exports.map (nm -D), and the docs that count them
# (meson.build, docs/style.md) must give their number.
# usage: check_exports.sh PLUGIN.so SOURCE_ROOT
set -eu
root=$2
got=$(nm -D --defined-only "$1" | awk '{print $3}' | sort | tr '\n' ' ')
want=$(sed -n 's/^ *\(nccl[A-Za-z_0-9]*\);$/\1/p' "$root/tuner/plugin/exports.map" | sort | tr '\n' ' ')
if [ -z "$want" ] || [ "$got" != "$want" ]; then
  echo "exported: $got"; echo "expected (exports.map): $want"; exit 1
fi
n=$(echo $want | wc -w)
word=$(echo "one two three four five six seven eight nine ten" | cut -d' ' -f"$n")
for f in meson.build docs/style.md; do
  grep -q "its $word ABI symbols" "$root/$f" || {
    echo "$f does not say the plugin exports its $word ABI symbols ($n in exports.map)"; exit 1; }
done
echo "exports ok ($n): $got"
