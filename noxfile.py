"""Test sessions: `nox` runs them all; `nox -s core` runs one.

FRAMEWORKS is the one list of frameworks and the versions they are tested with.

Every session installs with its lock file, `constraints/<session>.txt`: each package the
session needs, pinned. `nox -s lock` regenerates them all with `uv pip compile` from the
inputs declared below (written to `constraints/<session>.in`) and core/pyproject.toml.
`nox -s latest` runs the core tests against the newest releases instead.

Environments are made by uv, afresh on every run, and removed when the session ends
(CHUTE_NOX_KEEP=1 keeps them and uv's cache: see KEEP below).
"""

from __future__ import annotations

import functools
import os
import pathlib
import shutil
import zipfile

import nox

ROOT = pathlib.Path(__file__).parent
LOCKS = ROOT / "constraints"

# plugin folder -> packages installed for it (torch pinned to the local CPU wheel).
FRAMEWORKS = {
    "torch": ["torch==2.13.0"],
    "tf": ["tensorflow-cpu"],
    "paddle": ["paddlepaddle", "setuptools"],  # paddle imports setuptools, undeclared
    "jax": ["jax"],
}

nox.options.sessions = ["lint", "core", "docs", "wheel", *FRAMEWORKS]
nox.options.default_venv_backend = "uv"
nox.options.error_on_missing_interpreters = True

# Disk: the four frameworks take 3.0 GB unpacked (tensorflow-cpu 1.25, paddle 0.70, torch
# 0.69, jaxlib 0.34) and the core test packages ~1.7 GB; kept in uv's cache and in .nox, a
# full `nox` needed 3.4 GB at its peak. Unless CHUTE_NOX_KEEP=1, uv installs without its
# cache and every default session removes its environment when it ends: one session's
# packages are on disk at a time (CONTRIBUTING.md has the numbers). CHUTE_NOX_KEEP=1 keeps
# the cache and the environments, for quick reruns and for looking into a failed one.
KEEP = os.environ.get("CHUTE_NOX_KEEP") == "1"
if not KEEP:
    os.environ.setdefault("UV_NO_CACHE", "1")


def lean(func):
    """Remove the session's environment when it ends (unless CHUTE_NOX_KEEP=1)."""

    @functools.wraps(func)
    def session_fn(session: nox.Session) -> None:
        try:
            func(session)
        finally:
            location = getattr(session.virtualenv, "location", None)
            if not KEEP and location and pathlib.Path(location).is_dir():
                shutil.rmtree(location, ignore_errors=True)

    return session_fn


# uv does not read pip's configuration: a wheel folder given to pip (here, torch's CPU
# wheel) is given to uv too.
if "PIP_FIND_LINKS" in os.environ and "UV_FIND_LINKS" not in os.environ:
    os.environ["UV_FIND_LINKS"] = os.environ["PIP_FIND_LINKS"]

TEST_DEPS = [
    "pytest>=8",
    "hypothesis>=6",
    "scipy",
    "soundfile>=0.12",
    "av>=12",
    "lmdb>=1.4",
    "pycocotools>=2.0",  # reference for COCO's RLE and polygon masks (tests only)
    # remote storage: fsspec + s3fs (aiohttp) as users install them, moto's S3 server for tests
    "fsspec>=2024.2",
    "s3fs>=2024.2",
    "aiohttp>=3.9",
    "moto[server]>=5",
    # gs:// through gcsfs, tested against a small GCS JSON API server in the tests. gcsfs
    # brings google-auth, google-cloud-storage and grpcio (~20 packages): pinned by the lock.
    "gcsfs>=2024.2",
    "astropy>=5",  # tile-compressed FITS images (fn.experimental.readers.fits)
    "lz4>=4",
]
# What a plugin session installs besides its framework, chute and the plugin: the plugin
# suites (tests/plugins/**, tests/conftest.py), the framework examples of the docs and
# examples/dali_ports import only pytest, NumPy and Pillow (chute's own dependencies), the
# framework, chute and the standard library; none of the remote-storage, audio, video, FITS
# or COCO-reference packages above, which the core session covers.
PLUGIN_TEST_DEPS = ["pytest>=8"]
# DALI itself, for the parity session only (its CPU operators run without a GPU).
DALI = "nvidia-dali-cuda130==2.4.0"
DOCS_DEPS = ["mkdocs>=1.6", "mkdocs-material>=9", "pytest>=8"]
WHEEL_DEPS = ["build[uv]>=1.2", "pytest>=8", *FRAMEWORKS["torch"]]

# session -> (extras of core/pyproject.toml whose dependencies it installs, other packages);
# None: core is not installed.
LOCK_INPUTS: dict[str, tuple[list[str] | None, list[str]]] = {
    "lint": (None, ["ruff", "import-linter", "mypy", "numpy"]),
    "core": ([], TEST_DEPS),
    "docs": ([], DOCS_DEPS),
    "wheel": ([], WHEEL_DEPS),
    **{framework: ([], [*FRAMEWORKS[framework], *PLUGIN_TEST_DEPS]) for framework in FRAMEWORKS},
    "dali_parity": ([], [*TEST_DEPS, DALI]),
}


def _lock_input_text(name: str) -> str:
    extras, packages = LOCK_INPUTS[name]
    header = f"# Written by `nox -s lock` from noxfile.py (LOCK_INPUTS[{name!r}]); edit it there.\n"
    if extras is not None:
        header += f"# Compiled with core/pyproject.toml, extras: {extras or 'none'}.\n"
    return header + "".join(f"{package}\n" for package in packages)


def _lock(session: nox.Session, name: str) -> str:
    """The lock file of session `name`; fails when its inputs changed since `nox -s lock`."""
    path = LOCKS / f"{name}.in"
    if not path.exists() or path.read_text() != _lock_input_text(name):
        session.error(f"{path.relative_to(ROOT)} is out of date with noxfile.py: run `nox -s lock`")
    return str(LOCKS / f"{name}.txt")


@nox.session(default=False)
def lock(session: nox.Session) -> None:
    """Regenerate constraints/*.txt with `uv pip compile` (`nox -s lock -- --upgrade` to move)."""
    session.install("uv")
    LOCKS.mkdir(exist_ok=True)
    for name, (extras, _) in LOCK_INPUTS.items():
        source = LOCKS / f"{name}.in"
        source.write_text(_lock_input_text(name))
        sources = [str(source.relative_to(ROOT))]
        if extras is not None:
            sources.insert(0, "core/pyproject.toml")
        session.run(
            "uv",
            "pip",
            "compile",
            "--quiet",
            "--python-version=3.11",
            "--custom-compile-command=nox -s lock",
            *[f"--extra={extra}" for extra in extras or []],
            *sources,
            f"--output-file=constraints/{name}.txt",
            *session.posargs,
        )


@nox.session
@lean
def lint(session: nox.Session) -> None:
    """ruff check and format check over the whole tree; core's layers (docs/architecture.md).

    import-linter checks the contracts in pyproject.toml (layers that import only
    downward, an executor that imports no operator, no framework in the core);
    dev/import_cycles.py fails on an import cycle of more than 3 modules; mypy, through
    chute's and the plugins' .pyi stubs ([tool.mypy] in pyproject.toml), accepts
    tests/typing/pipelines_ok.py and plugins_ok.py and gives pipelines_bad.py and
    plugins_bad.py exactly the errors their comments expect.
    """
    session.install("-c", _lock(session, "lint"), "ruff", "import-linter", "mypy", "numpy")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    source = {"PYTHONPATH": str(ROOT / "core" / "src")}  # read, not imported: no install
    session.run("lint-imports", "--no-cache", env=source)
    session.run("python", "dev/import_cycles.py", "--max", "3", env=source)
    # the fn/ops stubs (python -m chute.tools.stubs) catch a misspelled operator argument,
    # the plugins' stubs (python -m chute.tools.plugin_stubs) a misspelled iterator keyword;
    # no framework is installed here (mypy takes torch, tensorflow, paddle, jax as Any)
    session.run(
        "mypy", "--no-incremental", "tests/typing/pipelines_ok.py", "tests/typing/plugins_ok.py"
    )
    session.run("python", "tests/typing/check_errors.py")


@nox.session
@lean
def core(session: nox.Session) -> None:
    """The engine's tests, with no deep-learning framework installed."""
    session.install("-c", _lock(session, "core"), "-e", "core", *TEST_DEPS)
    session.run("pytest", "-q", "tests/core", "tests/compat", "tests/reliability", *session.posargs)


@nox.session(default=False)
def fuzz(session: nox.Session) -> None:
    """The full fuzz corpus (64 seeds, 2,100 mutants, fixed seed) through readers.file ->
    decoders.image under on_error="skip", and the decoder fuzz tests (issue 30)."""
    session.install("-c", _lock(session, "core"), "-e", "core", *TEST_DEPS)
    env = {"CHUTE_FUZZ_MUTANTS": "2100"}
    session.run(
        "pytest",
        "-q",
        "tests/reliability/test_fuzz_pipeline.py",
        "tests/core/errors/test_fuzz_decoders.py",
        *session.posargs,
        env=env,
    )


@nox.session(default=False)
def atheris(session: nox.Session) -> None:
    """Coverage-guided fuzzing (atheris) of the image header parsers and CPU decoders,
    time-boxed: ``nox -s atheris -- -max_total_time=600`` for longer (default 120 s)."""
    session.install("-c", _lock(session, "core"), "-e", "core", *TEST_DEPS, "atheris>=2.3")
    args = session.posargs or ["-max_total_time=120"]
    session.chdir(session.create_tmp())  # crash-*/timeout-* findings land here
    script = str(ROOT / "tests" / "reliability" / "atheris_decoders.py")
    session.run("python", script, "-timeout=10", "-rss_limit_mb=3000", *args)


@nox.session(default=False)
def soak(session: nox.Session) -> None:
    """40 epochs of a skipping decode pipeline: RSS growth < 5%, threads and files flat."""
    session.install("-c", _lock(session, "core"), "-e", "core", *TEST_DEPS)
    session.run(
        "pytest",
        "-q",
        "-s",
        "tests/reliability/test_soak.py",
        *session.posargs,
        env={"CHUTE_SOAK_EPOCHS": "40"},
    )


@nox.session(default=False)
def latest(session: nox.Session) -> None:
    """The engine's tests against the newest release of every dependency (no lock)."""
    session.install("--upgrade", "-e", "core", *TEST_DEPS)
    session.run("uv", "pip", "list")
    session.run("pytest", "-q", "tests/core", *session.posargs)


@nox.session(default=False)
def dali_parity(session: nox.Session) -> None:
    """chute's CPU outputs against DALI 2.4's for the same inputs (tests/dali_parity).

    Not in the default run: it downloads DALI (about 190 MB). Its own lock (DALI pins
    some packages below the core lock's); the tests skip when DALI does not import.
    """
    session.install("-c", _lock(session, "dali_parity"), "-e", "core", *TEST_DEPS, DALI)
    session.run("pytest", "-q", "tests/dali_parity", *session.posargs)


@nox.session
@lean
def docs(session: nox.Session) -> None:
    """The documentation: mkdocs build --strict, and every framework-free example it shows."""
    session.install("-c", _lock(session, "docs"), "-e", "core", *DOCS_DEPS)
    site = session.create_tmp()
    session.run(
        "mkdocs",
        "build",
        "--strict",
        "--site-dir",
        f"{site}/site",
        env={"NO_MKDOCS_2_WARNING": "1"},
    )
    session.run("pytest", "-q", "tests/docs", *session.posargs)


@nox.session
@lean
def wheel(session: nox.Session) -> None:
    """Build every package's sdist and wheel; test chute + chute-torch installed from them."""
    session.install("-c", _lock(session, "wheel"), *WHEEL_DEPS)
    tmp = pathlib.Path(session.create_tmp()).resolve()
    dist = tmp / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    for package in ["core", *(f"plugins/{framework}" for framework in FRAMEWORKS)]:
        # the wheel is built from the sdist: what the sdist misses, the wheel misses
        # (an install step: `nox --install-only` builds the wheels and installs them too)
        session.run_install("python", "-m", "build", "--installer=uv", f"--outdir={dist}", package)
    wheels = {path.name.split("-")[0]: path for path in dist.glob("*.whl")}
    sdists = sorted(path.name for path in dist.glob("*.tar.gz"))
    expected = ["chute", *(f"chute_{framework}" for framework in FRAMEWORKS)]
    if sorted(wheels) != sorted(expected) or len(sdists) != len(expected):
        session.error(
            f"expected a wheel and an sdist of each of {expected}, got {os.listdir(dist)}"
        )
    names = zipfile.ZipFile(wheels["chute"]).namelist()
    if not any(name.startswith("chute/runtime/_native") for name in names):
        message = (
            "the chute wheel has no compiled chute.runtime._native (is a C compiler installed?)"
        )
        if os.environ.get("CHUTE_WHEEL_NO_NATIVE") != "1":
            session.error(message + "; set CHUTE_WHEEL_NO_NATIVE=1 to accept that")
        session.warn(message)
    for framework in FRAMEWORKS:  # each plugin is typed: py.typed, and its iterators' stubs
        names = zipfile.ZipFile(wheels[f"chute_{framework}"]).namelist()
        typed = [f"chute/{framework}/py.typed"]
        if (ROOT / "plugins" / framework / "src" / "chute" / framework / "_dali.pyi").exists():
            typed.append(f"chute/{framework}/_dali.pyi")
        if missing := [name for name in typed if name not in names]:
            session.error(f"the chute-{framework} wheel lacks {missing}")
    session.install("-c", _lock(session, "wheel"), str(wheels["chute"]), str(wheels["chute_torch"]))
    # run from a folder outside the tree, so that only the installed wheels can be imported
    run_dir = tmp / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir()
    shutil.copy(ROOT / "tests" / "wheel" / "test_wheel.py", run_dir)
    (run_dir / "pytest.ini").write_text("[pytest]\n")
    session.chdir(run_dir)
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *session.posargs)


def _plugin_session(framework: str) -> None:
    @lean
    def session_fn(session: nox.Session) -> None:
        session.install(
            "-c",
            _lock(session, framework),
            *FRAMEWORKS[framework],
            "-e",
            "core",
            "-e",
            f"plugins/{framework}",
            *PLUGIN_TEST_DEPS,
        )
        session.run(
            "pytest",
            "-q",
            f"tests/plugins/{framework}",
            "tests/plugins/conformance",
            "tests/docs",
            f"--framework={framework}",
            *session.posargs,
            env={"XLA_FLAGS": "--xla_force_host_platform_device_count=4"},
        )

    session_fn.__doc__ = (
        f"The {framework} plugin: its tests, the shared conformance suite, its doc examples."
    )
    nox.session(name=framework)(session_fn)


for _framework in FRAMEWORKS:
    _plugin_session(_framework)
