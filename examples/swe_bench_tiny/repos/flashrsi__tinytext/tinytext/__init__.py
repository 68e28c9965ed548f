"""Small text helpers."""

from tinytext.slug import slugify
from tinytext.stats import word_count
from tinytext.wrap import truncate

__all__ = ["slugify", "truncate", "word_count"]
