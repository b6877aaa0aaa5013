"""examples/dali_ports: DALI's documented example programs, ported with only the imports
changed, run on the CPU (the "mixed"/"gpu" parts through the device fallback) and print what
DALI's documentation shows them doing. The framework plugin tutorials run in each plugin's
session (tests/plugins/conformance/test_dali_examples.py); the runner is tests/conftest.py's."""

from __future__ import annotations

import pytest

# script -> lines it must print
PORTS = {
    "getting_started.py": [
        "images is_dense_tensor: False",  # decoded images of different sizes
        "labels is_dense_tensor: True",
        "labels: [0, 0, 1, 1, 2, 2, 3, 3]",  # class folders in order, two files each
        "image layout: HWC channels: {3}",
        "shuffled labels: 8 in range: True",
        "rotated: 8 HWC uint8",
        "random rotated: 8",
        "copied to the GPU: 8 HWC",
        "mixed decoding: 8 HWC uint8",
    ],
    "legacy_operator_objects.py": [
        "images is_dense_tensor: False",
        "labels: [0, 0, 1, 1, 2, 2, 3, 3]",
        "shuffled: 8",
        "rotated: 8 HWC",
        "mixed decoding: 8 HWC",
        "legacy names: 8",
    ],
    "external_source.py": [
        "images: 4 HWC uint8",
        "labels: uint8 (1,)",
        "image 2: 3 3 uint8",
        "fed with feed_input: 4 uint8",
    ],
    "parallel_external_source.py": [
        "epoch 0: 2 batches of 4",  # 10 samples: two full batches, then StopIteration
        "epoch 1: 2 batches of 4",
        "labels: int32 [4, 5, 6, 7]",
    ],
    "numpy_reader.py": [
        "whole arrays: [(6, 10), (6, 10)] float32",
        "first row of sample 1: [100.0, 101.0, 102.0]",
        "by files: [200.0, 300.0]",
        "roi: [(2, 3), (2, 3)] [[12.0, 13.0, 14.0], [22.0, 23.0, 24.0]]",
        "relative roi: [(3, 5), (3, 5)]",
        "fortran order: [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]",
    ],
    "tfrecord.py": [
        "images: (3, 224, 224) CHW float32",
        "class text: ['bricks', 'bubbles', 'checker', 'clouds']",
        "xmin: [0.1, 0.1, 0.1, 0.1]",
    ],
    "webdataset.py": ["images: (3, 64, 64) CHW float32", "classes: ['4', '5', '6', '7']"],
    "checkpointing.py": [
        "checkpoint taken after 5 iterations: True",  # DALI gives bytes, chute a str
        "restored: True",
        "same batches after the restore: True",
        "from a file: True",
    ],
    "serialization.py": [
        "serialized: bytes True",
        "deserialized batch size: 4 1",
        "same outputs: True",
    ],
    "pipeline_run_inputs.py": [
        "step 0: input round-trips and flips: True",
        "step 2: input round-trips and flips: True",
        "feed_input: [(2, 2, 3), (2, 2, 3), (2, 2, 3)]",
        "run(inputs) on a non-pipelined pipeline: [(1, 1, 3), (1, 1, 3), (1, 1, 3)]",
    ],
    "augmentation_gallery.py": [
        "resize_crop: (100, 100, 3) uint8",
        "color_space_conversion: (478, 420, 1) uint8",
        "every augmentation changed the image: True",
    ],
}


@pytest.mark.parametrize("script", sorted(PORTS))
def test_ported_example_runs_and_prints_what_dali_shows(script, run_dali_port):
    lines = run_dali_port(script)
    missing = [line for line in PORTS[script] if line not in lines]
    assert not missing, f"{script} did not print {missing}; it printed {lines}"
