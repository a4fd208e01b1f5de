"""Write scikit-learn's 8x8 digits (1,797 real handwritten digits, shipped inside the
scikit-learn package) as a folder of class folders of PNG images: the layout
``nasmlcn search --dataset PATH`` reads.

    pip install 'nasmlcn[docs]'            # scikit-learn
    python docs/examples/digits_to_png.py digits/
    nasmlcn data inspect digits/

Each image is written as an 8-bit grey PNG named by its index, in the folder of
its digit: ``digits/3/0003.png``. The 17 grey levels of the original (0 to 16) are
spread over 0 to 255.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    import numpy as np
    from PIL import Image

    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise SystemExit("scikit-learn is not installed: pip install 'nasmlcn[docs]'") from None

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder to write (must not exist)")
    out = parser.parse_args().out
    out.mkdir(parents=True)  # an existing folder is refused: nothing is mixed into it
    digits = load_digits()
    pixels = np.rint(digits.images * (255 / 16)).astype(np.uint8)  # (1797, 8, 8)
    for index, (image, label) in enumerate(zip(pixels, digits.target, strict=True)):
        folder = out / str(label)
        folder.mkdir(exist_ok=True)
        Image.fromarray(image, mode="L").save(folder / f"{index:04d}.png")
    print(f"wrote {len(pixels)} images of {len(digits.target_names)} digits into {out}")


if __name__ == "__main__":
    main()
