"""Datasets of the ladder as one npz each (x_train, y_train, x_test, y_test as uint8).

- digits: scikit-learn's 8x8 digits (ships with the package), a fixed stratified split.
- cifar10: the official binary tarball (cifar-10-binary.tar.gz), parsed with numpy; no
  pickle anywhere (np.load runs with allow_pickle=False).

CLI: python -m workflow_scripts.ladder.data download --out-dir DIR --url URL --md5 MD5
     python -m workflow_scripts.ladder.data prepare --name digits|cifar10 --out X.npz \
        [--bin-dir DIR] [--settings-json '{"n_train": 300, "n_test": 540, "split_seed": 0}']
--url/--md5 are config ladder.dataset.url/md5; --settings-json is core/settings.py's
LadderData (absent keys take config/ladder.schema.yaml's defaults).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from workflow_scripts.core.contracts import DataError, atomic_path
from workflow_scripts.core.settings import LadderData
from workflow_scripts.ladder import CIFAR_TEST, CIFAR_TRAIN, DATASETS

DIGITS_TEST = 540  # digits' held-out split when n_test is null (config/ladder.schema.yaml)
CIFAR_RECORD = 1 + 3 * 32 * 32  # label byte + R, G, B planes of 32x32
ARRAYS = ("x_train", "y_train", "x_test", "y_test")


def parse_cifar_bin(path) -> tuple[np.ndarray, np.ndarray]:
    """(x [n, 3072] uint8 in CHW order, y [n] uint8) of one CIFAR-10 binary batch file."""
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size == 0 or raw.size % CIFAR_RECORD:
        raise DataError(f"{path}: {raw.size} bytes is not a whole number of "
                        f"{CIFAR_RECORD}-byte CIFAR-10 records")
    rec = raw.reshape(-1, CIFAR_RECORD)
    y = rec[:, 0].copy()
    if y.max() > 9:
        bad = int(np.argmax(y > 9))
        raise DataError(f"{path}: record {bad} has label {y[bad]}, expected 0..9")
    return rec[:, 1:].copy(), y


def load_cifar10(bin_dir) -> dict[str, np.ndarray]:
    bin_dir = Path(bin_dir)
    parts = [parse_cifar_bin(bin_dir / name) for name in CIFAR_TRAIN]
    x_test, y_test = parse_cifar_bin(bin_dir / CIFAR_TEST)
    return {"x_train": np.concatenate([p[0] for p in parts]),
            "y_train": np.concatenate([p[1] for p in parts]),
            "x_test": x_test, "y_test": y_test}


def load_digits(split_seed: int, n_test: int) -> dict[str, np.ndarray]:
    """A stratified split of the 1,797 digits: n_test test images, the rest train pool."""
    from sklearn.datasets import load_digits as sk_digits
    from sklearn.model_selection import train_test_split

    ds = sk_digits()
    x_tr, x_te, y_tr, y_te = train_test_split(
        ds.data.astype(np.uint8), ds.target.astype(np.uint8), test_size=n_test,
        random_state=split_seed, stratify=ds.target)
    return {"x_train": x_tr, "y_train": y_tr, "x_test": x_te, "y_test": y_te}


def prepare(name: str, out, settings: LadderData, *, bin_dir=None) -> dict[str, int]:
    """Write the dataset's npz atomically; n_train/n_test take the first n (None = all)."""
    n_train, n_test = settings.n_train, settings.n_test
    if name == "digits":
        arrays = load_digits(settings.split_seed, n_test or DIGITS_TEST)
    elif name == "cifar10":
        if bin_dir is None:
            raise ValueError("cifar10 needs bin_dir (the extracted cifar-10-batches-bin)")
        arrays = load_cifar10(bin_dir)
    else:
        raise ValueError(f"unknown dataset {name!r}; expected one of {DATASETS}")
    for split, n in (("train", n_train), ("test", n_test)):
        have = len(arrays[f"y_{split}"])
        if n is not None and n > have:
            raise ValueError(f"{name}: n_{split}={n} but the {split} split has {have}")
        arrays[f"x_{split}"] = arrays[f"x_{split}"][:n]
        arrays[f"y_{split}"] = arrays[f"y_{split}"][:n]
    with atomic_path(out) as tmp, open(tmp, "wb") as f:
        np.savez(f, **arrays)  # a file object: savez would append ".npz" to a name
    return {k: len(v) for k, v in arrays.items() if k.startswith("y_")}


def load(path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        missing = [a for a in ARRAYS if a not in z.files]
        if missing:
            raise DataError(f"{path}: missing array(s) {', '.join(missing)}")
        return {a: z[a] for a in ARRAYS}


def standardize(arrays) -> tuple[np.ndarray, np.ndarray]:
    """float32 (x_train, x_test), each feature scaled by the training mean and std (a
    constant feature, like digits' always-blank corners, is only centred)."""
    x_tr = arrays["x_train"].astype(np.float32)
    mean, std = x_tr.mean(0), x_tr.std(0)
    std[std < 1e-6] = 1.0
    return (x_tr - mean) / std, (arrays["x_test"].astype(np.float32) - mean) / std


def download(out_dir, *, url: str, md5: str) -> Path:
    """Fetch the CIFAR-10 binary tarball (checksummed) and extract it into out_dir."""
    from workflow_scripts.core.download import extract_tar, fetch

    out_dir = Path(out_dir)
    tarball = fetch(url, out_dir.parent / Path(url).name, md5=md5)
    return extract_tar(tarball, out_dir)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m workflow_scripts.ladder.data")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("download", help="fetch + extract the CIFAR-10 binary tarball")
    d.add_argument("--out-dir", required=True)
    d.add_argument("--url", required=True, help="config ladder.dataset.url")
    d.add_argument("--md5", required=True, help="config ladder.dataset.md5")
    q = sub.add_parser("prepare", help="write one dataset npz")
    q.add_argument("--name", required=True, choices=DATASETS)
    q.add_argument("--out", required=True)
    q.add_argument("--bin-dir", help="the extracted cifar-10-batches-bin (cifar10 only)")
    q.add_argument("--settings-json", default="{}",
                   help="core/settings.py LadderData as JSON; absent keys take "
                        "config/ladder.schema.yaml's defaults")
    a = p.parse_args(argv)
    if a.cmd == "download":
        print(download(a.out_dir, url=a.url, md5=a.md5))
    else:
        sizes = prepare(a.name, a.out, LadderData.from_json(a.settings_json),
                        bin_dir=a.bin_dir)
        print(f"{a.out}: {sizes}")


if __name__ == "__main__":
    main()
