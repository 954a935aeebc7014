#!/bin/bash
# hpcjobs's stand-in for the job psij-python's test_nodefile.py runs (its sdist lacks
# the script): each process checks that the launcher wrote the node file PSIJ_NODEFILE
# with one line per process ($1 of them).
set -eu
expected=$1
if [ ! -r "${PSIJ_NODEFILE:-}" ]; then
    echo "no readable PSIJ_NODEFILE ('${PSIJ_NODEFILE:-}')" >&2
    exit 1
fi
lines=$(wc -l <"$PSIJ_NODEFILE")
if [ "$lines" -ne "$expected" ]; then
    echo "PSIJ_NODEFILE has $lines lines, expected $expected" >&2
    exit 1
fi
