"""The three policies on a fixed batch and seed: the per-sample choices (recorded with
core.record_choices) follow each policy's rules and table, and every sample's output is
what its recorded operations at their magnitudes give (NumPy references)."""

from __future__ import annotations

import numpy as np
import pytest
from auto_aug_reference import apply_reference

from chute import fn, pipeline_def, types
from chute.auto_aug import augmentations as a
from chute.auto_aug import auto_augment, rand_augment, trivial_augment
from chute.auto_aug.core import Policy, record_choices

RNG = np.random.default_rng(2024)
SQUARES = [RNG.integers(0, 256, (6, 6, 3), dtype=np.uint8) for _ in range(24)]
# large enough that RandAugment's 30-pixel shifts at m=9 keep part of the image
MEDIUM = [RNG.integers(0, 256, (40, 48, 3), dtype=np.uint8) for _ in range(16)]
NN = types.INTERP_NN

# operations whose NumPy references are bit-exact (integer maps, whole-pixel or
# tie-free nearest-neighbour geometry), at 5 bins
EXACT_SUITE = [
    a.translate_x_no_shape.augmentation(mag_range=(0, 4)),  # 0..4 px
    a.translate_y_no_shape.augmentation(mag_range=(0, 4)),
    a.shear_x.augmentation(mag_range=(0, 0.5)),  # k/8: never on a pixel edge
    a.rotate.augmentation(mag_range=(0, 360)),  # multiples of 90 degrees
    a.posterize,
    a.solarize,
    a.solarize_add,
    a.invert,
    a.equalize,
    a.identity,
]


def run(graph, images=SQUARES, seed=11, device_id=None):
    @pipeline_def(batch_size=len(images), num_threads=2, device_id=device_id, seed=seed)
    def pipe():
        x = fn.external_source(source=lambda: images, layout="HWC")
        with record_choices() as choices:
            out = graph(x)
        return (out, *choices.values())

    p = pipe()
    p.build()
    outs = p.run()
    outs = [o.as_cpu() for o in outs]
    return [[np.asarray(o.at(i)) for i in range(len(o))] for o in outs]


def test_rand_augment_applies_the_recorded_ops_in_order_with_their_signs():
    outs, op_idx, signs = run(
        lambda x: rand_augment.apply_rand_augment(
            EXACT_SUITE, x, n=2, m=3, num_magnitude_bins=5, seed=5, interp_type=NN
        )
    )
    ops = np.array(op_idx)
    assert ops.shape == (24, 2) and set(np.array(signs).ravel()) == {0, 1}
    assert ops.min() >= 0 and ops.max() < len(EXACT_SUITE)
    assert len({tuple(o) for o in ops}) > 12  # the samples draw different pairs
    for image, (first, second), (s1, s2), got in zip(SQUARES, ops, signs, outs):
        want = apply_reference(image, EXACT_SUITE[first], 3, s1, 5)
        want = apply_reference(want, EXACT_SUITE[second], 3, s2, 5)
        np.testing.assert_array_equal(got, want)


def test_trivial_augment_applies_one_recorded_op_at_its_recorded_bin():
    outs, bins, signs, op_idx = run(
        lambda x: trivial_augment.apply_trivial_augment(
            EXACT_SUITE, x, num_magnitude_bins=5, seed=9, interp_type=NN
        )
    )
    assert sorted(set(np.ravel(bins))) == [0, 1, 2, 3, 4]
    assert len(set(np.ravel(op_idx))) >= 8
    for image, op, b, s, got in zip(SQUARES, op_idx, bins, signs, outs):
        np.testing.assert_array_equal(got, apply_reference(image, EXACT_SUITE[op], b, s, 5))


def test_auto_augment_runs_the_recorded_sub_policy_steps_below_their_probability():
    tx, ty, shear, rot, post, sol, sol_add, inv, eq, _ = EXACT_SUITE
    policy = Policy(
        "exact",
        num_magnitude_bins=5,
        sub_policies=[
            [(inv, 0.5, None), (tx, 0.7, 2)],
            [(post, 1.0, 1), (rot, 0.3, 1)],
            [(sol, 0.8, 2)],
            [(eq, 0.2, None), (shear, 0.6, 4), (sol_add, 0.9, 3)],
            [(ty, 0.9, 3), (inv, 0.4, None)],
        ],
    )
    images = SQUARES * 2  # 48 samples
    outs, sub_id, should_run, signs = run(
        lambda x: auto_augment.apply_auto_augment(policy, x, seed=3, interp_type=NN), images
    )
    assert sorted(set(np.ravel(sub_id))) == [0, 1, 2, 3, 4]
    assert np.array(should_run).shape == (48, 3)
    ran = 0
    for image, k, draws, sample_signs, got in zip(images, sub_id, should_run, signs, outs):
        want = image
        for step, (aug, p, mag) in enumerate(policy.sub_policies[int(k)]):
            if draws[step] < p:
                ran += 1
                want = apply_reference(want, aug, mag, sample_signs[step], 5)
        np.testing.assert_array_equal(got, want)
    assert 20 < ran < 70  # some steps ran, some did not


# -- the published policies ------------------------------------------------------------


def close(got, want):
    """Equal but for rounding: a float blend may round a value one level apart (they are
    all equal on this machine)."""
    diff = np.abs(got.astype(int) - want.astype(int))
    return got.shape == want.shape and diff.max() <= 1 and (diff == 0).mean() >= 0.99


def test_rand_augment_n2_m9_choices_and_outputs():
    suite = rand_augment.get_rand_augment_suite()
    images = MEDIUM + SQUARES
    outs, op_idx, signs = run(
        lambda x: rand_augment.rand_augment(x, n=2, m=9, seed=42, interp_type=NN), images
    )
    ops = np.array(op_idx)
    assert ops.shape == (40, 2) and ops.min() >= 0 and ops.max() <= 13
    assert len(set(ops.ravel())) >= 12  # (nearly) all of the 14 operations drawn
    for image, (first, second), (s1, s2), got in zip(images, ops, signs, outs):
        want = apply_reference(image, suite[first], 9, s1, 31)
        want = apply_reference(want, suite[second], 9, s2, 31)
        assert close(got, want), (suite[first].name, suite[second].name)


def test_trivial_augment_wide_choices_and_outputs():
    suite = trivial_augment.get_trivial_augment_wide_suite()
    images = MEDIUM + SQUARES
    outs, bins, signs, op_idx = run(
        lambda x: trivial_augment.trivial_augment_wide(x, seed=42, interp_type=NN), images
    )
    assert set(np.ravel(bins)) <= set(range(31)) and len(set(np.ravel(bins))) > 10
    for image, op, b, s, got in zip(images, op_idx, bins, signs, outs):
        assert close(got, apply_reference(image, suite[op], b, s, 31)), suite[op].name


def test_auto_augment_image_net_follows_the_policy_table():
    policy = auto_augment.get_image_net_policy()
    images = MEDIUM * 2 + SQUARES * 2  # 80 samples
    outs, sub_id, should_run, signs = run(
        lambda x: auto_augment.auto_augment_image_net(x, seed=42, interp_type=NN), images
    )
    assert set(np.ravel(sub_id)) <= set(range(25)) and len(set(np.ravel(sub_id))) > 15
    for image, k, draws, sample_signs, got in zip(images, sub_id, should_run, signs, outs):
        want = image
        for step, (aug, p, mag) in enumerate(policy.sub_policies[int(k)]):
            if draws[step] < p:
                want = apply_reference(want, aug, mag, sample_signs[step], 11)
        assert close(got, want), policy.sub_policies[int(k)]


def test_the_image_net_table_is_tensorflow_tpus_policy_v0():
    table = [
        [(aug.name, p, mag) for aug, p, mag in sub]
        for sub in auto_augment.get_image_net_policy().sub_policies
    ]
    assert table[0] == [("equalize", 0.8, None), ("shear_y", 0.8, 4)]
    assert table[6] == [("equalize", 0.4, None), ("solarize_add", 0.8, 3)]
    assert table[15] == [("rotate", 1.0, 7), ("translate_y", 0.8, 9)]
    assert table[16] == [("solarize", 0.8, 4)]
    assert table[24] == [("color", 0.8, 6), ("rotate", 0.4, 5)]
    assert len(table) == 25
    reduced = auto_augment.get_reduced_image_net_policy().sub_policies
    # the paper's (and torchvision's IMAGENET) first sub-policies
    assert [(aug.name, p, m) for aug, p, m in reduced[0]] == [
        ("posterize", 0.4, 8),
        ("rotate", 0.6, 9),
    ]
    assert [(aug.name, p, m) for aug, p, m in reduced[14]] == [
        ("color", 0.6, 4),
        ("contrast", 1.0, 8),
    ]


def test_the_same_seed_gives_the_same_augmentations_and_another_seed_others():
    def graph(x):
        return rand_augment.rand_augment(x, n=2, m=9, seed=7)

    first, again, other = run(graph), run(graph), run(graph, seed=12)
    for x, y in zip(first, again):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)
    # op_idx comes from the explicit seed=7: the pipeline seed changes nothing
    np.testing.assert_array_equal(np.array(first[1]), np.array(other[1]))
    no_seed = lambda s: run(lambda x: rand_augment.rand_augment(x, n=2, m=9), seed=s)  # noqa: E731
    assert not np.array_equal(np.array(no_seed(1)[1]), np.array(no_seed(2)[1]))


def test_policy_arguments_are_checked():
    with pytest.raises(ValueError, match="magnitude bin `m`"):
        run(lambda x: rand_augment.rand_augment(x, n=2, m=31))
    with pytest.raises(ValueError, match="`excluded` names `blur`"):
        run(lambda x: rand_augment.rand_augment(x, n=1, m=3, excluded=["blur"]))
    with pytest.raises(ValueError, match="policy_name"):
        run(lambda x: auto_augment.auto_augment(x, policy_name="cifar"))
    with pytest.raises(ValueError, match="`shape` must not be given"):
        run(lambda x: auto_augment.auto_augment(x, "reduced_image_net", shape=x.shape()))
    with pytest.raises(Exception, match="unexpected kwarg.*fill"):
        run(lambda x: rand_augment.apply_rand_augment([a.invert], x, 1, 0, fill=3))
    with pytest.raises(ValueError, match="magnitude bin of a step"):
        Policy("p", 11, [[(a.rotate, 0.5, 11)]])
    with pytest.raises(ValueError, match="needs a magnitude bin"):
        Policy("p", 11, [[(a.rotate, 0.5, None)]])
    with pytest.warns(UserWarning, match="ignored"):
        Policy("p", 11, [[(a.invert, 0.5, 3)]])


def test_excluded_operations_are_never_drawn():
    kept = [aug.name for aug in trivial_augment.get_trivial_augment_wide_suite()]
    kept = [n for n in kept if n not in ("rotate", "equalize")]
    outs, bins, signs, op_idx = run(
        lambda x: trivial_augment.trivial_augment_wide(x, seed=1, excluded=["rotate", "equalize"])
    )
    assert set(np.ravel(op_idx)) <= set(range(len(kept)))


def test_translations_relative_to_each_images_shape():
    names = [aug.name for aug in rand_augment.get_rand_augment_suite()]
    only_x = [n for n in names if n != "translate_x"]
    outs, op_idx, signs = run(
        lambda x: rand_augment.rand_augment(
            x, n=1, m=30, shape=x.shape(), max_translate_rel=0.5, excluded=only_x, interp_type=NN
        ),
        MEDIUM[:4],
    )
    from auto_aug_reference import forward_warp_nn, translation_matrix

    for image, sign, got in zip(MEDIUM, signs, outs):
        dx = -24 if sign else 24  # half of the width 48
        np.testing.assert_array_equal(got, forward_warp_nn(image, translation_matrix(dx, 0), 128))


def test_operations_and_sub_policies_are_drawn_uniformly():
    tiny = [np.full((2, 2, 3), 9, np.uint8)] * 700
    _, op_idx, _ = run(lambda x: rand_augment.rand_augment(x, n=2, m=9, seed=3), tiny)
    counts = np.bincount(np.ravel(op_idx), minlength=14)
    assert counts.min() > 0.6 * 100 and counts.max() < 1.4 * 100  # 1400 draws over 14
    _, sub_id, should_run, _ = run(lambda x: auto_augment.auto_augment_image_net(x, seed=3), tiny)
    counts = np.bincount(np.ravel(sub_id), minlength=25)
    assert counts.min() > 0.5 * 28 and counts.max() < 1.6 * 28  # 700 draws over 25
    draws = np.array(should_run)
    assert draws.min() >= 0 and draws.max() < 1 and abs(draws.mean() - 0.5) < 0.03


@pytest.mark.gpu
@pytest.mark.parametrize(
    "policy",
    [
        lambda x: rand_augment.rand_augment(x, n=2, m=9, seed=42),
        lambda x: trivial_augment.trivial_augment_wide(x, seed=42),
        lambda x: auto_augment.auto_augment_image_net(x, seed=42),
    ],
    ids=["rand_augment", "trivial_augment_wide", "auto_augment_image_net"],
)
def test_gpu_policies_make_the_same_choices_and_images_as_the_cpu(policy):
    images = MEDIUM + SQUARES
    # the same graph on both (a copy where the other moves to the GPU): random streams
    # are keyed by operator, so the two pipelines must number their operators alike
    cpu = run(lambda x: policy(fn.copy(x)), images)
    gpu = run(lambda x: policy(x.gpu()), images, device_id=0)
    for c_choice, g_choice in zip(cpu[1:], gpu[1:]):  # the draws are the same
        np.testing.assert_array_equal(np.array(c_choice), np.array(g_choice))
    for c, g in zip(cpu[0], gpu[0]):
        assert c.shape == g.shape
        # GPU warps and blends may round one level apart on a few pixels
        assert np.abs(c.astype(int) - g.astype(int)).max() <= 1 or (c != g).mean() < 0.02


def test_shape_may_be_one_height_width_pair():
    names = [aug.name for aug in rand_augment.get_rand_augment_suite()]
    only_y = [n for n in names if n != "translate_y"]
    outs, _, signs = run(
        lambda x: rand_augment.rand_augment(
            x, n=1, m=30, shape=(40, 48), max_translate_rel=0.25, excluded=only_y, interp_type=NN
        ),
        MEDIUM[:4],
    )
    from auto_aug_reference import forward_warp_nn, translation_matrix

    for image, sign, got in zip(MEDIUM, signs, outs):
        dy = -10 if sign else 10  # a quarter of the height 40
        np.testing.assert_array_equal(got, forward_warp_nn(image, translation_matrix(0, dy), 128))


@pytest.mark.parametrize(
    "policy",
    [
        lambda x: rand_augment.rand_augment(x, n=2, m=9),
        lambda x: trivial_augment.trivial_augment_wide(x),
        lambda x: auto_augment.auto_augment_image_net(x),
    ],
    ids=["rand_augment", "trivial_augment_wide", "auto_augment_image_net"],
)
def test_a_samples_augmentation_does_not_depend_on_the_batch_it_is_in(policy):
    """Draws are keyed by each sample's place in the batch, not by how the batch splits:
    the first 8 samples come out the same in a batch of 8 and in a batch of 24."""
    small = run(policy, SQUARES[:8], seed=5)
    large = run(policy, SQUARES, seed=5)
    for small_out, large_out in zip(small, large):
        for a_, b_ in zip(small_out, large_out[:8]):
            np.testing.assert_array_equal(a_, b_)
