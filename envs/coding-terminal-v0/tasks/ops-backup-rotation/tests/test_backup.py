import datetime
import os
import random
import re
import subprocess
import tarfile

import pytest

SCRIPT = "/app/backup/backup.sh"


def run(src, dest, when=None, **env_extra):
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
    if when:
        env["BACKUP_TIME"] = when
    env.update({k: str(v) for k, v in env_extra.items()})
    return subprocess.run(["/bin/bash", SCRIPT, str(src), str(dest)], capture_output=True, text=True,
                          timeout=60, env=env, cwd="/tmp")


def make_src(base, name="db"):
    src = base / name
    (src / "sub dir").mkdir(parents=True)
    (src / "a.txt").write_text("alpha\n")
    (src / "sub dir" / "b.txt").write_text("bravo\n")
    return src


def reference_keep(names, name, daily, weekly):
    pat = re.compile(r"^" + re.escape(name) + r"-(\d{8}T\d{6}Z)\.tar\.gz$")
    ts = sorted(m.group(1) for n in names if (m := pat.match(n)))
    by_day, by_week = {}, {}
    for t in ts:
        by_day[t[:8]] = t
        by_week[datetime.datetime.strptime(t[:8], "%Y%m%d").isocalendar()[:2]] = t
    keep = {by_day[k] for k in sorted(by_day, reverse=True)[:daily]}
    keep |= {by_week[k] for k in sorted(by_week, reverse=True)[:weekly]}
    return {n for n in names if (m := pat.match(n)) is None or m.group(1) in keep}


def populate(dest, stamps, name="db", extras=()):
    dest.mkdir(parents=True, exist_ok=True)
    names = [f"{name}-{s}.tar.gz" for s in stamps] + list(extras)
    for i, n in enumerate(names):
        p = dest / n
        p.write_bytes(b"old")
        # mtimes deliberately unrelated to the timestamps in the names
        os.utime(p, (1_600_000_000 + (i * 7919) % 100_000, 1_600_000_000 + (i * 7919) % 100_000))
    return names


def test_creates_archive(tmp_path):
    src = make_src(tmp_path / "srv")
    r = run(src, tmp_path / "out", "20240310T020000Z")
    assert r.returncode == 0, r.stderr
    arch = tmp_path / "out" / "db-20240310T020000Z.tar.gz"
    assert r.stdout.strip() == str(arch)
    with tarfile.open(arch) as tf:
        files = {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}
        assert all(m.name == "db" or m.name.startswith("db/") for m in tf.getmembers())
    assert files == {"db/a.txt": b"alpha\n", "db/sub dir/b.txt": b"bravo\n"}


def test_spaces_and_trailing_slash(tmp_path):
    src = make_src(tmp_path / "my data", "web root")
    dest = tmp_path / "backup target"
    populate(dest, ["20240301T020000Z", "20240302T020000Z"], name="web root")
    r = run(str(src) + "/", dest, "20240303T020000Z")
    assert r.returncode == 0, r.stderr
    arch = dest / "web root-20240303T020000Z.tar.gz"
    with tarfile.open(arch) as tf:
        assert sorted(m.name for m in tf.getmembers() if m.isfile()) == ["web root/a.txt", "web root/sub dir/b.txt"]
    assert sorted(os.listdir(dest)) == ["web root-20240301T020000Z.tar.gz", "web root-20240302T020000Z.tar.gz",
                                        "web root-20240303T020000Z.tar.gz"]


def test_fixed_gfs_example(tmp_path):
    src = make_src(tmp_path / "srv")
    dest = tmp_path / "out"
    stamps = ["20240101T020000Z", "20240108T020000Z", "20240115T020000Z", "20240122T020000Z",
              "20240129T020000Z", "20240201T010000Z", "20240201T020000Z", "20240205T020000Z",
              "20240206T020000Z", "20240207T020000Z", "20240207T230000Z", "20240208T020000Z",
              "20240209T020000Z", "20240210T020000Z"]
    populate(dest, stamps)
    r = run(src, dest, "20240211T020000Z", KEEP_DAILY=3, KEEP_WEEKLY=3)
    assert r.returncode == 0, r.stderr
    # days kept: 11, 10, 09 (Feb); weeks kept: 2024-W06 (newest 11th), W05 (Feb 1 02:00), W04 (Jan 22)
    assert sorted(os.listdir(dest)) == ["db-20240122T020000Z.tar.gz", "db-20240201T020000Z.tar.gz",
                                        "db-20240209T020000Z.tar.gz", "db-20240210T020000Z.tar.gz",
                                        "db-20240211T020000Z.tar.gz"]


def test_never_touches_other_files(tmp_path):
    src = make_src(tmp_path / "srv")
    dest = tmp_path / "out"
    extras = ["dbx-20230101T000000Z.tar.gz", "other-20230101T000000Z.tar.gz", "db-notes.txt", "README",
              "db-20230101T000000Z.tar.gz.sha256", "db-latest.tar.gz", "xdb-20230101T000000Z.tar.gz"]
    stamps = [f"202301{d:02d}T000000Z" for d in range(1, 29)]
    populate(dest, stamps, extras=extras)
    r = run(src, dest, "20230301T000000Z", KEEP_DAILY=1, KEEP_WEEKLY=1)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(dest)) == sorted(extras + ["db-20230301T000000Z.tar.gz"])


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_randomized_rotation(tmp_path, seed):
    rng = random.Random(seed)
    src = make_src(tmp_path / "srv")
    dest = tmp_path / "out"
    start = datetime.datetime(2023, 11, 20)
    stamps = set()
    for _ in range(rng.randint(20, 60)):
        t = start + datetime.timedelta(days=rng.randint(0, 80), seconds=rng.randint(0, 86399))
        stamps.add(t.strftime("%Y%m%dT%H%M%SZ"))
    extras = ["dbx-20240101T000000Z.tar.gz", "db-notes.txt"]
    names = populate(dest, sorted(stamps), extras=extras)
    daily, weekly = rng.randint(1, 9), rng.randint(0, 6)
    now = "20240301T030405Z"
    env = {}
    if daily != 7:
        env["KEEP_DAILY"] = daily
    if weekly != 4:
        env["KEEP_WEEKLY"] = weekly
    r = run(src, dest, now, **env)
    assert r.returncode == 0, r.stderr
    expected = reference_keep(names + [f"db-{now}.tar.gz"], "db", daily, weekly)
    assert sorted(os.listdir(dest)) == sorted(expected)


def test_tar_failure_is_atomic(tmp_path):
    src = make_src(tmp_path / "srv")
    secret = src / "secret.key"
    secret.write_text("x")
    secret.chmod(0)
    dest = tmp_path / "out"
    before = sorted(populate(dest, [f"202402{d:02d}T000000Z" for d in range(1, 20)]))
    try:
        r = run(src, dest, "20240301T000000Z", KEEP_DAILY=1, KEEP_WEEKLY=0)
    finally:
        secret.chmod(0o644)
    assert r.returncode != 0
    assert sorted(os.listdir(dest)) == before  # nothing new, nothing partial, nothing rotated


def test_default_timestamp_is_utc_now(tmp_path):
    src = make_src(tmp_path / "srv")
    r = run(src, tmp_path / "out")
    assert r.returncode == 0, r.stderr
    [name] = os.listdir(tmp_path / "out")
    m = re.fullmatch(r"db-(\d{8}T\d{6}Z)\.tar\.gz", name)
    assert m
    t = datetime.datetime.strptime(m.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    assert abs((datetime.datetime.now(datetime.timezone.utc) - t).total_seconds()) < 300
