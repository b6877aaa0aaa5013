"""The fusion pass returns typed hints, and OpNode holds only its declared fields.

The pass (chute.graph.passes.plan_fusion) decides how the main pipelines fuse: a CPU
decoder feeding a fixed-size resize decodes at a reduced DCT scale, a GPU resize read
only by a GPU crop_mirror_normalize hands it its work (and the mixed decoder before it
decodes only the crop's region), a file reader whose bytes only GPU decoders read reads
in helper processes. Building the plans needs no GPU.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PIL import Image

from chute import fn, pipeline_def, types
from chute.executor.plan import build_plan
from chute.graph.node import OpNode
from chute.graph.passes import (
    NO_HINTS,
    DecodeRegion,
    FusedResizeCrop,
    FusionPlan,
    NodeHints,
    ReadInProcesses,
    ScaledDecode,
    plan_fusion,
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("images")
    (root / "a").mkdir()
    Image.new("RGB", (32, 24)).save(root / "a" / "x.jpg")
    return str(root)


def _plan(graph, folder):
    @pipeline_def(batch_size=2, num_threads=1, device_id=0, seed=0)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=folder, name="Reader")
        return (*graph(jpegs), labels)

    return build_plan(pipe()._outputs)


def _by_name(plan):
    return {n.schema.name: n for n in plan.nodes}


def _hints(plan):
    """Each node's hints by operator name (nodes without hints left out)."""
    return {n.schema.name: plan.hints.of(n.id).hints for n in plan.nodes if plan.hints.of(n.id)}


def test_an_op_node_takes_no_undeclared_attribute():
    fields = {f.name for f in dataclasses.fields(OpNode)}
    # scope: the conditional branch the node was traced in (a trace fact, like device)
    assert fields == {
        "id",
        "op",
        "device",
        "inputs",
        "args",
        "arg_inputs",
        "name",
        "outputs",
        "scope",
    }
    node = OpNode(0, None, "cpu", [], {}, {}, "x")
    assert not hasattr(node, "__dict__")
    with pytest.raises(AttributeError):
        node.batched = True  # what fusion used to leave on nodes


def test_cpu_decoder_feeding_a_fixed_size_resize_decodes_dct_scaled(folder):
    def graph(jpegs):
        images = fn.decoders.image(jpegs, dct_scaling=True)
        return [fn.resize(images, resize_x=100, resize_y=90)]

    plan = _plan(graph, folder)
    assert _hints(plan) == {"decoders.image": (ScaledDecode((90, 100)),)}
    # the CPU decoder runs as a batch step of its own (cpu_batch_wise), the resize per sample
    decoder, resize = _by_name(plan)["decoders.image"], _by_name(plan)["resize"]
    kinds = {s.nodes[0].id: s.kind for s in plan.steps}
    assert kinds[decoder.id] == "batch" and kinds[resize.id] == "segment"

    def returned(jpegs):
        images = fn.decoders.image(jpegs, dct_scaling=True)
        return [fn.resize(images, resize_x=100, resize_y=90), images]

    assert _hints(_plan(returned, folder)) == {}


def test_gpu_decoder_resize_and_crop_fuse_into_a_region_decode(folder):
    def graph(jpegs, also_resized=False):
        images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB)
        resized = fn.resize(images, resize_shorter=256)
        out = fn.crop_mirror_normalize(resized, crop=(224, 224), mean=[128.0], std=[64.0])
        return [out, resized] if also_resized else [out]

    plan = _plan(graph, folder)
    nodes = _by_name(plan)
    fused = FusedResizeCrop(nodes["resize"], nodes["crop_mirror_normalize"])
    assert _hints(plan) == {
        "readers.file": (ReadInProcesses(),),
        "decoders.image": (DecodeRegion(fused),),
        "resize": (fused,),
    }
    # the resized images returned: nothing fuses but the reading
    plain = _plan(lambda jpegs: graph(jpegs, also_resized=True), folder)
    assert _hints(plain) == {"readers.file": (ReadInProcesses(),)}


def test_gpu_random_resized_crop_reads_in_processes_only(folder):
    def graph(jpegs):
        images = fn.decoders.image(jpegs, device="mixed")
        crops = fn.random_resized_crop(images, size=(224, 224))
        return [fn.crop_mirror_normalize(crops, mean=[128.0], std=[64.0])]

    assert _hints(_plan(graph, folder)) == {"readers.file": (ReadInProcesses(),)}


@pytest.mark.parametrize(
    "graph,in_processes",
    [
        (lambda jpegs: [fn.decoders.image_random_crop(jpegs, device="mixed")], True),
        (lambda jpegs: [fn.decoders.image(jpegs, device="mixed"), jpegs], False),
        (lambda jpegs: [fn.decoders.image(jpegs, device="cpu")], False),
    ],
)
def test_a_file_reader_reads_in_processes_when_only_gpu_decoders_read_it(
    folder, graph, in_processes
):
    plan = _plan(graph, folder)
    reader = _by_name(plan)["readers.file"]
    assert (plan.hints.get(reader.id, ReadInProcesses) is not None) is in_processes


def test_the_pass_is_a_function_of_the_graph(folder):
    def graph(jpegs):
        images = fn.decoders.image(jpegs, dct_scaling=True)
        return [fn.resize(images, size=(64, 64))]

    plan = _plan(graph, folder)
    again = plan_fusion(plan.nodes, plan.outputs)
    assert isinstance(again, FusionPlan) and again == plan.hints
    decoder = _by_name(plan)["decoders.image"]
    assert plan.hints.of(decoder.id) == NodeHints((ScaledDecode((64, 64)),))
    assert plan.hints.of(-1) is NO_HINTS
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.hints.of(decoder.id).get(ScaledDecode).size = (1, 1)


def test_coin_flips_are_drawn_for_the_batch_by_the_operator():
    from chute.executor.batched import batched_values, supports_batched

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=3)
    def pipe():
        return fn.random.coin_flip(probability=0.5), fn.random.coin_flip(shape=2)

    plan = build_plan(pipe()._outputs)
    flip, shaped = plan.outputs[0].producer, plan.outputs[1].producer
    assert supports_batched(flip) and not supports_batched(shaped)
    values = batched_values(flip, 3, 0, 0, [{} for _ in range(4)])
    assert all(np.asarray(v).shape == () for v in values)
