"""FlashRSI on Dagster.

A process that imports this package freezes its heap once its other exit handlers have run
(`gc.freeze`, registered first, so called last): the interpreter's finalization would
otherwise walk every object a process that loaded Dagster made, again and again, before it
ends (1.5-2 s of CPU for `flashrsi run`, 2-4 s for a code server on a loaded 2-core machine,
the time its caller waits for it to end). Nothing is lost: the objects left then are freed
with the process, as they would have been."""

import atexit
import gc

__version__ = "0.1.0"

atexit.register(gc.freeze)
