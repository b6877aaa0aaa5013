"""Pipeline.serialize() / Pipeline.deserialize(): chute's own serialized form round-trips
the graph (operators, arguments, names, seeds) and gives bit-identical outputs."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import chute
from chute import Pipeline, fn, ops, pipeline_def, tfrecord, types
from chute.graph.schema import REQUIRED
from chute.pipeline.serial_values import MalformedValue, decode_value, encode_value
from chute.runtime.registry import operators
from chute.tools.sample_data import make_imagenet_like


@pytest.fixture(scope="module")
def image_dir(tmp_path_factory):
    return make_imagenet_like(str(tmp_path_factory.mktemp("images")), n=12)


def assert_same_outputs(a: Pipeline, b: Pipeline, runs: int = 3) -> None:
    for _ in range(runs):
        for x, y in zip(a.run(), b.run(), strict=True):
            assert x.dtype == y.dtype and x.layout() == y.layout()
            assert x.shape() == y.shape()
            for i in range(len(x)):
                np.testing.assert_array_equal(x.at(i), y.at(i))


@pipeline_def(batch_size=4, num_threads=2)
def training(image_dir):
    jpegs, labels = fn.readers.file(file_root=image_dir, random_shuffle=True, name="Reader")
    images = fn.decoders.image(jpegs, output_type=types.RGB)
    images = fn.random_resized_crop(images, size=(32, 32), interp_type=types.INTERP_CUBIC)
    images = fn.rotate(images, angle=fn.random.uniform(range=(-10, 10)), keep_size=True)
    images = fn.color_twist(images, saturation=fn.random.uniform(range=(0.5, 1.5)))
    images = fn.crop_mirror_normalize(
        images,
        dtype=types.FLOAT,
        output_layout="CHW",
        mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
        std=[0.229 * 255, 0.224 * 255, 0.225 * 255],
        mirror=fn.random.coin_flip(),
    )
    grid = types.Constant(np.array([[1, 2], [3, 4]], np.int16), layout="HW")
    return images[:, 1:3, ::2] * 2 + 1, labels[0], fn.cast(labels, dtype=types.FLOAT) / 3.0, grid


def test_round_trip_gives_bit_identical_outputs(image_dir):
    pipe = training(image_dir)
    data = pipe.serialize()
    assert isinstance(data, bytes)
    document = json.loads(data)
    assert (document["format"], document["version"]) == ("chute.pipeline", 1)
    assert document["pipeline"]["seed"] == pipe.seed  # the seed as drawn
    assert document["chute"] == chute.__version__
    ops_written = [n["op"] for n in document["nodes"]]
    assert ops_written[:3] == ["readers.file", "decoders.image", "random_resized_crop"]
    assert {"math", "subscript", "constant"} <= set(ops_written)
    copy = Pipeline.deserialize(serialized_pipeline=data)
    assert copy.seed == pipe.seed and copy.batch_size == 4 and copy.num_threads == 2
    assert copy.serialize() == data  # every argument reads back as written
    assert_same_outputs(pipe, copy)
    assert copy.reader_meta("Reader")["epoch_size"] == 12


def test_file_round_trip_and_constructor_arguments_that_override(image_dir, tmp_path):
    pipe = training(image_dir)
    path = tmp_path / "pipe.chute.json"
    pipe.serialize(filename=str(path))
    copy = Pipeline.deserialize(filename=str(path), batch_size=2, num_threads=1)
    assert (copy.batch_size, copy.num_threads, copy.seed) == (2, 1, pipe.seed)
    outputs = copy.run()
    assert len(outputs) == 4 and len(outputs[0]) == 2
    into = Pipeline(batch_size=4, num_threads=1, seed=pipe.seed)
    into.deserialize_and_build(path.read_bytes())
    assert_same_outputs(training(image_dir, seed=pipe.seed), into, runs=2)


def test_legacy_pipelines_and_deprecated_names_serialize(image_dir):
    class Legacy(Pipeline):
        def __init__(self):
            super().__init__(batch_size=2, num_threads=1, seed=5)
            self.reader = ops.FileReader(file_root=image_dir)
            self.decode = ops.ImageDecoder(output_type=types.GRAY)
            self.resize = ops.Resize(resize_x=8, resize_y=6)

        def define_graph(self):
            jpegs, labels = self.reader()
            return self.resize(self.decode(jpegs)), labels

    pipe = Legacy()
    data = pipe.serialize()  # traces define_graph(); the legacy names warn (once per process)
    assert [n["op"] for n in json.loads(data)["nodes"]] == [
        "readers.file",
        "decoders.image",
        "resize",
    ]
    copy = Pipeline.deserialize(data)
    assert_same_outputs(pipe, copy, runs=2)
    assert copy.run()[0].shape()[0] == (6, 8, 1)


def test_gpu_pipelines_serialize_their_traced_graph(image_dir):
    @pipeline_def(batch_size=2, num_threads=1, device_id=0, seed=3)
    def gpu_pipe():
        jpegs, _ = fn.readers.file(file_root=image_dir)
        images = fn.decoders.image(jpegs, device="mixed")
        return fn.flip(images.gpu(), horizontal=1).cpu()

    data = gpu_pipe().serialize()
    nodes = json.loads(data)["nodes"]
    assert [(n["op"], n["device"]) for n in nodes] == [
        ("readers.file", "cpu"),
        ("decoders.image", "mixed"),
        ("flip", "gpu"),
        ("transfer", "gpu"),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no GPU here: the CPU fallback
        assert_same_outputs(gpu_pipe(), Pipeline.deserialize(data), runs=1)


def test_external_sources_are_fed_by_name_after_reading():
    @pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe():
        x = fn.external_source(source=lambda: [np.ones(3, np.float32)] * 2, name="x")
        return x + fn.random.normal(shape=3)

    data = pipe().serialize()
    entry = json.loads(data)["nodes"][0]
    assert entry["op"] == "external_source" and "source" not in entry["args"]
    copy = Pipeline.deserialize(data)
    (fed,) = copy.run(x=np.ones((2, 3), np.float32))
    (original,) = pipe().run()
    np.testing.assert_array_equal(fed.as_array(), original.as_array())


def test_tfrecord_features_round_trip(tmp_path):
    path = tmp_path / "data.tfrecord"
    tfrecord.write_records(
        path, [tfrecord.encode_example({"label": [i], "value": [0.5 * i, 1.0]}) for i in range(4)]
    )

    @pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe():
        out = fn.readers.tfrecord(
            path=str(path),
            index_path=None,
            features={
                "label": tfrecord.FixedLenFeature([1], tfrecord.int64, -1),
                "value": tfrecord.VarLenFeature(tfrecord.float32, 0.0),
            },
        )
        return out["label"], out["value"]

    data = pipe().serialize()
    copy = Pipeline.deserialize(data)
    labels, values = copy.run()
    assert labels.as_array().tolist() == [[0], [1]]
    assert values.as_array().tolist() == [[0.0, 1.0], [0.5, 1.0]]
    assert copy.serialize() == data


def test_python_function_is_code_and_does_not_serialize():
    @pipeline_def(batch_size=1, num_threads=1)
    def pipe():
        return fn.python_function(fn.random.uniform(shape=2), function=lambda x: x * 2)

    with pytest.raises(TypeError, match=r"python_function.*calls a Python function, which is code"):
        pipe().serialize()

    @pipeline_def(batch_size=1, num_threads=1)
    def callable_arg():
        return fn.external_source(source=lambda: [np.zeros(1)], cuda_stream=object())

    assert callable_arg().serialize()  # cuda_stream has no effect and is not written


def test_debug_pipelines_do_not_serialize():
    @pipeline_def(batch_size=1, num_threads=1, debug=True)
    def eager():
        return fn.random.uniform()

    with pytest.raises(TypeError, match="debug pipeline"):
        eager().serialize()


def _document(**changes):
    @pipeline_def(batch_size=1, num_threads=1, seed=1)
    def pipe():
        return fn.random.uniform(range=(0.0, 2.0), name="draw")

    document = json.loads(pipe().serialize())
    for key, value in changes.items():
        document[key] = value
    return document


def test_reading_names_what_is_wrong():
    with pytest.raises(ValueError, match=r"not a pipeline that chute serialized.*protobuf"):
        Pipeline.deserialize(b"\x0a\x05Reader")  # DALI's protobuf form
    with pytest.raises(ValueError, match="exactly one of serialized_pipeline and filename"):
        Pipeline.deserialize()
    with pytest.raises(ValueError, match=r"format version 2 \(by chute 9\.0\).*reads version 1"):
        Pipeline.deserialize(json.dumps(_document(version=2, chute="9.0")))
    document = _document()
    document["nodes"][0]["op"] = "random.unifrom"
    with pytest.raises(
        ValueError, match=r"node 0 'draw' runs the operator 'random.unifrom'.*'random.uniform'"
    ):
        Pipeline.deserialize(json.dumps(document))
    document = _document()
    document["nodes"][0]["args"]["rnage"] = [0, 1]
    with pytest.raises(TypeError, match=r"node 0 'draw' \(random.uniform\).*'rnage'"):
        Pipeline.deserialize(json.dumps(document))
    document = _document()
    document["nodes"][0]["args"]["range"] = {"$pickle": "gASV..."}
    with pytest.raises(MalformedValue, match=r"argument 'range': unknown value tag '\$pickle'"):
        Pipeline.deserialize(json.dumps(document))
    document = _document(outputs=[[3, 0]])
    with pytest.raises(ValueError, match=r"output 0 names \[3, 0\], not an earlier output"):
        Pipeline.deserialize(json.dumps(document))
    document = _document()
    del document["nodes"][0]["device"]
    with pytest.raises(ValueError, match="node 0 needs 'device'"):
        Pipeline.deserialize(json.dumps(document))


def _same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


VALUES = [
    None, True, 3, -(2**70), 0.1, float("inf"), float("nan"), "HWC", [1, 2.5], (1, (2, "x")),
    {"a": (1, 2), 3: [None]}, slice(1, None, -1), Ellipsis, b"\x00\xff",
    np.dtype(np.float16), np.dtype(np.str_), np.uint8(200), np.float32(0.1), np.bool_(True),
    np.arange(6, dtype=np.int16).reshape(2, 3), np.array(["ab", "c"]), types.FLOAT, types.BGR,
    types.INTERP_GAUSSIAN, types.LastBatchPolicy.DROP,
    tfrecord.VarLenFeature([2], tfrecord.float32, 0.0),
]  # fmt: skip


@pytest.mark.parametrize("value", VALUES, ids=[repr(v)[:30] for v in VALUES])
def test_values_round_trip_with_their_types(value):
    data = encode_value(value, "test")
    assert json.loads(json.dumps(data, allow_nan=False)) == data  # plain JSON
    assert _same(decode_value(data, "test"), value)


def test_every_registered_operators_constant_arguments_round_trip():
    samples = {
        "float": 0.25,
        "int": 7,
        "bool": True,
        "str": "HWC",
        "dtype": types.UINT16,
        "float_list": [0.5, 1.5],
        "int_list": [1, 2, 3],
        "float_pair": [0.25, 4.0],
        "int_pair": [3, 4],
        "str_list": ["a", "b"],
    }
    checked = 0
    for name, entry in sorted(operators().items()):
        schema = entry.op_class.schema
        for arg in schema.args:
            values = [] if arg.default is REQUIRED else [arg.default]
            values += list(arg.choices or ())
            if arg.type in samples:
                values.append(samples[arg.type])
            for value in values:
                try:
                    value = arg.convert(schema.display_name, value)
                except (TypeError, ValueError):
                    continue  # not a value this argument takes
                back = decode_value(encode_value(value, f"{name}.{arg.name}"), "test")
                assert _same(back, value), (name, arg.name, value, back)
                checked += 1
    assert checked > 1000


def test_code_and_objects_are_refused_naming_where():
    with pytest.raises(TypeError, match=r"arg\[1\] is a function, which is code"):
        encode_value([1, lambda: 0], "arg")
    with pytest.raises(TypeError, match="arg is a object, which is not data"):
        encode_value(object(), "arg")
    with pytest.raises(TypeError, match="an array of object is not data"):
        encode_value(np.array([None]), "arg")
    with pytest.raises(MalformedValue, match="object is not a type of data"):
        decode_value({"$array": "|O", "shape": [1], "data": ""}, "arg")
