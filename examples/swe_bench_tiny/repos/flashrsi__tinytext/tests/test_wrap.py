from tinytext import truncate


def test_short_text_is_unchanged():
    assert truncate("short", 10) == "short"


def test_exact_width_is_unchanged():
    assert truncate("abcde", 5) == "abcde"
