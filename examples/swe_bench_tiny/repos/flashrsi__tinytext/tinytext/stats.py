"""Counting words."""


def word_count(text):
    """The number of words in `text`, words being separated by whitespace."""
    if not text:
        return 0
    return len(text.split(" "))
