#!/bin/bash
# Build the task's repository: three commits, the middle one the bad one.
set -euo pipefail
repo=$1
git init -q -b main "$repo"
cd "$repo"
git config user.name "Task Author"
git config user.email author@example.com
export GIT_AUTHOR_DATE="2024-01-01T10:00:00Z" GIT_COMMITTER_DATE="2024-01-01T10:00:00Z"
printf '[server]\nport = 8080\ndebug = false\n' > config.ini
git add config.ini
git commit -q -m "Add server config"
sed -i 's/debug = false/debug = true/' config.ini
printf 'verbose = yes\n' >> config.ini
git commit -q -am "Turn on debug mode"
printf '# Service\n\nRun it with ./serve.\n' > README.md
git add README.md
git commit -q -m "Document the service"
