import subprocess

GIT = "/usr/bin/git"
SECRETS = ["sk_live_Zt81pQm4WcR0xv7LbN2sKe93", "sk_live_9bV3nHs0Pq6TyUe1Wk5dRa7M",
           "pg-prod-Qe4!mv82Lx", "whsec_Lr5Ny2Ud8Ko1Fa6Ji3Hb"]
LOCAL = ("STRIPE_KEY=sk_live_9bV3nHs0Pq6TyUe1Wk5dRa7M\nDB_PASSWORD=pg-prod-Qe4!mv82Lx\n"
         "WEBHOOK_SECRET=whsec_Lr5Ny2Ud8Ko1Fa6Ji3Hb\n")
L = ("Lena Brandt", "lena@paydesk.example")
T = ("Tomasz Wieczorek", "tomasz@paydesk.example")
# subject -> (tree, author, author date, parent subjects)
EXPECTED = {
    "Initial skeleton": ("b28871f86264a38901d7a9bccb5a0775eedf342b", L, "1708003700 +0100", ()),
    "Add config loader": ("800b9b4a43ce8ce7ed16584d632aeab65af9f5f4", L, "1708007400 +0100", ("Initial skeleton",)),
    "Add payment provider integration": ("051a2e260c8d99368a29d28aae360c055cb7495c", T, "1708011100 +0100",
                                         ("Add config loader",)),
    "Add deploy notes": ("f078534638bc3ccb89ae8373ead94cd7559f0688", T, "1708014800 +0100",
                         ("Add payment provider integration",)),
    "Add health endpoint": ("0173cec4ab4e17c8eaabb6d2d58b5e72726c6983", L, "1708022200 +0100", ("Add deploy notes",)),
    "Fix rounding of charge amounts": ("587aed726a80a1aaa384e61423695fcd7f7668c4", L, "1708025900 +0100",
                                       ("Add health endpoint",)),
    "Release 1.0": ("6e2204122b34a32a0d16aa0abde63f216dbd04f8", L, "1708029600 +0100",
                    ("Fix rounding of charge amounts",)),
    "Add webhook signature verification": ("3430e261eb93f1ae4d6598d533da3f0b80e57c69", T, "1708033300 +0100",
                                           ("Add health endpoint",)),
    "Merge branch 'main' into develop": ("c42598c7f9de12f2d41602ffb04a6d8350f76de5", T, "1708037000 +0100",
                                         ("Add webhook signature verification", "Release 1.0")),
    "Retry webhooks on 5xx and 429": ("729960325889829192a0a912c3b776df825ca7dd", T, "1708040700 +0100",
                                      ("Merge branch 'main' into develop",)),
}
MAIN_SUBJECTS = {"Initial skeleton", "Add config loader", "Add payment provider integration", "Add deploy notes",
                 "Add health endpoint", "Fix rounding of charge amounts", "Release 1.0"}


def git(*args, check=True):
    return subprocess.run([GIT, "-C", "/app", *args], capture_output=True, text=True, check=check).stdout


def graph(ref):
    out = git("log", "--format=%H%x00%T%x00%an%x00%ae%x00%ad%x00%P%x00%s", "--date=raw", ref)
    rows = [line.split("\x00") for line in out.splitlines()]
    subj = {r[0]: r[6] for r in rows}
    result = {}
    for h, tree, an, ae, ad, parents, s in rows:
        assert s not in result, f"duplicate commit subject {s!r}"
        result[s] = (tree, (an, ae), ad, tuple(subj[p] for p in parents.split()))
    return result


def test_main_history_rewritten_exactly():
    g = graph("refs/heads/main")
    assert set(g) == MAIN_SUBJECTS
    for s, v in g.items():
        assert v == EXPECTED[s], s


def test_develop_history_rewritten_exactly():
    g = graph("refs/heads/develop")
    assert set(g) == set(EXPECTED)
    for s, v in g.items():
        assert v == EXPECTED[s], s
    for c in git("rev-list", "--all").split():
        assert "config/secrets.env" not in git("ls-tree", "-r", "--name-only", c).split("\n")


def test_tag_and_refs():
    refs = set(git("for-each-ref", "--format=%(refname)").split())
    assert refs == {"refs/heads/main", "refs/heads/develop", "refs/tags/v1.0"}
    assert git("cat-file", "-t", "refs/tags/v1.0").strip() == "tag"
    assert "paydesk 1.0" in git("cat-file", "-p", "refs/tags/v1.0")
    assert git("rev-parse", "v1.0^{commit}") == git("rev-parse", "main")
    assert git("log", "-1", "--format=%s", "v1.0^{commit}").strip() == "Release 1.0"


def test_no_object_contains_secrets():
    blob = subprocess.run([GIT, "-C", "/app", "cat-file", "--batch-all-objects", "--batch"],
                          capture_output=True, check=True).stdout
    assert b"Add health endpoint" in blob  # sanity: the dump really contains the objects
    for s in SECRETS:
        assert s.encode() not in blob, s
    # nothing lying around in .git in plain text either (backups, rewrite dirs, stashes, logs)
    r = subprocess.run(["/usr/bin/grep", "-r", "-l", "-a", "-F", "-e", SECRETS[0], "-e", SECRETS[1],
                        "-e", SECRETS[3], "/app/.git"], capture_output=True, text=True)
    assert r.stdout.strip() == "", r.stdout


def test_repository_consistent():
    r = subprocess.run([GIT, "-C", "/app", "fsck", "--full", "--no-dangling"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert git("rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert git("stash", "list").strip() == ""


def test_local_secret_file_kept_and_ignored():
    with open("/app/config/secrets.env") as f:
        assert f.read() == LOCAL
    assert subprocess.run([GIT, "-C", "/app", "check-ignore", "-q", "config/secrets.env"]).returncode == 0
    with open("/app/.git/info/exclude") as f:
        assert "secrets.env" in f.read()
    assert git("ls-files", "config/secrets.env").strip() == ""


def test_worktree_matches_main():
    assert git("status", "--porcelain").strip() == ""
    for name in ("app.py", "payments.py", "VERSION", "config.py", "docs/deploy.md"):
        with open(f"/app/{name}") as f:
            assert f.read() == git("show", f"main:{name}")
