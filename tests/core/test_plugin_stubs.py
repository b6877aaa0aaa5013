"""The plugins' committed .pyi stubs are what chute.tools.plugin_stubs writes, and follow
chute.iteration.dali's run-time signature exactly."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import pathlib
import runpy
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from chute.iteration.dali import dali_iterator
from chute.tools import plugin_stubs

REPO = pathlib.Path(plugin_stubs.__file__).resolve().parents[4]
PLUGINS = REPO / "plugins"

# a plugin module as the stub writer reads it; the classes below are the same, executed
_SOURCE = textwrap.dedent(
    '''
    from __future__ import annotations

    from collections.abc import Sequence
    from typing import Any

    import numpy as np
    from chute.iteration import Iterator, PipelineSource
    from chute.iteration.dali import dali_iterator

    __all__ = ["Generic", "Ragged"]


    def _helper() -> int:
        return 1


    class Generic(Iterator):
        """A DALI-named iterator."""

        dali_conventions = True

        @dali_iterator(
            "pipelines",
            "output_map",
            omit=("fill_last_batch",),
            after={"prepare_first_batch": [("sharding", None)]},
            keyword_only=[("pad_ragged", False)],
        )
        def __init__(self, pipelines: PipelineSource, output_map: Sequence[str], **options: Any):
            pass

        def convert(self, batch: Any, name: str) -> Any:
            """One output."""
            return batch


    class Ragged(Generic):
        TAG: str = "dense"

        @dali_iterator("pipelines", "output_map", after={"reader_name": [("output_types", None)]})
        def __init__(
            self,
            pipelines: PipelineSource,
            output_map: Sequence[str],
            output_types: Sequence[str] | None,
            **options: Any,
        ):
            pass


    class Peekable(Ragged):
        def __init__(self, *args: Any, **kwargs: Any):
            pass
    '''
)


class _Generic:
    @dali_iterator(
        "pipelines",
        "output_map",
        omit=("fill_last_batch",),
        after={"prepare_first_batch": [("sharding", None)]},
        keyword_only=[("pad_ragged", False)],
    )
    def __init__(self, **options: Any):
        pass


class _Ragged:
    @dali_iterator("pipelines", "output_map", after={"reader_name": [("output_types", None)]})
    def __init__(self, **options: Any):
        pass


def _stub_classes(text: str) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in ast.parse(text).body if isinstance(n, ast.ClassDef)}


def _init(cls: ast.ClassDef) -> ast.FunctionDef | None:
    return next(
        (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
    )


def _stub_params(init: ast.FunctionDef) -> list[tuple[str, str, bool]]:
    a = init.args
    first_default = len(a.args) - len(a.defaults)
    out = [(p.arg, "positional", i >= first_default) for i, p in enumerate(a.args)]
    out += [(p.arg, "keyword", d is not None) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    assert a.vararg is None and a.kwarg is None
    return out


def _runtime_params(cls: type) -> list[tuple[str, str, bool]]:
    kinds = {inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional"}
    return [
        (p.name, kinds.get(p.kind, "keyword"), p.default is not inspect.Parameter.empty)
        for p in inspect.signature(cls.__init__).parameters.values()
    ]


def test_stub_init_has_the_run_time_signature() -> None:
    classes = _stub_classes(plugin_stubs.render_module(_SOURCE, "plug._dali"))
    for name, runtime in (("Generic", _Generic), ("Ragged", _Ragged)):
        init = _init(classes[name])
        assert init is not None
        assert _stub_params(init) == _runtime_params(runtime), name
    generic = _stub_params(_init(classes["Generic"]))  # type: ignore[arg-type]
    assert [n for n, _, _ in generic] == [
        "self",
        "pipelines",
        "output_map",
        "size",
        "reader_name",
        "auto_reset",
        "dynamic_shape",
        "last_batch_padded",
        "last_batch_policy",
        "prepare_first_batch",
        "sharding",
        "pad_ragged",
    ]
    assert generic[-1] == ("pad_ragged", "keyword", True)


def test_stub_types_come_from_the_iterator_and_the_source() -> None:
    text = plugin_stubs.render_module(_SOURCE, "plug._dali")
    assert "        output_map: Sequence[str],\n        size: int = ...,\n" in text
    assert "        reader_name: str | None = ...,\n" in text
    assert "        output_types: Sequence[str] | None = ...,\n" in text  # its own annotation
    assert "        last_batch_policy: LastBatchPolicy | str = ...,\n" in text
    assert "        sharding: Any = ...,\n        *,\n        pad_ragged: bool = ...,\n" in text
    assert "from chute.types import LastBatchPolicy\n" in text  # added for the annotation
    assert "import numpy" not in text and "dali_iterator" not in text  # unused imports go
    assert "_helper" not in text  # private helpers are no part of the surface
    assert '    """A DALI-named iterator."""\n    dali_conventions = True\n' in text
    assert "    TAG: str\n" in text
    peekable = _stub_classes(text)["Peekable"]
    assert _init(peekable) is None  # (*args, **kwargs) passes through: the base's signature


def test_committed_plugin_stubs_are_current() -> None:
    if not PLUGINS.is_dir():
        pytest.skip("no plugins/ folder (not a source checkout)")
    fresh = plugin_stubs.render(PLUGINS)
    assert {p.relative_to(PLUGINS).as_posix() for p in fresh} == {
        "jax/src/chute/jax/_dali.pyi",
        "paddle/src/chute/paddle/_dali.pyi",
        "paddle/src/chute/paddle/_iterator.pyi",  # ClassificationIterator
        "torch/src/chute/torch/_dali.pyi",
        "torch/src/chute/torch/_iterator.pyi",  # ClassificationIterator
        "torch/src/chute/torch/python_function.pyi",  # torch_python_function
    }
    stale = sorted(str(p) for p, text in fresh.items() if not p.exists() or p.read_text() != text)
    assert not stale, (
        f"the plugin stubs {stale} are out of date with their modules or chute.iteration.dali: "
        "run `PYTHONPATH=core/src python -m chute.tools.plugin_stubs` and commit them"
    )
    for fw in ("torch", "tf", "paddle", "jax"):  # typed, and shipped so
        assert (PLUGINS / fw / "src/chute" / fw / "py.typed").exists()
        assert (
            f'"chute.{fw}" = ["py.typed", "*.pyi"]' in (PLUGINS / fw / "pyproject.toml").read_text()
        )


_OPERATOR_SOURCE = textwrap.dedent(
    '''
    from __future__ import annotations

    from chute.graph.schema import Schema
    from chute.ops.python import PythonFunction
    from chute.surface import make_fn


    def _rename(schema: Schema) -> Schema:
        return schema


    class Framed(PythonFunction):
        """fn.python_function with framework tensors.

        More text.
        """

        schema = _rename(PythonFunction.schema)
        kind = Schema(name="framed")


    framed = make_fn(Framed)
    framed.__module__ = "plug.fn"
    '''
)


def test_plugin_operator_stub_has_its_core_base_signature() -> None:
    text = plugin_stubs.render_module(_OPERATOR_SOURCE, "plug.ops")
    start = text.index("def framed(\n")
    framed = text[start:]
    assert framed.startswith("def framed(\n    *inputs: DataNode,\n    function: Any,\n")
    for line in (
        "    batch_processing: bool = ...,\n",
        "    num_outputs: int = ...,\n",
        '    on_error: Literal["raise", "skip", "warn"] | OnError | None = ...,\n',
    ):
        assert line in framed
    assert framed.endswith('-> Any:\n    """fn.python_function with framework tensors."""\n')
    # the annotations' names are imported; run-time details are left out
    for line in (
        "from chute.graph.node import DataNode\n",
        "from typing import Literal\n",
        "from chute.types import OnError\n",
    ):
        assert line in text
    assert "__module__" not in text and "_rename" not in text
    # a computed class attribute is declared (its value may need private helpers)
    assert "    schema: ClassVar[Any]\n    kind: ClassVar[Schema]\n" in text
    assert "from typing import ClassVar\n" in text


def test_pipeline_arguments_are_the_pipelines() -> None:
    from chute.pipeline import Pipeline
    from chute.pipeline.options import DECORATOR_ONLY, DEFAULTS, PipelineArguments

    # ForwardRef('int'): from __future__ import annotations keeps them as text
    annotations = {
        k: getattr(v, "__forward_arg__", v) for k, v in PipelineArguments.__annotations__.items()
    }
    assert list(annotations) == [*DEFAULTS, *DECORATOR_ONLY]
    init = inspect.signature(Pipeline.__init__).parameters
    for name in DEFAULTS:  # the constructor's annotations, spelled the same (strings here)
        assert annotations[name] == init[name].annotation, name
    assert annotations["enable_conditionals"] == annotations["debug"] == "bool"


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_mypy_accepts_plugin_code_and_flags_a_misspelled_keyword() -> None:
    ok = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "tests/typing/plugins_ok.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    check = runpy.run_path(str(REPO / "tests/typing/check_errors.py"))
    bad = REPO / "tests/typing/plugins_bad.py"
    got, output = check["reported"](bad)
    assert got == check["expected"](bad), output
    assert (20, "call-arg") in got  # DALIGenericIterator(p, ["x"], reder_name="R")
    assert 'Unexpected keyword argument "reder_name" for "DALIGenericIterator"' in output
    for name, where in [
        ("reder_name", "ClassificationIterator"),
        ("num_thread", "data_iterator"),
        ("num_threds", "pipeline_def"),
        ("fuction", "torch_python_function"),
    ]:
        assert f'Unexpected keyword argument "{name}" for "{where}"' in output
