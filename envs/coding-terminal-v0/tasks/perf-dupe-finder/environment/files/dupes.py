"""Duplicate detection for the nightly backup catalog.

The catalog exporter gives us one record per file: (path, size_in_bytes, sha1_hex).
Two files are duplicates when they have the same size and the same SHA-1
(checksums are hex strings; some exporters emit upper-case hex).
"""
import sys


def find_duplicate_groups(records):
    """Return the groups of duplicate files.

    records: iterable of (path: str, size: int, sha1: str) tuples.  The same
    path can be listed more than once (the exporter walks bind mounts twice);
    such repeats count as one file.

    Returns a list of groups; each group is a sorted list of >= 2 distinct
    paths whose files have equal size and equal checksum (case-insensitive).
    Groups are ordered by their first (smallest) path.
    """
    records = list(records)
    groups = []
    assigned = []
    for i, (path, size, digest) in enumerate(records):
        if path in assigned:
            continue
        group = [path]
        for other_path, other_size, other_digest in records[i + 1:]:
            if other_size == size and other_digest.lower() == digest.lower():
                if other_path not in group and other_path not in assigned:
                    group.append(other_path)
        if len(group) >= 2:
            for p in group:
                assigned.append(p)
            groups.append(sorted(group))
        else:
            assigned.append(path)
    groups.sort(key=lambda g: g[0])
    return groups


def main(argv):
    records = []
    with open(argv[1], encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if not line:
                continue
            path, size, digest = line.split("\t")
            records.append((path, int(size), digest))
    for group in find_duplicate_groups(records):
        print("\t".join(group))


if __name__ == "__main__":
    main(sys.argv)
