"""docs/operators.md is what dev/dali_names.py writes from the registry (as test_stubs does for
the stubs), and the DALI 2.4 name list it reads is well formed."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dali_names():
    spec = importlib.util.spec_from_file_location("dali_names", REPO / "dev" / "dali_names.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_committed_page_matches_the_registry(dali_names):
    committed = (REPO / "docs" / "operators.md").read_text()
    assert committed == dali_names.render(), (
        "docs/operators.md is out of date with the operator registry: run "
        "`PYTHONPATH=core/src python dev/dali_names.py` and commit it"
    )


def test_name_list_is_well_formed(dali_names, tmp_path):
    names = dali_names.read_names()
    fn_names = [n for n in names if not n.is_math]
    assert len(fn_names) >= 171 and sum(n.is_math for n in names) == 29
    by_name = {n.name: n for n in names}
    assert by_name["experimental.inflate"].alias_of == "decoders.inflate"
    assert by_name["file_reader"].alias_of == "readers.file"
    bad = tmp_path / "names.txt"
    bad.write_text("resize\nresize\n")
    with pytest.raises(ValueError, match="resize is listed twice"):
        dali_names.read_names(bad)
    bad.write_text("old -> new\n")
    with pytest.raises(ValueError, match="the target is not listed"):
        dali_names.read_names(bad)


def test_rows_report_backends_and_aliases(dali_names):
    page = dali_names.render()
    assert "| `fn.decoders.inflate` | yes | `ops.decoders.Inflate` | yes | gpu |  |" in page
    assert (
        "| `fn.experimental.inflate` | yes | `ops.experimental.Inflate` | yes | gpu | "
        "deprecated alias of fn.decoders.inflate |" in page
    )
    assert "| `fn.readers.file` | yes | `ops.readers.File` | yes |  |  |" in page
    assert "| `math.sqrt` | yes |  | yes | gpu | chute.math |" in page
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    assert len(rows) == len(dali_names.read_names())
