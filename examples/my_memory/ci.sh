#!/usr/bin/env bash
# CI: install examples/my_memory as a package (its entry points register `recency` and
# `wall_follower`), run it through embodmem-run on two worlds beside the stock frame memory, and check
# that both appear in the side-by-side table of memory designs. Run from anywhere; needs embodmem installed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python -m venv --system-site-packages "$work/venv"   # embodmem and its dependencies come from the CI's Python
cp -r "$here" "$work/src"                             # build from a copy: nothing is written into the repository
"$work/venv/bin/python" -m pip install --quiet --no-deps "$work/src"
# embodmem-run is `python -m embodmem` (the same main); the venv's Python sees the example's entry points.
run="$work/venv/bin/python -m embodmem"

$run --list-plugins | tee "$work/plugins.txt"
grep -q "recency = my_memory.memory:RecencyMemory" "$work/plugins.txt"
grep -q "wall_follower = my_memory.policy:make_agent" "$work/plugins.txt"

$run experiment.variants=[recency] experiment.baselines=[explorer,wall_follower] \
    experiment.tasks=[wreck,barrel] experiment.world_seeds=[1000,1001] env.max_steps=60 \
    logger.progress=false logger.plots=false hydra.run.dir="$work/run" | tee "$work/out.txt"

grep -q "Memory designs side by side" "$work/out.txt"
for design in memory recency explorer wall_follower; do
    grep -Eq "  ${design}\$" "$work/out.txt" || { echo "ci.sh: design ${design} missing from the table" >&2; exit 1; }
done
grep -q "^recency,warm,2," "$work/run/designs.csv"
echo "ci.sh: examples/my_memory ran through embodmem-run on two worlds and appears in the designs table"
