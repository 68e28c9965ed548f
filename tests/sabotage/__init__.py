"""The sabotage suite: attacks by scripted Workers and targets (offline simulator) through the
real framework — bubblewrap jails, the model gateway, the git snapshot store, Harbor's local
environment — one test per attack, each asserting on the records where Meta-Harness keeps its
rejections (edit and round records, trajectories).

- helpers.py: scripted agents on the offline simulator, experiments run to their end through
  the real framework, and the evidence an attack leaves; target_probes.py: evolved harness code
  that attacks from inside the target's own process.
- test_attacks.py: one jailed experiment, one Worker step per attack (records, reward hack,
  sealed test, keys, escapes, writes outside, other experiments, site-packages, loopback,
  history, oversized edits), plus target code attacking from every dev rollout;
- test_holes.py: the holes a first red-team pass found through the jail, now closed;
- test_bridge_and_jail_edges.py: the second pass (gateway HTTP edges, the command bridge,
  resource exhaustion, the harness runtime, Claude Code's launcher), each once a hole;
- test_agent_adapters.py: the agent adapters attacked as a hostile Worker, harness or task would;
- test_framework_killed.py: SIGKILL the framework while an agent sleeps in a tool call;
- test_hung_endpoint.py: a hung model hit through the run's timeout is an infrastructure fault;
- test_harbor.py: forged rewards in a Harbor trial, and Worker code in a (jailed) Harbor target;
- test_host_duties.py: the evaluator-protected paths, the evaluator's manifest and evaluation
  sets, the decision ledger and roll-backs, and the evaluation sets' labels;
- test_protected_limits.py: a Worker loosening the shell tool's limits in the harness;
- test_adopted.py, test_adopted_improver.py: a harness that weakens its own editing under
  `worker.harness: adopted`;
- test_search_order.py: promotion, the sealed test and rounds asked for out of turn, twice at
  once or under another name;
- test_side_by_side.py: the paths where a round's candidates run side by side;
- test_jail_resources.py: the ninth pass — memory and disk taken from inside a jail;
- test_modular_rsi.py: ModularRSI's branches, analysis folder, `.branches/` references, gates,
  answer protocol, review reasons, evolved target and resume after a crash mid-step;
- test_evolver.py: the Evolver's beacon guard, path guard and protected paths, the gates'
  fixed denominator, evolved target code against the records and the store, the sealed test,
  a hostile WHY pick and diagnosis, the step order, the keys, and designers' answers built to
  hang the host;
- test_round10.py: the tenth pass — SWE-bench's grading (a model patch bringing pytest hooks
  or lying in the log), the per-jail cgroups and what a run leaves in IPC or `/tmp`, the warm
  run workers' fork server and MiniAgent's, the explorer's HTML sinks and symlinks, Harbor's
  docker environment (a reward rewritten by an agent's process), and forms of the answers the
  contamination check had not been shown.
- test_round11.py: the eleventh pass — the table in invisible-character or whitespace
  steganography, character codes as floats or joined by other separators, one-line ciphers
  (declared), an endpoint reflecting the gateway's key, and a jailed harness hunting a planted
  key, the sealed test or a sibling jail's `/dev/shm` and abstract sockets.
- test_round12.py: the twelfth pass — every call the seccomp filter refuses, with high bits,
  through the 32-bit and x32 entry points and `quotactl_fd`; the behaviour signal gamed (a
  table behind the parent's unchanged model calls: declared), an encrypted table and a whole
  corpus's table end to end (declared; with private dev and test data it wins nothing), a
  Worker's commit messages read back at run time, an answer naming every label, and a
  Worker walking its jail for a sealed-test task or its key, `agent.yaml#limits` loosened
  through YAML's corners.
- conftest.py: the contamination check over the built-in corpus, shared by the rounds; the
  answer tables they write are `helpers.answer_table`.
"""
