"""Shared by the policies: translation augmentations sized by the policy, and select with
an error that says how to give the image shape."""

from __future__ import annotations

from typing import Any

from chute.auto_aug import augmentations as a
from chute.auto_aug.core._args import MissingArgException
from chute.auto_aug.core._augmentation import Augmentation
from chute.auto_aug.core._select import select
from chute.graph import DataNode


def _height_width(limit: Any) -> tuple[Any, Any]:
    """A (height, width) pair from one limit for both or a pair."""
    if isinstance(limit, (tuple, list)):
        height, width = limit
        return height, width
    return limit, limit


def max_translations(
    use_shape: bool,
    max_translate_abs: Any = None,
    max_translate_rel: Any = None,
    default_translate_abs: Any = 250,
    default_translate_rel: Any = 1.0,
) -> tuple[Any, Any]:
    """The (height, width) limits of the translations: relative to the image shape with
    ``use_shape``, in pixels without; the other kind of limit is refused."""
    if not isinstance(use_shape, bool):
        raise TypeError(f"The `use_shape` is a flag (True or False), got {use_shape!r}.")
    if use_shape:
        if max_translate_abs is not None:
            raise ValueError(
                "The argument `max_translate_abs` cannot be used with image shapes; use "
                "`max_translate_rel` instead."
            )
        return _height_width(
            default_translate_rel if max_translate_rel is None else max_translate_rel
        )
    if max_translate_rel is not None:
        raise ValueError(
            "The argument `max_translate_rel` cannot be used without image shapes; use "
            "`max_translate_abs` instead."
        )
    return _height_width(default_translate_abs if max_translate_abs is None else max_translate_abs)


def get_translations(
    use_shape: bool,
    default_translate_abs: Any,
    default_translate_rel: Any,
    max_translate_abs: Any = None,
    max_translate_rel: Any = None,
) -> list[Augmentation]:
    """``[translate_x, translate_y]`` with magnitude ranges up to the policy's limits."""
    height, width = max_translations(
        use_shape,
        max_translate_abs,
        max_translate_rel,
        default_translate_abs,
        default_translate_rel,
    )
    x, y = (
        (a.translate_x, a.translate_y)
        if use_shape
        else (a.translate_x_no_shape, a.translate_y_no_shape)
    )
    return [x.augmentation((0, width), True), y.augmentation((0, height), True)]


def pretty_select(
    augmentations: list[Augmentation],
    aug_ids: DataNode,
    op_kwargs: dict[str, Any],
    auto_aug_name: str,
    ref_suite_name: str,
) -> DataNode:
    """:func:`select`, explaining how to give ``shape`` where a translation needs it."""
    try:
        return select(augmentations, aug_ids, **op_kwargs)
    except MissingArgException as exc:
        if exc.missing_args != ["shape"] or exc.augmentation.op not in (
            a.translate_x.op,
            a.translate_y.op,
        ):
            raise
        raise MissingArgException(
            f"The augmentation `{exc.augmentation.name}` needs the image shape: give "
            f"`shape` (the (H, W, C) of each sample, e.g. from `fn.peek_image_shape` on the "
            f"encoded images) to `{auto_aug_name}`, or use the translations in pixels "
            f"(`translate_x_no_shape` / `translate_y_no_shape`, see `{ref_suite_name}` and "
            "its `use_shape` argument).",
            augmentation=exc.augmentation,
            missing_args=exc.missing_args,
        ) from exc
