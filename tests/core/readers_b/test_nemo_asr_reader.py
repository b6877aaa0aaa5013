"""fn.readers.nemo_asr: manifests, decoded audio, text, indices, durations, shards, resume, bad lines."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _listed_reader_checks import check_resume, shard_epochs

from chute import OperatorError, fn, pipeline_def, types

sf = pytest.importorskip("soundfile")

RATE = 8000


def tone(i, n=400, channels=1):
    """int16 samples of wave i: a ramp offset by 100 * i (exact in PCM_16)."""
    base = (np.arange(n, dtype=np.int32) * 7 + 100 * i) % 20000 - 10000
    data = np.stack([base + 3 * c for c in range(channels)], axis=1).astype(np.int16)
    return data


def write_dataset(tmp_path, n, channels=1, extra_lines=()):
    (tmp_path / "audio").mkdir(exist_ok=True)
    lines = []
    for i in range(n):
        sf.write(
            tmp_path / "audio" / f"{i}.wav", tone(i, channels=channels), RATE, subtype="PCM_16"
        )
        lines.append(
            json.dumps(
                {
                    "audio_filepath": f"audio/{i}.wav",
                    "duration": 0.05 * (i + 1),
                    "text": f"utt {i} é",
                }
            )
        )
    lines += list(extra_lines)
    manifest = tmp_path / "manifest.json"
    manifest.write_text("\n".join(lines) + "\n")
    return str(manifest)


def asr_pipe(manifests, batch_size=3, **kw):
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None, seed=4)
    def pipe():
        out = fn.readers.nemo_asr(manifest_filepaths=manifests, name="R", **kw)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    return pipe()


def test_outputs_match_the_files(tmp_path):
    manifest = write_dataset(tmp_path, 3)
    audio, rate, text, idx = asr_pipe([manifest], read_idxs=True).run()
    for i in range(3):
        expected = tone(i)[:, 0].astype(np.float32) / 32768.0
        assert audio.at(i).dtype == np.float32 and audio.at(i).ndim == 1
        np.testing.assert_array_equal(audio.at(i), expected)
        assert float(rate.at(i)) == RATE and rate.at(i).shape == ()
        assert text.at(i).dtype == np.uint8 and text.at(i).tobytes() == f"utt {i} é".encode()
        assert idx.at(i).dtype == np.int64 and idx.at(i).tolist() == [i]


def test_int16_no_downmix_and_output_selection(tmp_path):
    manifest = write_dataset(tmp_path, 2, channels=2)
    (audio,) = [
        asr_pipe(
            [manifest], 2, downmix=False, dtype=types.INT16, read_sample_rate=False, read_text=False
        ).run()
    ][0]
    np.testing.assert_array_equal(audio.at(1), tone(1, channels=2))
    mono, _, _ = asr_pipe([manifest], 2).run()  # downmix (default): the channels' mean
    np.testing.assert_allclose(mono.at(0), tone(0, channels=2).mean(axis=1) / 32768.0, atol=1e-6)


def test_offset_duration_resample_and_duration_filter(tmp_path):
    manifest = write_dataset(tmp_path, 4)
    (tmp_path / "cut.json").write_text(
        json.dumps({"audio_filepath": "audio/2.wav", "offset": 0.01, "duration": 0.02, "text": "x"})
    )
    audio, _, _ = asr_pipe([str(tmp_path / "cut.json")], 1).run()
    np.testing.assert_array_equal(audio.at(0), tone(2)[80:240, 0] / np.float32(32768.0))
    audio, rate, _ = asr_pipe([manifest], 1, sample_rate=4000.0).run()
    assert float(rate.at(0)) == 4000.0 and len(audio.at(0)) == 200
    # durations 0.05, 0.10, 0.15, 0.20: keep [0.08, 0.16]; indices stay the manifest's
    _, _, text, idx = asr_pipe(
        [manifest], 2, min_duration=0.08, max_duration=0.16, read_idxs=True
    ).run()
    assert [idx.at(i).tolist() for i in range(2)] == [[1], [2]]
    p = asr_pipe([manifest], 2, min_duration=0.08, max_duration=0.16)
    assert p.reader_meta("R")["epoch_size"] == 2


@pytest.mark.parametrize("num_shards", [1, 2, 3])
def test_shards_cover_every_entry_once_and_two_manifests_chain(tmp_path, num_shards):
    first = write_dataset(tmp_path, 5)
    (tmp_path / "more").mkdir()
    second = write_dataset(tmp_path / "more", 3)

    def make(shard, shards):
        return asr_pipe(
            [first, second],
            2,
            read_idxs=True,
            shard_id=shard,
            num_shards=shards,
            shuffle_after_epoch=True,
        )

    epochs = shard_epochs(
        make, ["audio", "rate", "text", "idx"], lambda b, i: int(b["idx"].at(i)[0]), num_shards
    )
    for per_shard in epochs:
        assert sorted(k for keys in per_shard for k in keys) == list(range(8))
    assert [k for keys in epochs[0] for k in keys] == list(range(8))  # shuffled after epoch 0


def test_resume_mid_epoch(tmp_path):
    manifest = write_dataset(tmp_path, 7)
    check_resume(
        lambda: asr_pipe([manifest], 2, random_shuffle=True),
        ["audio", "rate", "text"],
        lambda b: [b["text"].at(i).tobytes() for i in range(len(b["text"]))],
    )


def test_malformed_line_raises_with_line_number_or_is_skipped(tmp_path):
    manifest = write_dataset(tmp_path, 3, extra_lines=['{"audio_filepath": "audio/0.wav", oops'])
    with pytest.raises(ValueError, match=r"manifest\.json' line 4"):
        asr_pipe([manifest]).build()

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, on_error="skip")
    def pipe():
        audio, _, text = fn.readers.nemo_asr(manifest_filepaths=[manifest], name="R")
        return audio, text + 0

    p = pipe()
    _, text = p.run()
    got = sorted(np.asarray(text.at(i)).astype(np.uint8).tobytes() for i in range(4))
    assert sorted(set(got)) == [b"utt 0 \xc3\xa9", b"utt 1 \xc3\xa9", b"utt 2 \xc3\xa9"]
    (error,) = p.errors()
    assert "line 4" in error["reason"]


def test_missing_audio_file_names_it(tmp_path):
    manifest = write_dataset(tmp_path, 2)
    (tmp_path / "audio" / "1.wav").unlink()
    with pytest.raises((OperatorError, OSError), match=r"1\.wav"):
        asr_pipe([manifest], 2).run()
