import json
import os


def fingerprint(commands, source_contents, dep_fingerprints):
    """Fingerprint of one target: its commands, its sources' bytes and its target deps' fingerprints.

    Returned as a lowercase hex string; persisted in the state file, so it must be stable
    across processes and machines. Different inputs must give different fingerprints (e.g.
    commands ["ab"] vs ["a", "b"]), so encode the inputs unambiguously.
    """
    key = (tuple(commands), tuple(source_contents), tuple(dep_fingerprints))
    return format(hash(key) & 0xFFFFFFFFFFFFFFFF, "016x")


def load_state(path):
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def save_state(path, state):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(state, fh, sort_keys=True, indent=1)
    os.replace(tmp, path)
