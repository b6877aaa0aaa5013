"""pipe.graph(): DOT text of the operator graph, and rendering through Graphviz."""

from __future__ import annotations

import os
import re
import stat
import sys

import numpy as np
import pytest

from chute import Pipeline, fn, ops, pipeline_def, types


@pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=7)
def rotate_pipe():
    x = fn.external_source(
        source=lambda info: np.zeros((6, 8, 3), np.uint8), batch=False, layout="HWC"
    )
    angle = fn.random.uniform(range=(-10.0, 10.0))
    y = fn.rotate(x, angle=angle, name="rot")
    z = fn.crop_mirror_normalize(y, dtype=types.FLOAT, mean=[0.0] * 3, std=[1.0] * 3)
    fn.flip(x, name="unused_flip")  # traced but needed by no output
    return z, angle


def _node_ids(dot: str) -> dict[str, str]:
    """Node name -> DOT id, from the node lines."""
    return {
        m.group(2): m.group(1)
        for m in re.finditer(r"^  (n\d+) \[label=\"[^\"]*\\n'([^']*)'\\n", dot, re.M)
    }


def test_dot_has_labelled_nodes_edges_and_outputs():
    dot = rotate_pipe().graph()
    assert dot.startswith('digraph "pipeline" {') and dot.rstrip().endswith("}")
    ids = _node_ids(dot)
    assert set(ids) == {"external_source", "uniform", "rot", "crop_mirror_normalize", "unused_flip"}
    assert "fn.rotate\\n'rot'\\ncpu" in dot
    assert "fn.random.uniform\\n'uniform'\\ncpu" in dot
    # data input: solid; argument input: dashed and named after the argument
    assert f"  {ids['external_source']} -> {ids['rot']};" in dot
    assert f'  {ids["uniform"]} -> {ids["rot"]} [style=dashed, label="angle"];' in dot
    assert f"  {ids['rot']} -> {ids['crop_mirror_normalize']};" in dot
    # both outputs marked, in order
    assert 'out0 [label="output 0"' in dot and 'out1 [label="output 1"' in dot
    assert f"  {ids['crop_mirror_normalize']} -> out0;" in dot
    assert f"  {ids['uniform']} -> out1;" in dot
    # the unused operator is drawn dotted; the used ones are not
    flip_line = next(ln for ln in dot.splitlines() if ln.startswith(f"  {ids['unused_flip']} ["))
    rot_line = next(ln for ln in dot.splitlines() if ln.startswith(f"  {ids['rot']} ["))
    assert "dotted" in flip_line and "dotted" not in rot_line


def test_multi_output_ports_and_quoting():
    pipe = Pipeline(batch_size=2, num_threads=1, seed=0)
    with pipe:
        a, b = fn.external_source(
            source=lambda info: (np.zeros(2, np.float32), np.ones(3, np.float32)),
            batch=False,
            num_outputs=2,
            name='src "x"',
        )
        s = fn.cat(a, b)
        pipe.set_outputs(s, b)
    dot = pipe.graph()
    assert 'label="fn.external_source\\n\'src \\"x\\"\'\\ncpu"' in dot
    src = re.search(r"^  (n\d+) \[label=\"fn.external_source", dot, re.M).group(1)
    cat = re.search(r"^  (n\d+) \[label=\"fn.cat", dot, re.M).group(1)
    # which output of the two feeds which input
    assert f'  {src} -> {cat} [label="[0]", headlabel="0"];' in dot
    assert f'  {src} -> {cat} [label="[1]", headlabel="1"];' in dot
    assert f'  {src} -> out1 [label="[1]"];' in dot


def test_transfer_node_shows_its_device():
    pipe = Pipeline(batch_size=2, num_threads=1, seed=0, device_id=0)
    with pipe:
        x = fn.external_source(source=lambda info: np.zeros(2, np.float32), batch=False)
        pipe.set_outputs(x.gpu())
    dot = pipe.graph()  # tracing needs no GPU; building would
    # the host-to-device copy runs as a "mixed" operator: CPU in, GPU out
    assert re.search(r"\\nmixed\", fillcolor=\"#fbeec1\"", dot)


class LegacyFlip(Pipeline):
    def __init__(self):
        super().__init__(batch_size=2, num_threads=1, seed=0)
        self.source = ops.ExternalSource(
            source=lambda info: np.zeros((2, 2, 1), np.uint8), batch=False, layout="HWC"
        )
        self.flip = ops.Flip()

    def define_graph(self):
        return self.flip(self.source())


def test_legacy_define_graph_pipeline():
    pipe = LegacyFlip()
    dot = pipe.graph()
    assert "fn.flip\\n'flip'\\ncpu" in dot and "-> out0;" in dot
    pipe.close()


def test_dot_file_is_the_text(tmp_path):
    pipe = rotate_pipe()
    path = tmp_path / "g.dot"
    dot = pipe.graph(str(path))
    assert path.read_text() == dot


def test_png_without_graphviz_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz -> ImportError
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot program
    with pytest.raises(RuntimeError, match=r"install Graphviz"):
        rotate_pipe().graph(str(tmp_path / "g.png"))
    assert not (tmp_path / "g.png").exists()


def test_render_goes_through_the_dot_program(tmp_path, monkeypatch):
    # A stand-in `dot` that records its arguments and stdin, to test the hand-over.
    fake = tmp_path / "dot"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "data = sys.stdin.read()\n"
        "sys.stdout.write('FAKE ' + ' '.join(sys.argv[1:]) + ' ' + str(len(data)))\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setitem(sys.modules, "graphviz", None)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ.get("PATH", ""))
    dot = rotate_pipe().graph(str(tmp_path / "g.svg"))
    assert (tmp_path / "g.svg").read_text() == f"FAKE -Tsvg {len(dot)}"
    rotate_pipe().graph(str(tmp_path / "g.out"), format="png")
    assert (tmp_path / "g.out").read_text().startswith("FAKE -Tpng ")


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"\.dot, \.png, \.svg, \.pdf"):
        rotate_pipe().graph(str(tmp_path / "g.jpg"))
