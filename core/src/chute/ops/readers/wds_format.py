"""Webdataset tar shards: member scanning and DALI's ``wds2idx`` index files.

A webdataset sample is a run of consecutive tar members sharing a basename
(the path up to the first dot of the file name); each member's extension (what
follows that dot) names a component. The index format (``v1.2``)::

    v1.2 <number of samples>
    <ext> <data offset> <size> <member name> [<ext> <offset> <size> <name> ...]

one line per sample (``v1.1`` lines have no member names). Offsets are those
of the members' data, multiples of the 512-byte tar block.

The scanner reads only the 512-byte headers (ustar, GNU long names, pax path and
size records). A header whose checksum is wrong ends the scan of that archive:
what came before stays readable and the broken spot becomes one bad sample,
which raises (or is reported under on_error="skip") naming the file and offset.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from chute.ops.readers import storage

__all__ = [
    "Component",
    "group_samples",
    "read_index",
    "scan_tar",
    "split_name",
    "write_index",
]

BLOCK = 512
INDEX_VERSION = "v1.2"


@dataclass(frozen=True)
class Component:
    """One tar member of a sample: its extension, data offset, size and full name."""

    ext: str
    offset: int
    size: int
    name: str


@dataclass(frozen=True)
class TarProblem:
    """Where scanning an archive had to stop, and why."""

    offset: int
    message: str


def split_name(path: str) -> tuple[str, str]:
    """(basename, extension) at the first dot of the file name: "a/b.seg.png" -> "a/b", "seg.png"."""
    dot = path.find(".", path.rfind("/") + 1)
    if dot < 0:
        return path, ""
    return path[:dot], path[dot + 1 :]


def _number(field: bytes) -> int:
    if field[:1] and field[0] & 0x80:  # GNU base-256 for sizes of 8 GiB and more
        return int.from_bytes(field[1:], "big")
    text = field.split(b"\0", 1)[0].strip()
    return int(text, 8) if text else 0


def _pax(data: bytes) -> dict[str, str]:
    out, pos = {}, 0
    while pos < len(data):
        space = data.find(b" ", pos)
        if space < 0:
            break
        length = int(data[pos:space])
        key, _, value = data[space + 1 : pos + length - 1].partition(b"=")
        out[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
        pos += length
    return out


def scan_tar(path: str) -> tuple[list[tuple[str, int, int]], TarProblem | None]:
    """Regular-file members of a tar archive as (name, data offset, size), in order.

    The second value says where and why the scan stopped early (a corrupt or
    truncated header), None when the archive is whole. A member whose data runs past
    the end of the file is listed all the same: reading it names the problem.
    """
    members: list[tuple[str, int, int]] = []
    long_name: str | None = None
    pax: dict[str, str] = {}
    with storage.open_binary(path) as f:
        end = storage.size(path)
        pos = 0
        while pos < end:
            f.seek(pos)
            header = f.read(BLOCK)
            if len(header) < BLOCK:
                return members, TarProblem(pos, f"truncated tar header ({len(header)} bytes)")
            if header.count(0) == BLOCK:
                break  # end-of-archive blocks
            try:
                checksum = _number(header[148:156])
                size = _number(header[124:136])
            except ValueError:
                return members, TarProblem(pos, "corrupt tar header (unreadable number field)")
            if checksum != sum(header[:148]) + 8 * 32 + sum(header[156:]):
                return members, TarProblem(pos, "corrupt tar header (checksum mismatch)")
            kind = header[156:157]
            data = pos + BLOCK
            if kind in (b"L", b"x", b"X"):  # GNU long name / pax: for the next member
                f.seek(data)
                payload = f.read(size)
                if kind == b"L":
                    long_name = payload.split(b"\0", 1)[0].decode("utf-8", "replace")
                else:
                    pax = _pax(payload)
            elif kind != b"g":  # pax global headers carry nothing for us
                name = header[:100].split(b"\0", 1)[0].decode("utf-8", "replace")
                if header[257:262] == b"ustar" and header[345:500].strip(b"\0"):
                    prefix = header[345:500].split(b"\0", 1)[0].decode("utf-8", "replace")
                    name = f"{prefix}/{name}"
                name = pax.get("path", long_name or name)
                if "size" in pax:
                    size = int(pax["size"])
                if kind in (b"0", b"\0", b"7"):
                    members.append((name, data, size))
                long_name, pax = None, {}
            pos = data + -(-size // BLOCK) * BLOCK
    return members, None


def group_samples(members: list[tuple[str, int, int]]) -> list[list[Component]]:
    """Consecutive members with the same basename, as samples (hidden files left out)."""
    samples: list[list[Component]] = []
    last = None
    for name, offset, size in members:
        base, ext = split_name(name)
        if not base or base.endswith("/"):
            continue
        if base != last:
            samples.append([])
            last = base
        samples[-1].append(Component(ext, offset, size, name))
    return samples


def write_index(path: str | os.PathLike, samples: list[list[Component]]) -> None:
    """Write a wds2idx index (v1.2) of the samples."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{INDEX_VERSION} {len(samples)}\n")
        for sample in samples:
            f.write(" ".join(f"{c.ext} {c.offset} {c.size} {c.name}" for c in sample) + "\n")


def read_index(path: str | os.PathLike) -> list[list[Component]]:
    """Read a wds2idx index (v1.1 or v1.2); ValueError naming the file and line if malformed."""
    path = os.fspath(path)

    def bad(line: int, what: str) -> ValueError:
        return ValueError(f"malformed webdataset index {path!r} line {line}: {what}")

    lines = storage.read_bytes(path).decode("utf-8", errors="replace").splitlines()
    head = lines[0].split() if lines else []
    if not head or head[0] not in ("v1.1", "v1.2"):
        raise bad(0, f"unsupported or missing version {head[:1]} (expected v1.1 or v1.2)")
    try:
        count = int(head[1])
    except (IndexError, ValueError):
        raise bad(0, "no sample count") from None
    if count <= 0:
        raise bad(0, "the sample count must be positive")
    if len(lines) - 1 < count:
        raise bad(len(lines), f"{count} samples announced, {len(lines) - 1} lines follow")
    width = 4 if head[0] == "v1.2" else 3
    samples = []
    for number in range(1, count + 1):
        fields = lines[number].split()
        if not fields or len(fields) % width:
            raise bad(number, f"expected groups of {width} fields (ext offset size[ name])")
        sample = []
        for k in range(0, len(fields), width):
            group = fields[k : k + width]
            try:
                offset, size = int(group[1]), int(group[2])
            except ValueError:
                raise bad(number, f"offset and size must be integers, got {group[1:3]}") from None
            if offset % BLOCK or offset < 0 or size < 0:
                raise bad(number, f"offset {offset} is not a multiple of the tar block (512)")
            name = group[3] if width == 4 else ""
            sample.append(Component(group[0], offset, size, name))
        samples.append(sample)
    return samples
