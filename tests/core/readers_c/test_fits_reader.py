"""fn.experimental.readers.fits on FITS files written here: by hand, and by astropy where installed."""

from __future__ import annotations

import numpy as np
import pytest

from chute import Iterator, LastBatchPolicy, OperatorError, fn, pipeline_def
from chute.ops.readers import fits_format


def card(key: str, value: str = "", comment: str = "") -> bytes:
    text = f"{key:<8}= {value:>20}" if value else f"{key:<8}"
    if comment:
        text += f" / {comment}"
    return text.ljust(80).encode("ascii")


def hdu(first: bytes, data: np.ndarray | None, bitpix: int, extra: tuple = ()) -> bytes:
    """One HDU: the header cards (``first`` = SIMPLE or XTENSION), then big-endian data."""
    shape = () if data is None else data.shape
    cards = [first, card("BITPIX", str(bitpix)), card("NAXIS", str(len(shape)))]
    cards += [card(f"NAXIS{i + 1}", str(n)) for i, n in enumerate(reversed(shape))]
    if not first.startswith(b"SIMPLE"):
        cards += [card("PCOUNT", "0"), card("GCOUNT", "1")]
    cards += [*extra, card("END")]
    header = b"".join(cards)
    header += b" " * (-len(header) % 2880)
    if data is None:
        return header
    raw = data.astype(data.dtype.newbyteorder(">")).tobytes()
    return header + raw + b"\0" * (-len(raw) % 2880)


PRIMARY = card("SIMPLE", "T")
IMAGE = card("XTENSION", "'IMAGE   '")


def write_fits(path, *hdus: bytes) -> str:
    path.write_bytes(b"".join(hdus))
    return str(path)


def run(batch_size=2, n=None, **kw):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=1)
    def pipe():
        out = fn.experimental.readers.fits(name="R", **kw)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    p = pipe()
    p.build()
    n = n or p.epoch_size("R")
    rows = []
    while len(rows) < n:
        outs = p.run()
        rows += [[np.asarray(o.at(k)) for o in outs] for k in range(len(outs[0]))]
    p.close()
    return rows[:n]


def test_hand_written_files_types_axes_and_scaling(tmp_path):
    a = np.arange(12, dtype=np.int16).reshape(3, 4) - 6
    b = np.linspace(-1, 1, 10, dtype=np.float32).reshape(2, 5)
    u = np.array([[0, 1, 40000, 65535]], np.uint16)
    stored = (u.astype(np.int32) - 32768).astype(np.int16)  # FITS's unsigned convention
    path = write_fits(
        tmp_path / "x.fits",
        hdu(PRIMARY, None, 8, (card("EXTEND", "T"),)),
        hdu(IMAGE, a, 16),
        hdu(IMAGE, b, -32),
        hdu(IMAGE, stored, 16, (card("BSCALE", "1"), card("BZERO", "32768"))),
        hdu(IMAGE, np.array([[1, 2]], np.int16), 16, (card("BSCALE", "0.5"), card("BZERO", "1.5"))),
    )
    (row,) = run(batch_size=1, files=[path], hdu_indices=[2, 3, 4, 5])
    got_a, got_b, got_u, got_s = row
    assert got_a.dtype == np.int16 and got_a.shape == (3, 4)
    np.testing.assert_array_equal(got_a, a)
    assert got_b.dtype == np.float32
    np.testing.assert_array_equal(got_b, b)
    assert got_u.dtype == np.uint16
    np.testing.assert_array_equal(got_u, [[0, 1, 40000, 65535]])
    assert got_s.dtype == np.float32
    np.testing.assert_array_equal(got_s, [[2.0, 2.5]])


def test_header_values_are_parsed():
    raw = hdu(
        PRIMARY,
        None,
        8,
        (
            card("OBJECT", "'M31 it''s'", "a string with a quote"),
            card("EXPTIME", "1.5D2"),
            card("FLAG", "F"),
        ),
    )
    (h,) = fits_format.read_hdus(raw, "x")
    assert h.header["OBJECT"] == "M31 it's"
    assert h.header["EXPTIME"] == 150.0 and h.header["FLAG"] is False and h.data_size == 0


def test_file_root_filter_order_and_shards(tmp_path):
    root = tmp_path / "d"
    (root / "sub").mkdir(parents=True)
    names = ["b.fits", "a.fits", "sub/c.fits", "d.fits"]
    for i, name in enumerate(names):
        write_fits(root / name, hdu(PRIMARY, np.full((2, 2), i, np.int32), 32))
    (root / "skip.txt").write_text("not fits")
    rows = run(file_root=str(root), hdu_indices=[1])
    assert [int(r[0][0, 0]) for r in rows] == [1, 0, 3, 2]  # a, b, d, sub/c
    seen = []
    for shard in range(3):

        @pipeline_def(batch_size=2, num_threads=1, device_id=None)
        def pipe(shard=shard):
            return fn.experimental.readers.fits(
                file_root=str(root), hdu_indices=[1], shard_id=shard, num_shards=3, name="R"
            )

        it = Iterator(pipe(), ["x"], reader_name="R", last_batch_policy=LastBatchPolicy.PARTIAL)
        for (b,) in it:
            seen += [int(b["x"].at(k)[0, 0]) for k in range(b.real)]
    assert sorted(seen) == [0, 1, 2, 3]


def test_bad_files_raise_naming_file_and_hdu_or_are_skipped(tmp_path):
    good = write_fits(
        tmp_path / "good.fits", hdu(PRIMARY, None, 8), hdu(IMAGE, np.ones((2, 2), np.uint8), 8)
    )
    short = write_fits(tmp_path / "short.fits", hdu(PRIMARY, None, 8))
    cut = tmp_path / "cut.fits"
    cut.write_bytes((tmp_path / "good.fits").read_bytes()[: 2 * 2880 + 2])
    with pytest.raises(OperatorError, match=r"short\.fits.*has 1 HDU.*HDU 2"):
        run(batch_size=1, files=[short])
    with pytest.raises(OperatorError, match=r"cut\.fits.*HDU 2.*truncated"):
        run(batch_size=1, files=[str(cut)])

    @pipeline_def(batch_size=3, num_threads=1, device_id=None, on_error="skip")
    def pipe():
        return fn.experimental.readers.fits(files=[good, short, str(cut)], name="R")

    p = pipe()
    p.build()
    it = Iterator(p, ["x"], reader_name="R", last_batch_policy=LastBatchPolicy.PARTIAL)
    (b,) = next(it)
    assert b.real == 1 and b["x"].at(0).tolist() == [[1, 1], [1, 1]]
    assert sorted(e["path"].rsplit("/", 1)[1] for e in p.errors()) == ["cut.fits", "short.fits"]
    p.close()


def test_dtypes_must_match_the_files(tmp_path):
    path = write_fits(tmp_path / "f.fits", hdu(PRIMARY, np.zeros((2, 2), np.float32), -32))
    (row,) = run(batch_size=1, files=[path], hdu_indices=[1], dtypes=[np.float32])
    assert row[0].dtype == np.float32
    with pytest.raises(OperatorError, match="holds float32 data, the output is int16"):
        run(batch_size=1, files=[path], hdu_indices=[1], dtypes=[np.int16])
    with pytest.raises(ValueError, match="one per output"):
        run(batch_size=1, files=[path], hdu_indices=[1], dtypes=[np.int16, np.int16])


def test_resume_mid_epoch(tmp_path):
    for i in range(5):
        write_fits(tmp_path / f"{i}.fits", hdu(PRIMARY, np.full((1,), i, np.int16), 16))

    def make():
        @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=3)
        def pipe():
            return fn.experimental.readers.fits(
                file_root=str(tmp_path), hdu_indices=[1], random_shuffle=True, name="R"
            )

        return Iterator(
            pipe(),
            ["x"],
            reader_name="R",
            auto_reset=True,
            last_batch_policy=LastBatchPolicy.PARTIAL,
        )

    def take(it, n):
        out = []
        while len(out) < n:
            try:
                (b,) = next(it)
            except StopIteration:
                continue
            out.append([int(b["x"].at(k)[0]) for k in range(len(b["x"]))])
        return out

    reference = take(make(), 7)
    first = make()
    head = take(first, 2)
    resumed = make()
    resumed.load_state_dict(first.state_dict())
    assert head + take(resumed, 5) == reference


def test_astropy_files_and_compressed_images(tmp_path):
    fits = pytest.importorskip("astropy.io.fits")
    image = (np.arange(64 * 48, dtype=np.int32).reshape(48, 64) * 37) % 5000
    hdus = fits.HDUList(
        [
            fits.PrimaryHDU(),
            fits.ImageHDU(image.astype(np.float64)),
            fits.CompImageHDU(image.astype(np.int16), compression_type="RICE_1"),
            fits.ImageHDU(np.arange(6, dtype=np.uint32).reshape(2, 3)),
        ]
    )
    hdus.writeto(tmp_path / "astro.fits")
    (row,) = run(batch_size=1, files=[str(tmp_path / "astro.fits")], hdu_indices=[2, 3, 4])
    np.testing.assert_array_equal(row[0], image.astype(np.float64))
    assert row[1].dtype == np.int16
    np.testing.assert_array_equal(row[1], image.astype(np.int16))
    assert row[2].dtype == np.uint32
    np.testing.assert_array_equal(row[2], np.arange(6).reshape(2, 3))
