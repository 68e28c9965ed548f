#!/bin/bash
# Executable scripts, a private secret, and a world-readable public tree.
set -euo pipefail
chmod 755 /app/bin/*.sh
chmod 600 /app/config/secret.env
find /app/public -type d -exec chmod 755 {} +
find /app/public -type f -exec chmod 644 {} +
