"""examples/dali_ports/<framework>_getting_started.py (DALI's tutorials, ported with only the
imports changed) runs under the framework being tested and prints what it should (the
framework-free ports run in tests/compat/test_dali_ports.py; the runner is tests/conftest.py's)."""

from __future__ import annotations

# framework -> (the ported script, lines it must print)
EXAMPLES = {
    "torch": (
        "pytorch_getting_started.py",
        [
            "data (8, 3, 64, 64) torch.float32",
            "label (8, 1) torch.int32",
            "epoch 0: 20 samples in 2 steps",
            "epoch 1: 20 samples in 2 steps",
            "labels in range: True",
        ],
    ),
    "tf": (
        "tensorflow_getting_started.py",
        [
            "images (8, 1024) float32",
            "labels (8, 1) int32",
            "epochs trained: 2 finite loss: True",
        ],
    ),
    "paddle": (
        "paddle_getting_started.py",
        [
            "data (8, 3, 24, 24) paddle.float32",
            "epoch 0: 2 steps of 8, len 2",
            "epoch 1: 2 steps of 8, len 2",
        ],
    ),
    "jax": (
        "jax_getting_started.py",
        [
            "images (8, 32, 32, 3) float32",
            "labels (8, 1) int32",
            "one epoch: 3 batches, len 3",
            "peek spec (4, 16, 16, 3) uint8",
            "peek equals next: True",
        ],
    ),
}


def test_ported_tutorial_runs(adapter, run_dali_port):
    script, expected_lines = EXAMPLES[adapter.name]
    lines = run_dali_port(script)
    for expected in expected_lines:
        assert expected in lines, (expected, lines)
