"""Reductions (fn.reductions.*): reduction_ops.py declares them and runs them on the CPU
(NumPy); reductions_gpu.py is their GPU backend (CuPy, one call per dense batch)."""
