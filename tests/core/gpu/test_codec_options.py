"""The options string a BatchDecoder gives nvImageCodec (no GPU needed)."""

import pytest

from chute.gpu.codec_setup import codec_options


def test_hardware_preallocation_is_asked_of_the_hardware_decoder_only():
    opts = codec_options(
        False, preallocate_batch_size=256, preallocate_width_hint=640, preallocate_height_hint=0
    )
    assert opts.split() == [
        "nvjpeg_hw_decoder:preallocate_batch_size=256",
        "nvjpeg_hw_decoder:preallocate_width_hint=640",
    ]


def test_fancy_upsampling_first_and_the_callers_options_last():
    opts = codec_options(True, "nvjpeg_cuda_decoder:hybrid_huffman_threshold=0",
                         preallocate_batch_size=8)  # fmt: skip
    assert opts.split() == [
        ":fancy_upsampling=1",
        "nvjpeg_hw_decoder:preallocate_batch_size=8",
        "nvjpeg_cuda_decoder:hybrid_huffman_threshold=0",
    ]
    assert codec_options(False) == ""


@pytest.mark.parametrize("value", [-1, 2.5, True, "256"])
def test_a_bad_preallocation_is_named(value):
    with pytest.raises(ValueError, match="preallocate_batch_size must be an int >= 0"):
        codec_options(False, preallocate_batch_size=value)


def test_an_unknown_option_is_refused():
    with pytest.raises(TypeError, match="unknown decoder option 'batch'"):
        codec_options(False, batch=4)
