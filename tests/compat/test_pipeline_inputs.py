"""Pipeline.run(**inputs) (DALI 2.x), feed_input, input_feed_count, and the pipeline's
DALI properties (num_outputs, output_dtype, queue sizes, ...)."""

from __future__ import annotations

import numpy as np
import pytest

from chute import Pipeline, fn, pipeline_def, types


@pipeline_def(batch_size=2, num_threads=1, prefetch_queue_depth=1)
def two_inputs():
    # DALI's documentation example: named inputs, fed by run()
    a = fn.external_source(name="a", dtype=types.INT32)
    b = fn.external_source(name="b", dtype=types.INT32, layout="X")
    return a + b, fn.reductions.sum(b)


def test_run_feeds_external_sources_by_name():
    pipe = two_inputs()
    total, sums = pipe.run(
        a=np.array([[1, 2], [3, 4]], np.int32),
        b=[np.array([10, 20], np.int32), np.array([30, 40], np.int32)],
    )
    assert total.as_array().tolist() == [[11, 22], [33, 44]]
    assert sums.as_array().tolist() == [30, 70]
    # every run takes the batches fed with it
    total, _ = pipe.run(a=np.zeros((2, 1), np.int32), b=np.ones((2, 1), np.int32))
    assert total.as_array().tolist() == [[1], [1]]


def test_run_with_inputs_needs_no_prefetch_depth_of_one():
    # DALI refuses run(**inputs) with prefetch_queue_depth > 1; chute takes them in order
    pipe = two_inputs(prefetch_queue_depth=3)
    for k in range(4):
        (total, _) = pipe.run(a=np.full((2, 1), k, np.int32), b=np.full((2, 1), 100, np.int32))
        assert total.as_array().tolist() == [[100 + k], [100 + k]]


def test_run_checks_every_name_before_feeding_anything():
    pipe = two_inputs()
    with pytest.raises(KeyError, match="no operator named 'c' in this pipeline.*names: a, b"):
        pipe.run(a=np.zeros((2, 1), np.int32), c=np.zeros((2, 1), np.int32))
    with pytest.raises(KeyError, match="did you mean 'b'"):
        pipe.run(bb=np.zeros((2, 1), np.int32))
    assert pipe.input_feed_count("a") == 0  # nothing was fed
    with pytest.raises(TypeError, match="is not an external_source without a source"):
        pipe.run(a=np.zeros((2, 1), np.int32), b=np.zeros((2, 1), np.int32), **{"sum": 1})


def test_feed_input_and_input_feed_count():
    pipe = two_inputs(exec_pipelined=False)  # no thread works ahead: the count stays put
    pipe.build()
    for k in range(3):
        pipe.feed_input("a", np.full((2, 1), k, np.int32))
    pipe.feed_input("b", np.zeros((2, 1), np.int32), layout="Y")
    assert pipe.input_feed_count("a") == 3 and pipe.input_feed_count("b") == 1
    total, _ = pipe.run()
    assert total.as_array().tolist() == [[0], [0]]
    assert pipe.input_feed_count("a") == 2
    with pytest.raises(TypeError, match="is not an external_source"):
        pipe.input_feed_count(pipe._graph.nodes[-1].name)


def test_schedule_run_outputs_and_empty():
    pipe = two_inputs()
    assert pipe.empty()
    pipe.feed_input("a", np.ones((2, 1), np.int32))
    pipe.feed_input("b", np.ones((2, 1), np.int32))
    pipe.schedule_run()
    assert not pipe.empty()
    total, _ = pipe.share_outputs(cuda_stream=None)
    pipe.release_outputs()
    assert pipe.empty() and total.as_array().tolist() == [[2], [2]]


def test_dali_properties_of_the_pipeline():
    pipe = two_inputs(
        output_dtype=[types.INT32, None], prefetch_queue_depth={"cpu_size": 3, "gpu_size": 2}
    )
    assert pipe.num_outputs == 2
    assert pipe.output_dtype == [types.INT32, None] and pipe.output_ndim == [None, None]
    assert (pipe.cpu_queue_size, pipe.gpu_queue_size, pipe.exec_separated) == (3, 2, True)
    assert pipe.max_streams == -1 and pipe.exec_dynamic is False
    pipe.start_py_workers()  # accepted: workers start at build
    assert Pipeline(batch_size=1, prefetch_queue_depth=2).exec_separated is False


def test_save_graph_to_dot_file(tmp_path):
    pipe = two_inputs()
    path = tmp_path / "graph.dot"
    pipe.save_graph_to_dot_file(str(path), show_tensors=True, use_colors=True)
    text = path.read_text()
    assert text.startswith("digraph")
    assert "external_source" in text and "sum" in text


def test_types_constant_arrays_are_constant_nodes():
    @pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        grid = types.Constant(np.array([[1.5, 2.0], [3.0, 4.5]], np.float64), layout="HW")
        flags = types.Constant(np.array([True, False]))
        return grid, flags

    p = pipe()
    grid, flags = p.run()
    assert grid.dtype == np.float64 and grid.layout() == "HW"
    assert grid.as_array().tolist() == [[[1.5, 2.0], [3.0, 4.5]]] * 2
    assert flags.dtype == np.bool_ and flags.as_array().tolist() == [[True, False]] * 2
    assert [n.schema.name for n in p._graph.nodes] == ["constant", "constant"]


def test_run_feeds_inputs_in_debug_mode_too():
    @pipeline_def(batch_size=2, num_threads=1, debug=True)
    def eager():
        return fn.external_source(name="x") * 2

    (out,) = eager().run(x=np.array([[1, 2], [3, 4]], np.int32))
    assert out.as_array().tolist() == [[2, 4], [6, 8]]


def test_constant_inputs_become_constant_nodes_as_in_dali():
    @pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        x = fn.external_source(
            source=lambda: [np.arange(6, dtype=np.uint8).reshape(2, 3)] * 2, layout="HW"
        )
        row = np.array([[9, 9, 9]], np.uint8)
        ints = fn.transpose([[5, 7, 9]], perm=[1, 0])
        return fn.cat(x, row, axis=0), ints, fn.transpose([[1.5, 2.5]], perm=[1, 0])

    stacked_rows, ints, transposed = pipe().run()
    assert stacked_rows.at(1).tolist() == [[0, 1, 2], [3, 4, 5], [9, 9, 9]]
    assert ints.dtype == np.int32 and ints.at(0).tolist() == [[5], [7], [9]]  # Python ints: INT32
    assert transposed.dtype == np.float32  # and Python floats FLOAT, as in DALI
    assert transposed.at(0).tolist() == [[1.5], [2.5]]

    @pipeline_def(batch_size=1, num_threads=1)
    def text():
        return fn.flip("abc")

    with pytest.raises(TypeError, match=r"fn.flip: input 0 must be a DataNode .* or a constant"):
        text()


def test_one_dtype_for_every_output_of_an_external_source():
    # DALI's external source tutorial: num_outputs=2 with one dtype for both
    @pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        batch = ([np.zeros(3, np.uint8)] * 2, [np.ones(1, np.uint8)] * 2)
        return tuple(fn.external_source(source=lambda: batch, num_outputs=2, dtype=types.UINT8))

    images, labels = pipe().run()
    assert (images.dtype, labels.dtype) == (np.uint8, np.uint8)

    @pipeline_def(batch_size=2, num_threads=1)
    def wrong():
        batch = ([np.zeros(3, np.uint8)] * 2, [np.ones(1, np.int32)] * 2)
        return tuple(fn.external_source(source=lambda: batch, num_outputs=2, dtype=types.UINT8))

    with pytest.raises(Exception, match="int32"):
        wrong().run()
