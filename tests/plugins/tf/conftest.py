"""Two logical CPUs for MirroredStrategy; TensorFlow accepts them only before its runtime starts."""

from __future__ import annotations

try:
    import tensorflow as tf
except ImportError:
    tf = None

if tf is not None:
    cpus = tf.config.list_physical_devices("CPU")
    try:
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2
        )
    except RuntimeError:
        pass  # the runtime already started: the strategy test skips itself
