"""The experiment explorer: a read-only web page beside the Dagster UI that shows an
experiment's candidates as a tree, and for each its code, its diff to its parent, the Worker's
trajectory, every target trajectory, its scores, paired statistics and gates.

`candidates` reads an experiment's records into one model for every algorithm; `records`
reads one candidate's raw records; `server` serves both as JSON and the page in `static/`.
Plain Python: no Dagster import."""
