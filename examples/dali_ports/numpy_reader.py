"""DALI's "Numpy Reader" tutorial, ported: .npy files read whole, by a file list and by ROI.

Only the imports differ from the DALI program; a preamble writes the .npy files
(DALI's tutorial reads arrays from DALI_extra).
"""

import os
import tempfile

import numpy as np

import chute.fn as fn
from chute import pipeline_def

# preamble: four 2-D arrays, and one in Fortran order
data_dir = tempfile.mkdtemp()
for i in range(4):
    np.save(
        os.path.join(data_dir, f"{i}.npy"),
        np.arange(i * 100, i * 100 + 60, dtype=np.float32).reshape(6, 10),
    )
np.save(
    os.path.join(data_dir, "fortran.npy"),
    np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4)),
)
batch_size = 2


@pipeline_def(batch_size=batch_size, num_threads=1, device_id=0)
def numpy_reader_pipe(device):
    data = fn.readers.numpy(device=device, file_root=data_dir, file_filter="[0-9].npy")
    return data


pipe = numpy_reader_pipe(device="cpu")
pipe.build()
(data,) = pipe.run()
print("whole arrays:", data.shape(), data.dtype)
print("first row of sample 1:", data.at(1)[0, :3].tolist())

files = ["2.npy", "3.npy"]


@pipeline_def(batch_size=batch_size, num_threads=1, device_id=0)
def numpy_reader_files_pipe(device):
    return fn.readers.numpy(device=device, file_root=data_dir, files=files)


(data,) = numpy_reader_files_pipe(device="cpu").run()
print("by files:", [float(data.at(i)[0, 0]) for i in range(len(data))])


@pipeline_def(batch_size=batch_size, num_threads=1, device_id=0)
def numpy_reader_roi_pipe(device):
    data = fn.readers.numpy(
        device=device, file_root=data_dir, file_filter="[0-9].npy", roi_start=(1, 2), roi_end=(3, 5)
    )
    return data


(data,) = numpy_reader_roi_pipe(device="cpu").run()
print("roi:", data.shape(), data.at(0).tolist())


@pipeline_def(batch_size=batch_size, num_threads=1, device_id=0)
def numpy_reader_rel_roi_pipe(device):
    return fn.readers.numpy(
        device=device,
        file_root=data_dir,
        file_filter="[0-9].npy",
        rel_roi_start=(0.5, 0.5),
        rel_roi_end=(1.0, 1.0),
    )


(data,) = numpy_reader_rel_roi_pipe(device="cpu").run()
print("relative roi:", data.shape())


@pipeline_def(batch_size=1, num_threads=1, device_id=0)
def fortran_pipe():
    return fn.readers.numpy(file_root=data_dir, files=["fortran.npy"])


(data,) = fortran_pipe().run()
print("fortran order:", data.at(0).tolist())
