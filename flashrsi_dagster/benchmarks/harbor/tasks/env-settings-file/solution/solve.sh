#!/bin/bash
# Render the settings from the environment the container provides.
set -euo pipefail
printf '[app]\nenv = %s\nport = %s\n' "$APP_ENV" "$APP_PORT" > /app/settings.ini
