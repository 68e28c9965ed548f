from tinytext import word_count


def test_empty_text_has_no_words():
    assert word_count("") == 0


def test_single_spaces():
    assert word_count("one two three") == 3
