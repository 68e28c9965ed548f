"""The editing check's marker lines, which the offline model's policy reads
(`offline_model/policies/editing_check.py`): written and read from here, so the simulator
follows the real instruction. Plain constants: the simulator imports this and nothing more."""

CHECK = "Editing check:"
"""The task's name; the line that tells an editing-check instruction from any other."""
FILE = "File:"
"""The file to edit or create, relative to the working folder."""
FIND = "Find line:"
"""replace_line: the line to replace, exactly as it is in the file."""
REPLACE = "Replace with:"
"""replace_line: the line that takes its place."""
AFTER = "After line:"
"""insert_after: the line after which the new line goes."""
INSERT = "Insert line:"
"""insert_after: the new line."""
CONTENT = "Content:"
"""create_file: everything after this line, to the end of the message, is the file's text."""
