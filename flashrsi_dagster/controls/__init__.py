"""Controls: what a search is measured against. The spend of an experiment's roles, read from
its gateway log; what it promoted, read from its records; its lift over a control."""
