#!/bin/sh
# The Compose v2 CLI plugin (`docker compose`), which Harbor's `docker` environment runs every
# trial through. Debian bookworm has only Compose v1; trixie's `docker-compose` package holds
# the v2 plugin (needs libc6 >= 2.34; bookworm has 2.36). That one package is fetched from
# Debian's archive with a trixie source list used for this download alone (no system upgrade),
# and its plugin put in Docker's plugin path. Quick and silent when `docker compose` works.
set -eu
DEST=${COMPOSE_PLUGIN_DIR:-/usr/local/lib/docker/cli-plugins}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

command -v docker >/dev/null 2>&1 || exit 0  # no CLI: `make docker` has said why
docker compose version >/dev/null 2>&1 && exit 0
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
	echo "the Compose v2 plugin (docker compose) is missing and needs apt and root to install" \
		"(Debian trixie's docker-compose, or Docker's docker-compose-plugin): Harbor's docker" \
		"environment cannot run and its tests will be skipped"
	exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/deb"
echo "deb $MIRROR trixie main" >"$work/sources.list"
set -- -o "Dir::Etc::sourcelist=$work/sources.list" -o Dir::Etc::sourceparts=- \
	-o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives" \
	-o APT::Get::List-Cleanup=0 -o APT::Sandbox::User=root -qq
if ! apt-get "$@" update || ! (cd "$work/deb" && apt-get "$@" download docker-compose); then
	echo "the Compose v2 plugin could not be fetched from $MIRROR (trixie's docker-compose):" \
		"Harbor's docker environment cannot run and its tests will be skipped"
	exit 0
fi
dpkg-deb -x "$work"/deb/docker-compose_*.deb "$work/x"
install -D -m 755 "$work/x/usr/libexec/docker/cli-plugins/docker-compose" "$DEST/docker-compose"
echo "installed $(docker compose version) into $DEST"
