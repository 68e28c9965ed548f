#!/bin/bash
# Reward in reward.json: the agent's collector is found by pgrep, is the one in the pid file,
# and is still writing samples.
running=0; pidfile=0; writing=0
pids=$(pgrep -f 'collector.py --config /etc/collector.conf')
echo "collector pids: ${pids:-none}"
[ "$(printf '%s\n' $pids | grep -c .)" = 1 ] && running=1
[ -n "$pids" ] && [ "$(cat /run/collector.pid 2>/dev/null)" = "$pids" ] && pidfile=1
before=$(wc -l < /var/lib/collector/metrics.log 2>/dev/null || echo 0)
sleep 1
after=$(wc -l < /var/lib/collector/metrics.log 2>/dev/null || echo 0)
[ "$after" -gt "$before" ] && writing=1
reward=$(( running * pidfile * writing ))
printf '{"reward": %d, "running": %d, "pid_file": %d, "writing": %d}\n' \
    "$reward" "$running" "$pidfile" "$writing" > /logs/verifier/reward.json
