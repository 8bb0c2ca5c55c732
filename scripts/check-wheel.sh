#!/usr/bin/env bash
# Build the wheel and try it as a new user would: a clean venv (no system packages), installed from the
# wheel alone, run from an empty directory. Checks: embodmem-run completes; `import agents` and
# `import envs` fail (nothing generic is installed at top level); MiniGrid's tables are unchanged by
# `import embodmem`; Hydra composes from pkg://embodmem.configs. Takes a few minutes (torch).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python -m pip wheel -q --no-deps "$repo" -w "$work/dist"
python -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$work"/dist/embodmem-*.whl
mkdir "$work/empty" && cd "$work/empty"
py="$work/venv/bin/python"
"$py" - <<'PY'
import importlib, minigrid.core.constants as c
before = dict(c.OBJECT_TO_IDX), dict(c.COLOR_TO_IDX)
import embodmem, gymnasium as gym
gym.make("embodmem:EmbodMem/Wreck-v0", world_seed=1000).reset(seed=0)
assert (dict(c.OBJECT_TO_IDX), dict(c.COLOR_TO_IDX)) == before, "MiniGrid tables changed"
for name in ("agents", "envs"):
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        print(f"import {name}: ModuleNotFoundError (good)")
    else:
        raise SystemExit(f"import {name} succeeded: a generic top-level package is installed")
from hydra import compose, initialize_config_module
with initialize_config_module("embodmem.configs", version_base="1.3"):
    cfg = compose("config", overrides=["experiment=ablations"])
print("compose from pkg://embodmem.configs: ok,", cfg.experiment.variants)
print("MiniGrid OBJECT_TO_IDX unchanged after import embodmem: ok")
PY
"$work/venv/bin/embodmem-run" env.max_steps=40 logger.progress=false hydra.run.dir="$work/empty/out" > "$work/run.txt"
test -s "$work/empty/out/metrics.jsonl"
echo "embodmem-run from an empty directory: ok ($(wc -l < "$work/empty/out/metrics.jsonl") records)"
