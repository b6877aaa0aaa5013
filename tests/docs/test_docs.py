"""Every code block of README.md and docs/**/*.md runs, or is marked as a fragment.

Rules (see CONTRIBUTING.md, "Docs that run"):

- A ```python block is a program: the blocks of one page run in order, in one namespace, in
  a fresh temporary folder. A block that imports a framework (``import chute.torch``,
  ``import tensorflow``, ...) runs in that framework's nox session (``--framework=torch``);
  the blocks after it on the page follow it there until another framework's block comes.
  Framework-free blocks run in ``nox -s docs``.
- ``<!-- doc: fragment -->`` on the line before a block: shown, not run (a python fragment
  must still compile). Every block that is not python needs the marker.
- ``<!-- doc: setup`` ... ``-->``: hidden python that runs at that point of the page, e.g.
  to make the sample dataset that an example reads.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FRAMEWORKS = ("torch", "tf", "paddle", "jax")

FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+)(?P<info>.*)$")
FRAGMENT = "<!-- doc: fragment -->"
SETUP_START = "<!-- doc: setup"
_IMPORTS = re.compile(
    r"^\s*(?:import|from)\s+(?P<module>chute\.(?:torch|tf|paddle|jax)|torch|tensorflow|paddle|jax)\b",
    re.MULTILINE,
)
_MODULE_FRAMEWORK = {"tensorflow": "tf", "chute.tf": "tf"}


@dataclasses.dataclass
class Block:
    page: pathlib.Path
    line: int  # first line of the code, 1-based
    language: str
    code: str
    fragment: bool = False
    setup: bool = False
    framework: str | None = None

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def parse(page: pathlib.Path) -> list[Block]:
    """The code blocks of a page, with their markers and the framework each one needs."""
    lines = page.read_text().splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith(SETUP_START):
            end = next(j for j in range(i, len(lines)) if lines[j].strip().endswith("-->"))
            code = "\n".join(lines[i + 1 : end])
            blocks.append(Block(page, i + 2, "python", code, setup=True))
            i = end + 1
            continue
        match = FENCE.match(line)
        if match is None:
            i += 1
            continue
        fence, indent = match["fence"], len(match["indent"])
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == fence)
        code = "\n".join(text[indent:] for text in lines[i + 1 : end])
        previous = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        language = match["info"].strip().split(" ")[0] if match["info"].strip() else ""
        blocks.append(Block(page, i + 2, language, code, fragment=previous == FRAGMENT))
        i = end + 1
    framework = None
    for block in blocks:
        if block.language != "python" or block.fragment:
            continue
        imported = {
            _MODULE_FRAMEWORK.get(m["module"], m["module"].removeprefix("chute."))
            for m in _IMPORTS.finditer(block.code)
        }
        if len(imported) > 1:
            raise ValueError(f"{block.where()}: one framework per block, not {sorted(imported)}")
        if imported:
            framework = imported.pop()
        block.framework = framework if not block.setup else None
    return blocks


ALL_BLOCKS = {page: parse(page) for page in PAGES}


def _page_id(page: pathlib.Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_block_is_a_program_or_a_marked_fragment(page: pathlib.Path) -> None:
    for block in ALL_BLOCKS[page]:
        if block.language != "python":
            assert block.fragment, (
                f"{block.where()}: a ```{block.language or '(no language)'} block must be "
                f"marked with {FRAGMENT} on the line before it"
            )
        elif block.fragment:
            compile(block.code, block.where(), "exec")  # a fragment is still valid python


def _cases(framework: str | None) -> list[pathlib.Path]:
    return [
        page
        for page, blocks in ALL_BLOCKS.items()
        if any(
            b.framework == framework and not b.fragment and not b.setup
            for b in blocks
            if b.language == "python"
        )
    ]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "doc_page" in metafunc.fixturenames:
        framework = metafunc.config.getoption("framework")
        metafunc.parametrize("doc_page", _cases(framework), ids=_page_id)


def test_examples_run(
    doc_page: pathlib.Path,
    request: pytest.FixtureRequest,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    framework = request.config.getoption("framework")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__main__"}
    ran = 0
    for block in ALL_BLOCKS[doc_page]:
        if block.language != "python" or block.fragment:
            continue
        if not block.setup and block.framework not in (None, framework):
            continue
        # blank lines in front, so that a traceback names the line of the page
        code = compile("\n" * (block.line - 1) + block.code, str(doc_page), "exec")
        exec(code, namespace)
        ran += not block.setup
    assert ran > 0
