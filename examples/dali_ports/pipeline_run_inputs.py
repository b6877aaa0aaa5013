"""DALI 2.x's named pipeline inputs, ported: ``pipe.run(my_inp=batch)`` feeds external_source.

Only the imports differ from the DALI program (from Pipeline.run's documentation, with an
image batch for the input).
"""

import numpy as np

import chute.fn as fn
import chute.types as types
from chute import pipeline_def


@pipeline_def(batch_size=3, num_threads=1, device_id=0)
def my_pipe():
    inp = fn.external_source(name="my_inp", layout="HWC", dtype=types.UINT8)
    flipped = fn.flip(inp, horizontal=1)
    return inp, flipped, fn.reductions.mean(fn.cast(inp, dtype=types.FLOAT), axes=(0, 1))


p = my_pipe(prefetch_queue_depth=1)
p.build()
rng = np.random.default_rng(0)
for step in range(3):
    batch = rng.integers(0, 256, size=(3, 4, 5, 3), dtype=np.uint8)
    inp, flipped, mean = p.run(my_inp=batch)
    ok = np.array_equal(inp.as_array(), batch) and np.array_equal(
        flipped.as_array(), batch[:, :, ::-1]
    )
    ok &= np.allclose(mean.as_array(), batch.mean(axis=(1, 2)), rtol=1e-5)
    print(f"step {step}: input round-trips and flips: {ok}")

# the same with feed_input, and with exec_pipelined=False as DALI also allows
p = my_pipe(exec_pipelined=False, exec_async=False)
p.feed_input("my_inp", np.zeros((3, 2, 2, 3), np.uint8))
print("feed_input:", p.run()[0].shape())
print(
    "run(inputs) on a non-pipelined pipeline:",
    p.run(my_inp=np.ones((3, 1, 1, 3), np.uint8))[0].shape(),
)
