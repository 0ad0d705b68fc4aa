import copy
import json

import pytest

import confstack
from confstack import load_config, deep_merge, coerce, ConfigTypeError


def J(x):
    return json.dumps(x, sort_keys=True)


def defaults():
    return {
        "service": {"name": "billing", "debug": False, "workers": 4, "tags": ["a"]},
        "db": {"host": "localhost", "port": 5432, "pool": {"size": 5, "timeout": 2.5, "retry": {"max": 3, "backoff": 0.5}}},
        "features": {"beta": False, "ratio": 0.1},
        "log_level": "info",
    }


def write(tmp_path, name, data):
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return str(p)


# ---------------- FAIL_TO_PASS ----------------

def test_cli_beats_environment(tmp_path):
    f = write(tmp_path, "a.json", {"db": {"port": 6001}})
    cfg = load_config(defaults(), files=[f], environ={"APP_DB__PORT": "7000", "APP_LOG_LEVEL": "warn"},
                      cli={"db.port": 6000, "db.pool.retry.max": 9})
    assert J(cfg["db"]) == J({"host": "localhost", "port": 6000,
                               "pool": {"size": 5, "timeout": 2.5, "retry": {"max": 9, "backoff": 0.5}}})
    assert cfg["log_level"] == "warn"


@pytest.mark.parametrize("raw,expected", [("false", False), ("FALSE", False), ("0", False), ("off", False), ("no", False),
                                          ("true", True), ("1", True), ("Yes", True), ("on", True)])
def test_bool_coercion(raw, expected):
    got = coerce(raw, False)
    assert type(got) is bool and got is expected
    cfg = load_config(defaults(), environ={"APP_FEATURES__BETA": raw})
    assert type(cfg["features"]["beta"]) is bool and cfg["features"]["beta"] is expected


def test_bool_rejects_garbage():
    with pytest.raises(ConfigTypeError):
        coerce("maybe", True)
    with pytest.raises(ConfigTypeError):
        load_config(defaults(), environ={"APP_SERVICE__DEBUG": "2"})


def test_nested_merge_any_depth(tmp_path):
    f1 = write(tmp_path, "1.json", {"db": {"pool": {"size": 20}}})
    f2 = write(tmp_path, "2.json", {"db": {"pool": {"retry": {"backoff": 1.5}}}, "extra": {"x": 1}})
    cfg = load_config(defaults(), files=[f1, f2], environ={})
    expect = defaults()
    expect["db"]["pool"]["size"] = 20
    expect["db"]["pool"]["retry"]["backoff"] = 1.5
    expect["extra"] = {"x": 1}
    assert J(cfg) == J(expect)


def test_defaults_are_never_modified(tmp_path):
    d = defaults()
    snapshot = copy.deepcopy(d)
    f = write(tmp_path, "a.json", {"db": {"host": "db1", "pool": {"size": 50}}, "service": {"tags": ["x", "y"]}})
    first = load_config(d, files=[f], environ={"APP_SERVICE__WORKERS": "8"}, cli={"features.ratio": 0.9})
    assert J(d) == J(snapshot)
    second = load_config(d, environ={})
    assert J(second) == J(snapshot)
    first["db"]["pool"]["size"] = -1
    first["service"]["tags"].append("z")
    assert J(d) == J(snapshot)


def test_deep_merge_contract():
    base = {"a": {"b": {"c": 1, "d": [1, 2]}, "e": 2}, "f": 3}
    over = {"a": {"b": {"c": 10, "g": 4}}, "f": {"new": True}}
    b0, o0 = copy.deepcopy(base), copy.deepcopy(over)
    out = deep_merge(base, over)
    assert J(out) == J({"a": {"b": {"c": 10, "d": [1, 2], "g": 4}, "e": 2}, "f": {"new": True}})
    assert J(base) == J(b0) and J(over) == J(o0)
    out["a"]["b"]["d"].append(3)
    out["f"]["new"] = False
    assert J(base) == J(b0) and J(over) == J(o0)


# ---------------- PASS_TO_PASS ----------------

def test_file_order_and_types(tmp_path):
    f1 = write(tmp_path, "1.json", {"log_level": "debug", "service": {"workers": 2}})
    f2 = write(tmp_path, "2.json", {"log_level": "error"})
    cfg = load_config(defaults(), files=[f1, f2], environ={})
    assert cfg["log_level"] == "error" and cfg["service"]["workers"] == 2


@pytest.mark.parametrize("raw,default,expected", [("8", 4, 8), (" 12 ", 0, 12), ("2.5", 1.0, 2.5), ("a, b,,c ", ["z"], ["a", "b", "c"]), ("plain", "x", "plain")])
def test_other_coercions(raw, default, expected):
    got = coerce(raw, default)
    assert J(got) == J(expected) and type(got) is type(expected)


def test_int_rejects_garbage():
    with pytest.raises(ConfigTypeError):
        coerce("eight", 4)


def test_env_prefix_and_unknown_keys():
    env = {"APP_SERVICE__WORKERS": "16", "APP_NOPE": "1", "APP_DB": "x", "OTHER_LOG_LEVEL": "x",
           "APP_DB__POOL__TIMEOUT": "9.5", "SVC_LOG_LEVEL": "trace"}
    cfg = load_config(defaults(), environ=env)
    assert cfg["service"]["workers"] == 16 and type(cfg["service"]["workers"]) is int
    assert cfg["db"]["pool"]["timeout"] == 9.5
    assert "nope" not in cfg and cfg["db"]["host"] == "localhost"
    assert cfg["log_level"] == "info"
    cfg2 = load_config(defaults(), environ=env, prefix="SVC_")
    assert cfg2["log_level"] == "trace" and cfg2["service"]["workers"] == 4


def test_missing_file_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_config(defaults(), files=[str(tmp_path / "missing.json")], environ={})


def test_public_api():
    assert set(confstack.__all__) == {"load_config", "deep_merge", "coerce", "ConfigTypeError"}
    assert issubclass(ConfigTypeError, ValueError)
