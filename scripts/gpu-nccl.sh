#!/usr/bin/env bash
# An NCCL library for a GPU machine that cannot reach the internet: built
# from a source tarball, restored from xz parts, or one already built. The
# last line on stdout is the library folder (libnccl.so.2 and libnccl.so in
# it), for scripts/gpu-bench.sh --nccl and scripts/gpu-record.sh --nccl:
#
#   NCCL=$(scripts/gpu-nccl.sh --src nccl-2.30.7.tar.gz | tail -n 1)
#   NCCL=$(scripts/gpu-nccl.sh --parts nccl-2.30.7-sm90)   # libnccl.so.2.xz.part-*
#   NCCL=$(scripts/gpu-nccl.sh --lib /opt/nccl/lib)        # checks it, prints it
#
# Options: --prefix DIR (default /tmp/nccl: DIR/lib, DIR/src),
#          --gencode "FLAGS" (NVCC_GENCODE; default sm_90 = Hopper:
#          -gencode=arch=compute_90,code=sm_90), -j N (default: all cores),
#          --sha256 HEX (check the tarball, or the restored library),
#          --force (rebuild even if DIR/lib/libnccl.so.2 exists).
# Building NCCL 2.30.7 for one architecture takes 3-4 minutes on 16 cores;
# the build needs CUDA (CUDA_HOME, default /usr/local/cuda) and make.
# NCCL 2.30.3 or later runs several ranks on one GPU
# (NCCL_MULTI_RANK_GPU_ENABLE=1, autoccl-bench --ranks-per-gpu).
set -eu
SRC="" PARTS="" LIB="" PREFIX=/tmp/nccl SHA="" FORCE=0
GENCODE="-gencode=arch=compute_90,code=sm_90"
JOBS=$(nproc 2>/dev/null || echo 8)
die() { echo "gpu-nccl.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --src) SRC=$2; shift ;;
    --parts) PARTS=$2; shift ;;
    --lib) LIB=$2; shift ;;
    --prefix) PREFIX=$2; shift ;;
    --gencode) GENCODE=$2; shift ;;
    -j) JOBS=$2; shift ;;
    --sha256) SHA=$2; shift ;;
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | grep '^#'; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
  shift
done
n=0; for v in "$SRC" "$PARTS" "$LIB"; do [ -n "$v" ] && n=$((n+1)); done
[ "$n" = 1 ] || die "give exactly one of --src TARBALL, --parts DIR, --lib DIR"
check_sha() { # file
  [ -z "$SHA" ] && return 0
  got=$(sha256sum "$1" | cut -d' ' -f1)
  [ "$got" = "$SHA" ] || die "$1: sha256 $got, expected $SHA"
}
if [ -n "$LIB" ]; then
  if [ ! -f "$LIB/libnccl.so.2" ] && [ -f "$LIB/lib/libnccl.so.2" ]; then LIB=$LIB/lib; fi
  [ -f "$LIB/libnccl.so.2" ] || die "--lib $LIB: no libnccl.so.2 there (nor in $LIB/lib)"
  check_sha "$LIB/libnccl.so.2"
  (cd "$LIB" && pwd)
  exit 0
fi
mkdir -p "$PREFIX/lib"
OUTLIB=$(cd "$PREFIX/lib" && pwd)
if [ -f "$OUTLIB/libnccl.so.2" ] && [ "$FORCE" = 0 ]; then
  echo "gpu-nccl.sh: $OUTLIB/libnccl.so.2 exists (--force rebuilds it)" >&2
  echo "$OUTLIB"
  exit 0
fi
if [ -n "$PARTS" ]; then
  ls "$PARTS"/libnccl.so.2.xz.part-* > /dev/null 2>&1 || die "--parts $PARTS: no libnccl.so.2.xz.part-* there"
  command -v xz > /dev/null || die "xz is not installed"
  cat "$PARTS"/libnccl.so.2.xz.part-* | xz -dc > "$OUTLIB/libnccl.so.2.tmp"
  mv "$OUTLIB/libnccl.so.2.tmp" "$OUTLIB/libnccl.so.2"
  check_sha "$OUTLIB/libnccl.so.2"
else
  [ -f "$SRC" ] || die "--src $SRC: no such file"
  check_sha "$SRC"
  command -v make > /dev/null || die "make is not installed"
  CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
  [ -x "$CUDA_HOME/bin/nvcc" ] || die "no nvcc in $CUDA_HOME/bin (set CUDA_HOME)"
  rm -rf "$PREFIX/src" && mkdir -p "$PREFIX/src"
  tar -xzf "$SRC" -C "$PREFIX/src" --strip-components=1
  t0=$(date +%s)
  echo "gpu-nccl.sh: building NCCL in $PREFIX/src with $JOBS jobs, NVCC_GENCODE=$GENCODE" >&2
  make -C "$PREFIX/src" -j "$JOBS" src.build CUDA_HOME="$CUDA_HOME" NVCC_GENCODE="$GENCODE" \
    BUILDDIR="$PREFIX/build" >&2
  cp -L "$PREFIX/build/lib/libnccl.so.2" "$OUTLIB/libnccl.so.2"
  strip --strip-unneeded "$OUTLIB/libnccl.so.2" 2> /dev/null || true
  echo "gpu-nccl.sh: built in $(( $(date +%s) - t0 )) s" >&2
fi
ln -sf libnccl.so.2 "$OUTLIB/libnccl.so"
echo "$OUTLIB"
