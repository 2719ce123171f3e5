#!/bin/sh
# No build or run output is committed: logs, Python bytecode, objects.
# Exit 77 (skipped) outside a git checkout (a source tarball).
set -u
root=${1:-.}
command -v git >/dev/null 2>&1 && git -C "$root" rev-parse --git-dir >/dev/null 2>&1 || {
  echo "not a git checkout: skipped"; exit 77; }
bad=$(git -C "$root" ls-files | grep -E '(^|/)(build[^/]*\.log|[^/]*\.pyc|__pycache__/.*|[^/]*\.o)$')
if [ -n "$bad" ]; then
  echo "build or run output committed (remove it; .gitignore keeps it out):"; echo "$bad"; exit 1
fi
echo "no build or run output committed"
