"""What is known about a value before anything runs: dtype, ndim, layout."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Spec:
    """Build-time description of an operator output; None means "known only at run time"."""

    dtype: np.dtype | None = None
    ndim: int | None = None
    layout: str | None = None

    def with_(self, **changes) -> Spec:
        return Spec(**{**self.__dict__, **changes})
