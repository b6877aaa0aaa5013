"""One registry: every registered operator is in fn.*, in ops.* and in the docs' reference."""

from __future__ import annotations

import importlib.util
import inspect
import os

import numpy as np
import pytest

import chute
from chute import fn, ops
from chute.runtime.deprecated import DEPRECATED
from chute.runtime.registry import (
    functions,
    operators,
    ops_entries,
    ops_name,
    register,
    register_function,
)
from chute.surface import fn_entries

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def resolve(root, dotted):
    value = root
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def load_docs_hook():
    path = os.path.join(ROOT, "docs", "_hooks", "generate.py")
    spec = importlib.util.spec_from_file_location("chute_docs_generate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ENTRIES = sorted(operators().items())


def test_registry_holds_the_operators():
    names = dict(ENTRIES)
    for expected in ("resize", "decoders.image", "readers.file", "random.uniform", "io.file.read"):
        assert expected in names
    assert names["transforms.rotation"].op_class is ops.transforms.Rotation
    assert "math.sqrt" in functions()


@pytest.mark.parametrize("name,entry", ENTRIES, ids=[n for n, _ in ENTRIES])
def test_registered_operator_is_in_fn_and_ops(name, entry):
    func = resolve(fn, name)
    assert func.op_class is entry.op_class
    op_class = resolve(ops, ops_name(entry))
    if name in DEPRECATED:  # fn.shapes: DALI deprecated the name; ops.Shapes warns when applied
        assert op_class.__bases__ == (entry.op_class,) and op_class.deprecated is DEPRECATED[name]
    else:
        assert op_class is entry.op_class
    # a real signature: every schema argument is a keyword of fn.x
    params = inspect.signature(func).parameters
    assert all(arg.name in params for arg in entry.op_class.schema.args)
    assert func.__doc__.startswith(inspect.cleandoc(entry.op_class.__doc__).splitlines()[0])
    namespace = name.rpartition(".")[0]
    module = resolve(fn, namespace) if namespace else fn
    assert name.rpartition(".")[2] in module.__all__


def test_every_entry_resolves_and_is_in_all():
    for root, entries in ((fn, fn_entries()), (ops, ops_entries())):
        for dotted, value in entries:
            assert resolve(root, dotted) is value, dotted
            namespace, _, short = dotted.rpartition(".")
            assert short in (resolve(root, namespace) if namespace else root).__all__, dotted


def test_submodules_import_like_modules():
    from chute.fn import resize
    from chute.fn.decoders import image
    from chute.fn.io.file import read
    from chute.ops.transforms import Rotation

    assert resize is fn.resize and image is fn.decoders.image and read is fn.io.file.read
    assert Rotation is ops.transforms.Rotation
    assert chute.fn.readers.file.__module__ == "chute.fn.readers"


def test_dali_legacy_names():
    # each is a subclass of its operator that warns when applied (tests/compat)
    for old, new in [
        (ops.FileReader, ops.readers.File),
        (ops.ImageDecoder, ops.decoders.Image),
        (ops.ImageDecoderRandomCrop, ops.decoders.ImageRandomCrop),
        (ops.Uniform, ops.random.Uniform),
        (ops.CoinFlip, ops.random.CoinFlip),
        (ops.NormalDistribution, ops.random.Normal),
        (ops.VideoReader, ops.readers.Video),
        (ops.AudioDecoder, ops.decoders.Audio),
        (ops.COCOReader, ops.readers.COCO),
        (ops.experimental.decoders.ImageCrop, ops.decoders.ImageCrop),
    ]:
        assert old.__bases__ == (new,), old
        assert ops_entries() == ops_entries()  # the same class objects every time
    assert fn.image_decoder.op_class is ops.decoders.Image
    assert fn.file_reader.alias_of == "readers.file"
    assert fn.experimental.decoders.image_slice.alias_of == "decoders.image_slice"
    assert "Legacy alias of ``fn.decoders.image``" in fn.image_decoder.__doc__
    assert inspect.signature(fn.image_decoder) == inspect.signature(fn.decoders.image)


def test_legacy_name_traces_the_same_operator():
    images = [np.zeros((4, 4, 3), np.uint8)] * 2

    @chute.pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=3)
    def pipe(legacy):
        x = fn.external_source(source=lambda: images, layout="HWC")
        flip = fn.coin_flip(probability=0.5) if legacy else fn.random.coin_flip(probability=0.5)
        return flip, x

    a, b = pipe(True), pipe(False)
    a.build()
    b.build()
    np.testing.assert_array_equal(a.run()[0].as_array(), b.run()[0].as_array())


def test_docs_reference_lists_every_operator():
    pages = load_docs_hook().reference_pages()
    text = "\n".join(pages.values())
    for name, entry in ENTRIES:
        assert f"## fn.{name}\n" in text, name
        assert f"`ops.{ops_name(entry)}`" in text, name
        for legacy in entry.legacy:
            assert f"`fn.{legacy}`" in text
    for name in functions():
        assert f"## fn.{name}\n" in text, name
    index = pages["reference/index.md"]
    assert "[`fn.decoders`](fn.decoders.md)" in index


def test_register_refuses_a_second_class_under_one_name():
    class Twin(ops.Resize):
        pass

    with pytest.raises(ValueError, match="registered twice"):
        register(Twin)
    assert operators()["resize"].op_class is ops.Resize
    with pytest.raises(ValueError, match="registered twice"):
        register_function("math.sqrt", lambda x: x)
