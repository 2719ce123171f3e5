#!/bin/sh
# A suite whose tool was not found at configure time: registered anyway so
# that `meson test --list` shows it, and skipped (exit 77) when run.
echo "skipped: needs $* (not found when the build was configured)" >&2
exit 77
