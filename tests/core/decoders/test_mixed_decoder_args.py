"""DALI's GPU-decoding arguments of the mixed decoders reach the GPU decoder's settings."""

import pytest

import chute
from chute import fn
from chute.gpu.codec_setup import codec_options
from chute.ops.decoders.decoder_base import DecodeSettings
from chute.runtime import tuning


def _decoder_node(device="mixed", **args):
    pipe = chute.Pipeline(batch_size=2, num_threads=1, device_id=0)
    with pipe:
        jpegs, _ = fn.readers.file(files=["/data/a.jpg"], labels=[0])
        images = fn.decoders.image_random_crop(jpegs, device=device, **args)
        pipe.set_outputs(images)
    return images.producer


def test_hints_and_threshold_join_the_builds_decoder_options():
    node = _decoder_node(
        preallocate_width_hint=640, preallocate_height_hint=480, hybrid_huffman_threshold=0
    )
    with tuning.use(tuning.Tuning(decoder_options={"cpu_share": 0.1})):
        settings = DecodeSettings(node)
    assert dict(settings.tuning.decoder_options) == {
        "cpu_share": 0.1,
        "preallocate_width_hint": 640,
        "preallocate_height_hint": 480,
        "hybrid_huffman_threshold": 0,
    }
    # and the string nvImageCodec is given for them
    opts = codec_options(False, **{k: v for k, v in settings.tuning.decoder_options.items()
                                   if k != "cpu_share"})  # fmt: skip
    assert opts.split() == [
        "nvjpeg_hw_decoder:preallocate_width_hint=640",
        "nvjpeg_hw_decoder:preallocate_height_hint=480",
        "nvjpeg_cuda_decoder:hybrid_huffman_threshold=0",
    ]


def test_without_them_the_build_keeps_its_tuning():
    node = _decoder_node()
    t = tuning.Tuning(gpu_lanes=3)
    with tuning.use(t):
        assert DecodeSettings(node).tuning is t


def test_the_cpu_decoder_accepts_and_ignores_them():
    node = _decoder_node(device="cpu", preallocate_width_hint=640, hw_decoder_load=0.5)
    assert dict(DecodeSettings(node).tuning.decoder_options) == {}


@pytest.mark.parametrize(
    "args, message",
    [
        ({"hw_decoder_load": 1.5}, "argument 'hw_decoder_load' must be in \\[0, 1\\], got 1.5"),
        ({"preallocate_width_hint": -1}, "argument 'preallocate_width_hint' must be >= 0"),
        ({"hybrid_huffman_threshold": -5}, "argument 'hybrid_huffman_threshold' must be >= 0"),
    ],
)
def test_bad_values_are_named_at_build(args, message):
    node = _decoder_node(**args)
    with pytest.raises(ValueError, match="decoders.image_random_crop: " + message):
        DecodeSettings(node)
