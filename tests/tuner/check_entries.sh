#!/bin/sh
# The search's ways in (docs/tuner.md, "A sample's way"): the functions of
# tuner/search/search.h that take a writable acl_search_t. A sample, and
# every fact about what NCCL ran, goes in through acl_search_observe; the
# others set the search up or step it. A new one fails this check: give it
# a field of acl_search_obs_t instead, or say here why it is not a way in.
# usage: check_entries.sh SEARCH_H
h=${1:?usage: check_entries.sh tuner/search/search.h}
[ -r "$h" ] || { echo "check_entries: cannot read $h" >&2; exit 1; }
allowed="acl_search_init acl_search_next acl_search_observe acl_search_restrict acl_search_seed"
# declarations may span lines: join each one up to its ';'
found=$(awk '/^[A-Za-z_][A-Za-z0-9_ *]*[ *]acl_search_[a-z0-9_]+\(/ { d = $0; while (d !~ /;/ && (getline l) > 0) d = d " " l; print d }' "$h" |
  grep -E '\(acl_search_t \*' | sed -E 's/^.*[ *](acl_search_[a-z0-9_]+)\(.*$/\1/' | sort -u | tr '\n' ' ')
want=$(echo "$allowed" | tr ' ' '\n' | sort -u | tr '\n' ' ')
if [ "$found" != "$want" ]; then
  echo "FAIL: the search's writable entry points changed:"
  echo "  found:   $found"
  echo "  allowed: $want"
  exit 1
fi
echo "ok: the search's ways in are $found"
