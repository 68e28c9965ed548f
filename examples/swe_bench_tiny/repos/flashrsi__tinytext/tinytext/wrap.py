"""Shortening text to a width."""


def truncate(text, width, ellipsis="..."):
    """`text` if it fits in `width` characters, else its start followed by `ellipsis`,
    `width` characters in all."""
    if len(text) <= width:
        return text
    return text[:width] + ellipsis
