"""A/B of two chute trees on this machine: alternating fresh processes, rounds, median ratio.

usage: python3 bench/ab_trees.py OUT.json DATA DEVICE PRESETS ROUNDS BATCH THREADS WARMUP ITERS
Trees: OLD_TREE (default .c9/old; before: `git archive REV core | tar -x -C .c9/old`, its
extension built in place), . (after). Each run is `chute bench --systems chute --reps 1` in a
fresh process. PRESETS is comma-separated; a preset may carry engine settings after a colon,
';'-separated, each passed as `--tuning` (e.g. `train:gpu_lanes=3;decoder_options.cpu_share=0.2`).
Prints a table last.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

out, data, device, presets, rounds, batch, threads, warmup, iters = sys.argv[1:10]
presets = presets.split(",")
rounds = int(rounds)
site = os.environ.get("SITE", "/tmp/site")
old_tree = os.path.abspath(os.environ.get("OLD_TREE", ".c9/old"))
old_main = "chute" if os.path.exists(f"{old_tree}/core/src/chute/__main__.py") else "chute.cli"
trees = {
    "before": ([f"{old_tree}/core/src", site], ["-m", old_main]),
    "after": ([f"{os.getcwd()}/core/src", site], ["-m", "chute"]),
}
res = {p: {t: [] for t in trees} for p in presets}
for r in range(rounds):
    for p in presets:
        order = list(trees) if r % 2 == 0 else list(trees)[::-1]
        for t in order:
            path, mod = trees[t]
            with tempfile.NamedTemporaryFile(suffix=".json") as f:
                cmd = [
                    sys.executable,
                    *mod,
                    "bench",
                    "--data",
                    data,
                    "--preset",
                    p.partition(":")[0],
                    *(x for t in p.partition(":")[2].split(";") if t for x in ("--tuning", t)),
                    "--device",
                    device,
                    "--systems",
                    "chute",
                    "--batch-size",
                    batch,
                    "--threads",
                    threads,
                    "--warmup",
                    warmup,
                    "--iters",
                    iters,
                    "--reps",
                    "1",
                    "--json",
                    f.name,
                ]
                env = {**os.environ, "PYTHONPATH": ":".join(path)}
                cp = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
                try:
                    with open(f.name) as written:
                        v = json.load(written)["results"]["chute"]["img_per_s"]
                except Exception:
                    print(cp.stdout[-2000:], cp.stderr[-3000:], flush=True)
                    v = None
            res[p][t].append(v)
            print(f"round {r} {p} {t}: {v}", flush=True)
with open(out, "w") as f:
    record = {"device": device, "batch": batch, "threads": threads, "iters": iters}
    json.dump({**record, "results": res}, f, indent=1)
print(
    f"\n{'preset':12} {'before':>9} {'after':>9} {'after/before median':>20} {'per-round ratios'}"
)
for p in presets:
    b, a = res[p]["before"], res[p]["after"]
    ratios = [x / y for x, y in zip(a, b) if x and y]
    print(
        f"{p:12} {statistics.median([x for x in b if x]):9.0f} {statistics.median([x for x in a if x]):9.0f} "
        f"{statistics.median(ratios):20.3f} {' '.join(f'{q:.2f}' for q in ratios)}"
    )
