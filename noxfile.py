"""Test sessions: `nox` runs them all; `nox -s core` runs one.

FRAMEWORKS is the one list of frameworks and the versions they are tested with.
"""

from __future__ import annotations

import nox

# plugin folder -> packages installed for it (torch pinned to the local CPU wheel).
FRAMEWORKS = {
    "torch": ["torch==2.13.0"],
    "tf": ["tensorflow-cpu"],
    "paddle": ["paddlepaddle"],
    "jax": ["jax"],
}

nox.options.sessions = ["lint", "core", "docs", *FRAMEWORKS]
nox.options.reuse_existing_virtualenvs = True

TEST_DEPS = ["pytest>=8", "hypothesis>=6", "scipy", "scikit-image", "soundfile>=0.12", "av>=12"]


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and format check over the whole tree."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def core(session: nox.Session) -> None:
    """The engine's tests, with no deep-learning framework installed."""
    session.install("-e", "core", *TEST_DEPS)
    session.run("pytest", "-q", "tests/core", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site: mkdocs build --strict (the operator reference comes from chute.fn)."""
    session.install("-e", "core", "mkdocs>=1.6", "mkdocs-material>=9")
    site = session.create_tmp()
    session.run(
        "mkdocs",
        "build",
        "--strict",
        "--site-dir",
        f"{site}/site",
        *session.posargs,
        env={"NO_MKDOCS_2_WARNING": "1"},
    )


def _plugin_session(framework: str) -> None:
    def session_fn(session: nox.Session) -> None:
        session.install(*FRAMEWORKS[framework])
        session.install("-e", "core", "-e", f"plugins/{framework}", *TEST_DEPS)
        session.run(
            "pytest",
            "-q",
            f"tests/plugins/{framework}",
            "tests/plugins/conformance",
            f"--framework={framework}",
            *session.posargs,
            env={"XLA_FLAGS": "--xla_force_host_platform_device_count=4"},
        )

    session_fn.__doc__ = f"The {framework} plugin: its tests and the shared conformance suite."
    nox.session(name=framework)(session_fn)


for _framework in FRAMEWORKS:
    _plugin_session(_framework)
