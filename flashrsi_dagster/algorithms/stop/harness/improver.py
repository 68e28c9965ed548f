"""The seed improver (STOP's I0): ask the model for a few improved versions of the solution
and keep the one the utility scores best.

`improve(solution, utility, model, budget)`: `solution` is text; `utility(text)` is its score,
computed by the host (at most `budget` calls); `model(prompt)` is the model's answer."""

SAMPLES = 3


def improve(solution, utility, model, budget):
    prompt = (
        "Improve the following solution:\n<solution>\n"
        + solution
        + "\n</solution>\nYou will be evaluated by this utility:\n"
        + utility.str
        + "\nReturn the whole improved solution wrapped in the same solution tags."
    )
    n = max(1, min(SAMPLES, budget))
    candidates = []
    for i in range(n):
        answer = model(f"{prompt}\nCandidate {i + 1} of {n}.")
        candidates.append(between_tags(answer) or solution)
    return max(candidates, key=utility)


def between_tags(text):
    """What `text` holds between its first <solution> and its last </solution> (None if
    it has no such pair): a solution may itself mention the tags."""
    start, end = text.find("<solution>"), text.rfind("</solution>")
    if start < 0 or end < start:
        return None
    return text[start + len("<solution>") : end].strip("\n")
