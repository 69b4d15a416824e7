"""Reference values for datasets/resized_crop.* from torchvision itself.

Crop boxes: torchvision's RandomResizedCrop.get_params runs unchanged, with
torch.empty(1).uniform_(a, b) and torch.randint(lo, hi) answered from a fixed
list of uniform draws u in [0, 1) (a + u (b - a) in float64; lo + floor(u (hi
- lo))), so the C++ sampler fed the same draws must give the same boxes.
Resizes: seeded RGB arrays encoded as JPEG by PIL, decoded by PIL, then
torchvision.transforms.functional.resized_crop and resize + center_crop on the
uint8 tensor (bilinear, antialias=False).

Run: /work/venv-torch/bin/python tests/datasets/reference/resized_crop.py
(writes resized_crop.json next to this file)."""
import io
import json
import math
import pathlib

import numpy as np
import torch
import torchvision
from PIL import Image
from torchvision.transforms import InterpolationMode, RandomResizedCrop
from torchvision.transforms import functional as F


class Draws:
    def __init__(self, values):
        self.values, self.used = list(values), 0

    def next(self):
        u = self.values[self.used]
        self.used += 1
        return u


def boxes():
    rng = np.random.default_rng(15)
    cases = []
    shapes = [(224, 224), (480, 640), (640, 480), (37, 50), (1, 1), (5, 300), (300, 5), (2, 3)]
    ranges = [((0.08, 1.0), (3 / 4, 4 / 3)), ((0.5, 1.0), (1.0, 1.0)), ((0.9, 1.0), (0.2, 5.0)),
              ((1.0, 1.0), (3 / 4, 4 / 3))]
    real_empty, real_randint = torch.empty, torch.randint
    for h, w in shapes:
        for scale, ratio in ranges:
            for trial in range(6):
                values = rng.random(40).tolist()
                if trial == 5:
                    values = [0.999999] * 40  # the largest area every attempt: mostly the fallback
                draws = Draws(values)

                class Fake:
                    def uniform_(self, a, b):
                        return torch.tensor([float(a) + draws.next() * (float(b) - float(a))], dtype=torch.float64)

                def randint(lo, hi, size):
                    return torch.tensor([lo + math.floor(draws.next() * (hi - lo))])

                torch.empty, torch.randint = (lambda *a, **k: Fake()), randint
                try:
                    top, left, ch, cw = RandomResizedCrop.get_params(torch.zeros(1, h, w), list(scale), list(ratio))
                finally:
                    torch.empty, torch.randint = real_empty, real_randint
                cases.append({"h": h, "w": w, "scale": list(scale), "ratio": list(ratio), "draws": values,
                              "used": draws.used, "box": [int(top), int(left), int(ch), int(cw)]})
    return cases


def resizes():
    rng = np.random.default_rng(3)
    out = []
    for h, w, box, size, resize, crop in [(37, 50, (3, 5, 30, 41), (11, 13), 16, (12, 14)),
                                          (64, 48, (10, 2, 20, 40), (32, 24), 40, (32, 32)),
                                          (40, 40, (0, 0, 40, 40), (17, 17), 20, (20, 19))]:
        # Smooth content (a blurred random field) so JPEG keeps it close.
        base = rng.integers(0, 256, size=(h // 4 + 2, w // 4 + 2, 3)).astype(np.uint8)
        img = np.asarray(Image.fromarray(base).resize((w, h), Image.BILINEAR))
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="JPEG", quality=90)
        jpeg = buf.getvalue()
        decoded = np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"))
        t = torch.from_numpy(decoded.copy()).permute(2, 0, 1)
        rc = F.resized_crop(t, *box, list(size), InterpolationMode.BILINEAR, antialias=False)
        rs = F.center_crop(F.resize(t, resize, InterpolationMode.BILINEAR, antialias=False), list(crop))
        out.append({"h": h, "w": w, "jpeg": list(jpeg), "decoded": decoded.reshape(-1).tolist(),
                    "box": list(box), "size": list(size),
                    "resized_crop": rc.permute(1, 2, 0).reshape(-1).tolist(),
                    "resize": resize, "crop": list(crop),
                    "resize_center_crop": rs.permute(1, 2, 0).reshape(-1).tolist()})
    return out


if __name__ == "__main__":
    doc = {"generator": "tests/datasets/reference/resized_crop.py",
           "torch": torch.__version__, "torchvision": torchvision.__version__,
           "boxes": boxes(), "resizes": resizes()}
    path = pathlib.Path(__file__).with_name("resized_crop.json")
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"wrote {path}: {len(doc['boxes'])} boxes, {len(doc['resizes'])} resizes")
