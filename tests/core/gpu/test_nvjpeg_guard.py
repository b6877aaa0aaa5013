"""chute.gpu.nvjpeg_guard: which libnvjpeg nvImageCodec would get, found from the process map.

The maps and the nvidia wheel folder are made here; the GPU test checks that after
``import chute`` then ``import torchvision`` the mixed decoder still decodes on the GPU.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import pytest

from chute.gpu import nvjpeg_guard


@pytest.fixture
def wheel(tmp_path, monkeypatch):
    """A fake nvidia namespace package holding the cu13 wheel's libnvjpeg."""
    lib = tmp_path / "site" / "nvidia" / "cu13" / "lib" / "libnvjpeg.so.13"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"not an ELF file")
    # a regular package, as nvImageCodec's wheel makes it: an installed one then cannot take
    # precedence over this earlier path entry (a namespace portion would lose to it)
    (tmp_path / "site" / "nvidia" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    for name in [m for m in sys.modules if m == "nvidia" or m.startswith("nvidia.")]:
        monkeypatch.delitem(sys.modules, name)
    return str(lib)


def _maps(tmp_path, *paths):
    text = "".join(
        f"7f00{i:04x}000-7f00{i:04x}fff r-xp 00000000 08:01 {i} {p}\n" for i, p in enumerate(paths)
    )
    f = tmp_path / "maps"
    f.write_text(text + "7fff0000-7fff1000 rw-p 00000000 00:00 0 [stack]\n")
    return str(f)


TV = "/venv/lib/python3.12/site-packages/torchvision.libs/libnvjpeg.36e11081.so.13"


def test_the_wheels_library_is_found(wheel):
    assert wheel in nvjpeg_guard.wheel_nvjpeg()


def test_a_copy_loaded_before_ours_is_named(wheel, tmp_path):
    maps = _maps(tmp_path, "/usr/lib/libc.so.6", TV, TV)
    assert nvjpeg_guard.loaded_nvjpeg(maps) == [TV]
    assert nvjpeg_guard.foreign_nvjpeg(maps) == TV


def test_no_foreign_copy_when_ours_is_loaded_or_none_is(wheel, tmp_path):
    assert nvjpeg_guard.foreign_nvjpeg(_maps(tmp_path, wheel, TV)) is None
    assert nvjpeg_guard.foreign_nvjpeg(_maps(tmp_path, "/usr/lib/libc.so.6")) is None


def test_without_the_wheel_nothing_is_foreign(tmp_path, monkeypatch):
    monkeypatch.setattr(nvjpeg_guard, "wheel_nvjpeg", lambda: [])
    assert nvjpeg_guard.foreign_nvjpeg(_maps(tmp_path, TV)) is None


def test_preload_skips_what_does_not_load_and_can_be_turned_off(wheel, monkeypatch):
    monkeypatch.setattr(nvjpeg_guard, "_preloaded", [])
    monkeypatch.setattr(nvjpeg_guard, "loaded_nvjpeg", lambda maps="": [])
    assert nvjpeg_guard.preload() == []  # the fake file is no library: skipped, no error
    monkeypatch.setenv("CHUTE_NVJPEG_PRELOAD", "0")
    monkeypatch.setattr(nvjpeg_guard, "wheel_nvjpeg", lambda: pytest.fail("looked"))
    assert nvjpeg_guard.preload() == []


def test_the_warning_names_the_library_once(monkeypatch):
    monkeypatch.setattr(nvjpeg_guard, "_warned", [])
    monkeypatch.setattr(nvjpeg_guard, "foreign_nvjpeg", lambda maps="": TV)
    with pytest.warns(RuntimeWarning, match="torchvision.libs/libnvjpeg.*before torchvision"):
        nvjpeg_guard.warn_once()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nvjpeg_guard.warn_once()


@pytest.mark.gpu
def test_import_chute_then_torchvision_keeps_jpegs_on_the_gpu(tmp_path):
    pytest.importorskip("torchvision")
    pytest.importorskip("nvidia.nvimgcodec")
    import cv2
    import numpy as np

    for i in range(8):
        img = np.random.default_rng(i).integers(0, 255, (64, 80, 3), np.uint8)
        cv2.imwrite(str(tmp_path / f"{i}.jpg"), img)
    script = textwrap.dedent(
        f"""
        import chute, torchvision, collections
        from chute import fn, pipeline_def
        import chute.gpu.jpeg as J
        seen = collections.Counter()
        original = J.BatchDecoder.decode
        def decode(self, *a, **k):
            r = original(self, *a, **k); seen.update(r.sources); return r
        J.BatchDecoder.decode = decode
        @pipeline_def(batch_size=8, num_threads=2, device_id=0)
        def p():
            jpegs, _ = fn.readers.file(files={[str(tmp_path / f"{i}.jpg") for i in range(8)]!r})
            return fn.decoders.image(jpegs, device="mixed")
        pipe = p(); pipe.build(); pipe.run()
        print(dict(seen))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    decoded_on = out.stdout
    assert "'fallback'" not in decoded_on and ("'hw'" in decoded_on or "'cuda'" in decoded_on)
