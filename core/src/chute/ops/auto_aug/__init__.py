"""Operators of the automatic augmentation policies (``chute.auto_aug``): fused per-sample
kernels that replace chains of generic operators. Internal: they have no ``fn`` names."""
