#!/bin/bash
# Rewrite the script with quoting, a glob instead of ls, and mkdir -p for DEST.
set -euo pipefail
cat > /app/backup.sh <<'EOF'
#!/bin/bash
# Copy the .txt files of SOURCE into DEST.
set -euo pipefail
src=$1
dest=$2
mkdir -p -- "$dest"
shopt -s nullglob
for f in "$src"/*.txt; do
    [ -f "$f" ] && cp -- "$f" "$dest/"
done
EOF
chmod 755 /app/backup.sh
