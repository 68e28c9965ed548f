"""Running jobs outside the daemon: the experiment starter job, one step as an in-process run
of its algorithm's job (`in_process`), the CLI's loop over an experiment's steps
(`cli_driver`), and the persistent instance under a home folder (`instance`). The jobs of
each algorithm are declared with its definitions (`flashrsi_dagster.deployment.definitions`)."""
