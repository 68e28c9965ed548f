from tinytext import slugify


def test_lower_cases():
    assert slugify("Hello") == "hello"


def test_replaces_a_space():
    assert slugify("hello world") == "hello-world"


def test_custom_separator():
    assert slugify("a b", separator="_") == "a_b"
