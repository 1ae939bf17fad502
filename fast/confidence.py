"""Confidence boxes on the compiled kernels.

The functions of :mod:`reference.confidence`, with
:data:`fast.kernels.COMPILED_KERNELS` bound to its kernel functions (the
Chernoff intervals of the ``"kl"`` boxes run in :mod:`fast._kl`); the rest is
re-exported unchanged.
"""

from reference import confidence
from reference.confidence import BOX_KINDS, ConfidenceBoxes

from .kernels import COMPILED_KERNELS

__all__ = [
    "BOX_KINDS",
    "ConfidenceBoxes",
    "confidence_boxes",
    "kl_interval",
]

confidence_boxes = COMPILED_KERNELS.bind(confidence.confidence_boxes, module=__name__)
kl_interval = COMPILED_KERNELS.bind(confidence.kl_interval, module=__name__)
