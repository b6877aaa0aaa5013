"""One process of a 2-process jax.distributed job on CPU (started by test_jax_multidevice.py).

    python _jax_process.py PROCESS_ID PORT FOLDER

It joins the job (coordinator on localhost:PORT), reads FOLDER/files.json (the
dataset: one-byte files whose content is their index) and writes
FOLDER/report-PROCESS_ID.json: for the global batch laid over the 4 devices of both
processes, which rows this process held and which samples were real; for one pipeline
per process without a sharding, each policy's sample ids, len() and step count; and a
checkpoint's resume.
"""

from __future__ import annotations

import json
import os
import sys


def local_rows(array) -> list:
    """This process's slices of a global array, in row order, as lists."""
    import numpy as np

    shards = sorted(array.addressable_shards, key=lambda s: s.index[0].start)
    return [np.asarray(s.data).tolist() for s in shards]


def sharded_epochs(iterator, epochs: int = 2) -> list[dict]:
    """Per epoch: steps, len(), and this process's (row start, labels, real) of every slice."""
    import numpy as np

    out = []
    for _ in range(epochs):
        steps = []
        for batch in iterator:
            label = batch["label"]
            shards = sorted(label.addressable_shards, key=lambda s: s.index[0].start)
            steps.append(
                {
                    "shape": list(label.shape),
                    "rows": [
                        [s.index[0].start, np.asarray(s.data).flatten().tolist(), s.device.id]
                        for s in shards
                    ],
                    "real_by_slice": batch.real_by_slice,
                }
            )
        out.append({"len": len(iterator), "steps": steps})
        iterator.reset()
    return out


def main(process_id: int, port: int, folder: str) -> None:
    import jax

    jax.distributed.initialize(f"localhost:{port}", num_processes=2, process_id=process_id)
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    import chute.jax
    from chute import fn, pipeline_def

    with open(os.path.join(folder, "files.json")) as f:
        files = json.load(f)
    sharding = NamedSharding(Mesh(np.array(jax.devices()), ("batch",)), P("batch"))

    @pipeline_def(batch_size=2, num_threads=1, seed=23)
    def pipe(shard_id=0, num_shards=1):
        return fn.readers.file(
            files=files, random_shuffle=True, shard_id=shard_id, num_shards=num_shards, name="R"
        )

    @chute.jax.data_iterator(
        output_map=["data", "label"], reader_name="R", sharding=sharding, pad_ragged=True
    )
    def iterator_fn(shard_id, num_shards):
        return fn.readers.file(
            files=files, random_shuffle=True, shard_id=shard_id, num_shards=num_shards, name="R"
        )

    report: dict = {
        "process": [jax.process_index(), jax.process_count()],
        "local_devices": [d.id for d in jax.local_devices()],
    }
    decorated = iterator_fn(batch_size=8, num_threads=1, seed=23)
    report["decorated_shards"] = [p.reader_meta("R")["shard_id"] for p in decorated.pipelines]
    report["fill"] = sharded_epochs(decorated)
    dropping = chute.jax.DataIterator(
        pipe, ["data", "label"], reader_name="R", sharding=sharding, last_batch_policy="drop"
    )
    report["drop"] = sharded_epochs(dropping)

    # without a sharding: one pipeline per process, shard = process index / count
    report["unsharded"] = {}
    for policy in ("fill", "drop", "partial"):
        it = chute.jax.DataIterator(
            pipe, ["data", "label"], reader_name="R", last_batch_policy=policy
        )
        ids, steps = [], 0
        for batch in it:
            ids += np.asarray(batch["label"]).flatten()[: batch.real].tolist()
            steps += 1
        shard = it.pipelines[0].reader_meta("R")
        report["unsharded"][policy] = {
            "ids": ids,
            "steps": steps,
            "len": len(it),
            "shard": [shard["shard_id"], shard["number_of_shards"]],
        }

    # a checkpoint taken on both processes resumes the rest of the epoch
    it = chute.jax.DataIterator(pipe, ["data", "label"], reader_name="R", sharding=sharding)
    first = next(it)
    checkpoint = os.path.join(folder, f"checkpoint-{process_id}.json")
    with open(checkpoint, "w") as f:
        json.dump(it.checkpoints(), f)
    rest = [local_rows(b["label"]) for b in it]
    again = chute.jax.DataIterator(pipe, ["data", "label"], reader_name="R", sharding=sharding)
    with open(checkpoint) as f:
        again.load_checkpoints(json.load(f))
    resumed = [local_rows(b["label"]) for b in again]
    report["resume"] = {
        "first_real": first.real,
        "rest": rest,
        "resumed": resumed,
    }
    with open(os.path.join(folder, f"report-{process_id}.json"), "w") as f:
        json.dump(report, f)
    jax.distributed.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
