"""Noise operators (fn.noise.*): noise_ops.py declares gaussian, salt_and_pepper and shot
and runs them on the CPU; every draw comes from the sample's counter-based stream."""
