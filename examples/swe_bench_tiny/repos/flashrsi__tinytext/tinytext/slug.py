"""URL slugs."""

import re


def slugify(text, separator="-"):
    """Lower-case `text`, with every run of other characters than letters and digits
    replaced by `separator`."""
    return re.sub(r"[^a-z0-9]", separator, text.lower())
