"""The cache of decoded user datasets: ``<data dir>/own/<sha256[:16]>/``.

Each entry holds the decoded splits as ``.npy`` files (uint8 images ``(N, C, H, W)``,
int64 labels), memory-mapped when read (copy-on-write: processes reading one entry
share its pages), and ``meta.json``: the data's
:class:`~nasmlcn.data.DataIdentity`, its normalisation and the *fingerprints* it was
read under. A fingerprint is the hash of the source's path, every file's relative
path, size and modification time, and the resize: computed without opening an
image, it finds the entry again for an unchanged source (no decoding, no hashing);
the content hash finds it for the same data anywhere else (a worker on another
machine with the data at another path, or with only a copy of this cache).

Content decides which entry holds the arrays; the description stays each source's
own. Every fingerprint's record (``found_by``) keeps the identity its source was
read as (kind, name, source, test split, resize) and what reading it skipped, and
an entry found through a record is described by it: an ``.npz`` holding a folder's
images is still an ``.npz``. (Records of an older nasmlcn have no identity; the
entry's first one stands in.)

Entries are written whole or not at all (a temporary folder renamed into place);
two processes writing the same data at once both succeed, one entry stays.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn._io import umask
from nasmlcn.data._identity import DataIdentity
from nasmlcn.data._normalize import Normalization
from nasmlcn.errors import DatasetError

if TYPE_CHECKING:
    import numpy as np

    from nasmlcn.data._own import OwnArrays

CACHE_FOLDER = "own"
META = "meta.json"
ARRAYS = ("train_images", "train_labels", "test_images", "test_labels")
CACHE_SCHEMA_VERSION = 1
READER_VERSION = "1"
"""Part of every fingerprint: a reader that decodes otherwise starts new entries."""


@dataclass(frozen=True)
class CacheEntry:
    """One cached dataset: its folder and what its ``meta.json`` says."""

    folder: Path
    identity: DataIdentity
    normalization: Normalization | None
    meta: dict[str, Any]

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The four arrays (:data:`ARRAYS`), memory-mapped copy-on-write."""
        import numpy as np

        try:
            return tuple(np.load(self.folder / f"{name}.npy", mmap_mode="c") for name in ARRAYS)
        except (OSError, ValueError) as err:
            raise DatasetError(
                f"the cached data in {str(self.folder)!r} is damaged ({err}); delete that "
                "folder and it is read again from its source"
            ) from None


def cache_root(data_dir: Path) -> Path:
    return data_dir / CACHE_FOLDER


def fingerprint(source: Path, image_size: str | None) -> str:
    """The hash of what ``source`` holds on disk (paths, sizes, modification times)
    and the resize asked for: equal while nothing in it changed."""
    digest = hashlib.sha256(f"{READER_VERSION}\0{source}\0{image_size}\0".encode())
    if source.is_file():
        st = source.stat()
        digest.update(f"{st.st_size}\0{st.st_mtime_ns}\n".encode())
        return digest.hexdigest()
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            st = os.stat(full)
            rel = os.path.relpath(full, source)
            digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def entries(data_dir: Path) -> list[CacheEntry]:
    """Every readable entry of the cache (an unreadable ``meta.json`` is passed over)."""
    root = cache_root(data_dir)
    found: list[CacheEntry] = []
    if not root.is_dir():
        return found
    for folder in sorted(root.iterdir()):
        try:
            meta = json.loads((folder / META).read_text())
            identity = DataIdentity.from_dict(meta["identity"])
            norm = meta.get("normalization")
            normalization = Normalization.from_dict(norm) if norm is not None else None
        except (OSError, ValueError, KeyError, TypeError, DatasetError):
            continue
        found.append(CacheEntry(folder, identity, normalization, meta))
    return found


def find(
    data_dir: Path,
    *,
    key: str | None = None,
    sha256: str | None = None,
    source: str | None = None,
    image_size: str | None = None,
) -> CacheEntry | None:
    """The entry read under fingerprint ``key``, or of content ``sha256``, or
    (newest first) read from ``source`` with ``image_size``."""
    candidates = entries(data_dir)
    for entry in candidates:
        for record in entry.meta.get("found_by", []):
            if key is not None and record.get("fingerprint") == key:
                return as_read(entry, record)
        if sha256 is not None and entry.identity.sha256 == sha256:
            return entry
    if source is None:
        return None
    same = [e for e in read_from(candidates, source) if e.identity.image_size == image_size]
    return newest(same)


def read_from(candidates: list[CacheEntry], source: str) -> list[CacheEntry]:
    """The entries of ``candidates`` read from ``source``, each as that read described it."""
    return [
        as_read(entry, record)
        for entry in candidates
        for record in entry.meta.get("found_by", [])
        if record.get("source") == source
    ]


def newest(candidates: list[CacheEntry]) -> CacheEntry | None:
    """The entry of ``candidates`` written last, the last of equals (None: there is none)."""
    latest = reversed(candidates)  # max keeps the first of equals: a later record of an entry
    return max(latest, key=lambda e: float(e.meta.get("written", 0)), default=None)


def as_read(entry: CacheEntry, record: dict[str, Any]) -> CacheEntry:
    """``entry`` described as the read that left ``record`` (one of its ``found_by``)
    described its data: its own identity, stray files and grey images made colour."""
    try:
        identity = DataIdentity.from_dict(record["identity"])
    except (KeyError, TypeError, DatasetError):  # an older nasmlcn's record: no identity
        return entry
    if identity.sha256 != entry.identity.sha256:
        return entry
    own: dict[str, Any] = {k: record[k] for k in ("skipped", "made_colour") if k in record}
    return replace(entry, identity=identity, meta={**entry.meta, **own})


def write(data_dir: Path, data: OwnArrays, key: str) -> CacheEntry:
    """Stores ``data`` (read under fingerprint ``key``); an entry of the same
    content gets the fingerprint added instead."""
    import numpy as np

    identity = data.identity
    assert identity.sha256 is not None
    root = cache_root(data_dir)
    root.mkdir(parents=True, exist_ok=True)
    folder = root / identity.sha256[:16]
    found_by = {
        "source": identity.source,
        "fingerprint": key,
        "identity": identity.to_dict(),
        "skipped": data.skipped,
        "made_colour": data.made_colour,
    }
    if (folder / META).is_file():
        return _add_fingerprint(folder, found_by)
    tmp = Path(tempfile.mkdtemp(prefix=".writing-", dir=root))
    try:
        for name in ARRAYS:
            np.save(tmp / f"{name}.npy", getattr(data, name))
        meta = {
            "schema_version": CACHE_SCHEMA_VERSION,
            "identity": identity.to_dict(),
            "normalization": None if data.normalization is None else data.normalization.to_dict(),
            "found_by": [found_by],
            "skipped": data.skipped,
            "made_colour": data.made_colour,
            "written": time.time(),
        }
        (tmp / META).write_text(json.dumps(meta, indent=1))
        os.chmod(tmp, 0o777 & ~umask())  # mkdtemp's 0700: others sharing the cache read it too
        try:
            os.rename(tmp, folder)
        except OSError:  # another process wrote it meanwhile
            return _add_fingerprint(folder, found_by)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return CacheEntry(folder, identity, data.normalization, meta)


def _add_fingerprint(folder: Path, found_by: dict[str, Any]) -> CacheEntry:
    meta = json.loads((folder / META).read_text())
    if found_by not in meta.get("found_by", []):  # a record of the same fingerprint is replaced
        others = [
            r for r in meta.get("found_by", []) if r.get("fingerprint") != found_by["fingerprint"]
        ]
        meta["found_by"] = [*others, found_by]
        tmp = folder / f".{META}.{os.getpid()}"
        tmp.write_text(json.dumps(meta, indent=1))
        os.replace(tmp, folder / META)
    norm = meta.get("normalization")
    entry = CacheEntry(
        folder,
        DataIdentity.from_dict(meta["identity"]),
        Normalization.from_dict(norm) if norm is not None else None,
        meta,
    )
    return as_read(entry, found_by)
