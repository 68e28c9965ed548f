"""The editing check: a small fixed set of file-editing tasks that ship with the project,
each given to an agent on a scratch folder and verified by the host (the files compared
byte for byte), for any algorithm that must know an agent can still edit code (DGM's
admission; a gate on an adopted improver). `markers.py` is light (the offline model's policy
imports it); `tasks.py` holds the tasks, `check.py` runs them and returns the verdict."""
