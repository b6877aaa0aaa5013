"""DALI's "TensorFlow TFRecord" data loading example, ported: readers.tfrecord with features.

Only the imports differ from the DALI program. A preamble writes an ImageNet-style
TFRecord file and its index (DALI's tutorial takes both from DALI_extra and makes the
index with the tfrecord2idx script; ``chute tfrecord2idx`` is chute's).
"""

import os
import sys
import tempfile

import chute.fn as fn
import chute.tfrecord as tfrec
import chute.types as types
from chute import pipeline_def
from chute.tools.sample_data import make_imagenet_like

# preamble: the records (image/encoded, image/class/label, image/class/text, one box each)
image_dir = make_imagenet_like(tempfile.mkdtemp(), n=int(sys.argv[1]) if len(sys.argv) > 1 else 12)
tfrecord = os.path.join(tempfile.mkdtemp(), "train.tfrecord")
tfrecord_idx = tfrecord + ".idx"
records = []
for label, name in enumerate(sorted(d for d in os.listdir(image_dir) if not d.startswith("."))):
    for jpeg in sorted(os.listdir(os.path.join(image_dir, name))):
        with open(os.path.join(image_dir, name, jpeg), "rb") as f:
            encoded = f.read()
        records.append(
            tfrec.encode_example(
                {
                    "image/encoded": encoded,
                    "image/class/label": [label],
                    "image/class/text": name.encode(),
                    "image/object/bbox/xmin": [0.1],
                    "image/object/bbox/ymin": [0.2],
                    "image/object/bbox/xmax": [0.8],
                    "image/object/bbox/ymax": [0.9],
                }
            )
        )
tfrec.write_index(tfrecord_idx, tfrec.write_records(tfrecord, records))

batch_size = 4


@pipeline_def(batch_size=batch_size, num_threads=2, device_id=0)
def tfrecord_pipeline():
    inputs = fn.readers.tfrecord(
        path=tfrecord,
        index_path=tfrecord_idx,
        features={
            "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
            "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
            "image/class/text": tfrec.FixedLenFeature([], tfrec.string, ""),
            "image/object/bbox/xmin": tfrec.VarLenFeature(tfrec.float32, 0.0),
            "image/object/bbox/ymin": tfrec.VarLenFeature(tfrec.float32, 0.0),
            "image/object/bbox/xmax": tfrec.VarLenFeature(tfrec.float32, 0.0),
            "image/object/bbox/ymax": tfrec.VarLenFeature(tfrec.float32, 0.0),
        },
    )
    jpegs = inputs["image/encoded"]
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB)
    resized = fn.resize(images, device="gpu", resize_shorter=256.0)
    output = fn.crop_mirror_normalize(
        resized,
        dtype=types.FLOAT,
        crop=(224, 224),
        mean=[0.0, 0.0, 0.0],
        std=[1.0, 1.0, 1.0],
    )
    return output, inputs["image/class/text"], inputs["image/object/bbox/xmin"]


pipe = tfrecord_pipeline()
pipe.build()
pipe_out = pipe.run()
images = pipe_out[0].as_cpu()
print("images:", images.shape()[0], images.layout(), images.dtype)
texts = pipe_out[1]
print("class text:", [bytes(texts.at(i)).decode() for i in range(len(texts))])
print("xmin:", [round(float(pipe_out[2].at(i)[0]), 2) for i in range(len(pipe_out[2]))])
