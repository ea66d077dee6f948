"""FileIO: the few file operations the catalog and commit path need, for any Hadoop scheme.

Local paths (`file:` URIs or bare paths) are served by the Python standard library, because
the atomic "create, fail if it exists" step is best done with `os.link` there (POSIX rename
overwrites silently). Every other scheme (hdfs://, s3a://, ...) goes through the Hadoop
FileSystem API in the Spark JVM, via the jvm shim, so whatever filesystems the user's Spark
has configured work unchanged.
"""
from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlparse

from pyice_sql.core.faults import fault_point


@dataclass(frozen=True)
class FileInfo:
    path: str
    length: int
    modified_ms: int


class FileIO(Protocol):
    def read(self, path: str) -> bytes: ...
    def write_new(self, path: str, data: bytes) -> None: ...
    def publish(self, data: bytes, final_path: str) -> bool: ...
    def exists(self, path: str) -> bool: ...
    def delete(self, path: str) -> None: ...
    def length(self, path: str) -> int: ...
    def list(self, directory: str, recursive: bool = True) -> list[FileInfo]: ...
    def list_dirs(self, directory: str) -> list[str]: ...
    def is_dir(self, path: str) -> bool: ...
    def mkdirs(self, path: str) -> None: ...
    def delete_tree(self, path: str) -> None: ...
    def move(self, src: str, dst: str) -> None: ...


def is_local(path: str) -> bool:
    scheme = urlparse(path).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")


def local_path(path: str) -> str:
    """`file:/a`, `file:///a` or `/a` → `/a`. `%` is a plain character, as in Hadoop's Path (Iceberg's
    partition folders are URL-encoded text: `s=a%2Fb` is that folder name on disk)."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    return path


def to_uri(path: str) -> str:
    """The canonical form written into metadata: `file:///abs/path` for local files."""
    if is_local(path):
        return "file://" + os.path.abspath(local_path(path))
    return path.rstrip("/")


class LocalFileIO:
    """FileIO on the local filesystem; `publish` is atomic and never overwrites."""

    def read(self, path: str) -> bytes:
        with open(local_path(path), "rb") as f:
            return f.read()

    def write_new(self, path: str, data: bytes) -> None:
        p = local_path(path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "xb") as f:
            f.write(data)

    def publish(self, data: bytes, final_path: str) -> bool:
        """Write `data` completely under a temporary name, then link it to `final_path`.

        Returns False when `final_path` already exists (another writer won); the final name
        never refers to a partially written file.
        """
        final = local_path(final_path)
        os.makedirs(os.path.dirname(final), exist_ok=True)
        tmp = os.path.join(os.path.dirname(final), f".{uuid.uuid4()}.tmp")
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        fault_point("metadata-written")
        try:
            os.link(tmp, final)
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)

    def exists(self, path: str) -> bool:
        return os.path.exists(local_path(path))

    def delete(self, path: str) -> None:
        try:
            os.unlink(local_path(path))
        except FileNotFoundError:
            pass

    def length(self, path: str) -> int:
        return os.path.getsize(local_path(path))

    def list(self, directory: str, recursive: bool = True) -> list[FileInfo]:
        root = local_path(directory)
        out: list[FileInfo] = []
        if not os.path.isdir(root):
            return out
        for dirpath, dirnames, filenames in os.walk(root):
            for name in filenames:
                p = os.path.join(dirpath, name)
                st = os.stat(p)
                out.append(FileInfo("file://" + p, st.st_size, int(st.st_mtime * 1000)))
            if not recursive:
                break
        return out

    def list_dirs(self, directory: str) -> list[str]:
        root = local_path(directory)
        if not os.path.isdir(root):
            return []
        return sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)) and not d.startswith("."))

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(local_path(path))

    def mkdirs(self, path: str) -> None:
        os.makedirs(local_path(path), exist_ok=True)

    def delete_tree(self, path: str) -> None:
        shutil.rmtree(local_path(path), ignore_errors=True)

    def move(self, src: str, dst: str) -> None:
        """Rename a file, making the target's folders; never replaces an existing file."""
        target = local_path(dst)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.link(local_path(src), target)
        os.unlink(local_path(src))


class HadoopFileIO:
    """FileIO through the Hadoop FileSystem API of a running Spark JVM (jvm shim)."""

    def __init__(self, shim) -> None:
        self._shim = shim

    def read(self, path: str) -> bytes:
        return self._shim.read_all(path)

    def write_new(self, path: str, data: bytes) -> None:
        if not self._shim.write_new(path, data):
            raise FileExistsError(path)

    def publish(self, data: bytes, final_path: str) -> bool:
        tmp = final_path.rsplit("/", 1)[0] + f"/.{uuid.uuid4()}.tmp"
        self.write_new(tmp, data)
        fault_point("metadata-written")
        try:
            return self._shim.rename_no_overwrite(tmp, final_path)
        finally:
            self._shim.delete(tmp)

    def exists(self, path: str) -> bool:
        return self._shim.exists(path)

    def delete(self, path: str) -> None:
        self._shim.delete(path)

    def length(self, path: str) -> int:
        return self._shim.file_length(path)

    def list(self, directory: str, recursive: bool = True) -> list[FileInfo]:
        return [FileInfo(p, n, m) for p, n, m, is_dir in self._shim.list(directory, recursive) if not is_dir]

    def list_dirs(self, directory: str) -> list[str]:
        return sorted(p.rstrip("/").rsplit("/", 1)[-1] for p, _, _, is_dir in self._shim.list(directory, False)
                      if is_dir)

    def is_dir(self, path: str) -> bool:
        return self._shim.is_dir(path)

    def mkdirs(self, path: str) -> None:
        self._shim.mkdirs(path)

    def delete_tree(self, path: str) -> None:
        self._shim.delete(path, recursive=True)

    def move(self, src: str, dst: str) -> None:
        self._shim.mkdirs(dst.rsplit("/", 1)[0])
        if not self._shim.rename_no_overwrite(src, dst):
            raise FileExistsError(dst)


def file_io_for(location: str, shim=None) -> FileIO:
    if is_local(location):
        return LocalFileIO()
    if shim is None:
        raise ValueError(f"location {location} needs the Hadoop FileSystem (a Spark session with the jvm shim)")
    return HadoopFileIO(shim)
