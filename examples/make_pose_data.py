#!/usr/bin/env python3
"""make_pose_data.py - a small pose-estimation data set a user would
recognise as theirs: video-like frames with keypoint annotations.

Each frame is a 96x96 8-bit grayscale PNG holding one Fashion-MNIST item,
scaled and rotated about its centre and placed at a random spot on a black
canvas. Its annotation (a WebDataset KEY.json member) has two parts at
known points of the garment: part 0 its centre, part 1 its top (the middle
of the highest row of the item's pixels, turned with it), as
[[x, y], [x, y]] in pixels with pixel centres at whole numbers; KEY.cls
keeps the garment's class. Frames, annotations and the split are a pure
function of --seed.

    examples/make_pose_data.py -o pose.tar --count 2000
    build/bin/mgpu-shard --val-fraction 0.1 -d pose -o pose/manifest.tsv pose.tar

Needs numpy and Pillow (Debian: python3-numpy python3-pil; or a venv with
`pip install numpy pillow`).
"""
import argparse
import gzip
import io
import json
import math
import os
import sys
import tarfile

import numpy as np
from PIL import Image

CANVAS = 96
ITEM = 28


def read_idx(path):
    """An IDX file (gzip or not) as a numpy array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        sys.exit("make_pose_data: '%s': not an unsigned-byte IDX file" % path)
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def frame(item, rng):
    """One frame: the item scaled by s and turned by a degrees (counter-
    clockwise on screen) about its centre, placed at t; the canvas and the
    two keypoints."""
    s = rng.uniform(1.2, 1.6)
    a = math.radians(rng.uniform(-35.0, 35.0))
    r = s * ITEM / math.sqrt(2.0) + 1.0  # the turned item's reach from its centre
    t = rng.uniform(r, CANVAS - r, size=2)
    cs, sn = math.cos(a), math.sin(a)
    c = ITEM / 2.0  # the item's centre, in PIL's continuous coordinates

    def forward(x, y):  # item (continuous) -> canvas (continuous)
        dx, dy = x - c, y - c
        return t[0] + s * (cs * dx + sn * dy), t[1] + s * (-sn * dx + cs * dy)

    # PIL's AFFINE takes the inverse map: canvas (x, y) -> item (a x + b y + c, ...)
    inv = (cs / s, -sn / s, c - (cs * t[0] - sn * t[1]) / s,
           sn / s, cs / s, c - (sn * t[0] + cs * t[1]) / s)
    img = Image.fromarray(item).transform((CANVAS, CANVAS), Image.AFFINE, inv,
                                          resample=Image.BILINEAR, fillcolor=0)
    rows = np.nonzero(item.max(axis=1) > 32)[0]
    top = rows[0] + 0.5 if len(rows) else c  # the centre of the top row's pixels
    kp = [forward(c, c), forward(c, top)]
    # our pixel centres are whole numbers: PIL's continuous coordinate - 0.5
    return img, [[round(x - 0.5, 3), round(y - 0.5, 3)] for x, y in kp]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", required=True, help="the tar to write ('-': stdout)")
    ap.add_argument("--count", type=int, default=2000, help="frames (default 2000)")
    ap.add_argument("--seed", type=int, default=42, help="seed (default 42)")
    ap.add_argument("--fashion-mnist", default="/usr/share/datasets/fashion-mnist",
                    help="directory of train-images-idx3-ubyte.gz and its labels")
    o = ap.parse_args()
    if o.count < 1:
        sys.exit("make_pose_data: --count must be at least 1")
    try:
        images = read_idx(os.path.join(o.fashion_mnist, "train-images-idx3-ubyte.gz"))
        labels = read_idx(os.path.join(o.fashion_mnist, "train-labels-idx1-ubyte.gz"))
    except OSError as e:
        sys.exit("make_pose_data: %s" % e)
    rng = np.random.default_rng(o.seed)
    pick = rng.choice(len(images), size=min(o.count, len(images)), replace=False)
    out = sys.stdout.buffer if o.output == "-" else open(o.output + ".tmp", "wb")
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for k, i in enumerate(pick):
            img, kp = frame(images[i], rng)
            png = io.BytesIO()
            img.save(png, format="PNG")
            key = "%06d" % k
            for ext, data in (("png", png.getvalue()), ("json", json.dumps(kp).encode()),
                              ("cls", b"%d" % labels[i])):
                m = tarfile.TarInfo("%s.%s" % (key, ext))
                m.size = len(data)
                m.mtime = 946684800
                tar.addfile(m, io.BytesIO(data))
    if out is not sys.stdout.buffer:
        out.close()
        os.replace(o.output + ".tmp", o.output)


if __name__ == "__main__":
    main()
