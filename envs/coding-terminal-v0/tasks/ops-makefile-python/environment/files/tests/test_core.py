from tallyho import count_levels, top_n


def test_count_levels():
    lines = ["2024 INFO start", "2024 ERROR boom", "INFO again", "nothing here"]
    assert count_levels(lines) == {"INFO": 2, "ERROR": 1}


def test_top_n():
    assert top_n({"a": 1, "b": 3, "c": 3}, 2) == ["b", "c"]
