#!/bin/sh
# Install the Debian packages PeerBoard needs that a fresh machine may lack:
#   - cmake and g++ to build llama-cpp-python (the offline local judge) from source;
#   - chromium for the real-browser test (tests/e2e);
#   - postgresql (its server programs: initdb, pg_ctl) for the store's PostgreSQL tests,
#     which start a throwaway cluster of their own (tests/pg_cluster.py); no service is used.
# Only missing packages are installed; apt runs as root or through sudo.
# Usage: scripts/system-deps.sh [build] [browser] [postgres]
set -eu

need=""
for group in "$@"; do
  case "$group" in
    build)
      command -v cmake >/dev/null 2>&1 || need="$need cmake"
      command -v g++ >/dev/null 2>&1 || need="$need g++"
      ;;
    browser)
      [ -x /usr/bin/chromium ] || need="$need chromium"
      ;;
    postgres)
      found=""
      for dir in /usr/lib/postgresql/*/bin; do
        [ -x "$dir/initdb" ] && found="$dir"
      done
      [ -n "$found" ] || command -v initdb >/dev/null 2>&1 || need="$need postgresql"
      ;;
    *) echo "system-deps.sh: unknown group '$group' (use build, browser, postgres)" >&2; exit 2 ;;
  esac
done

[ -z "$need" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  run=""
elif command -v sudo >/dev/null 2>&1; then
  run="sudo"
else
  echo "system-deps.sh: need root or sudo to install:$need" >&2
  exit 1
fi
echo "Installing Debian packages:$need"
$run apt-get update -qq
DEBIAN_FRONTEND=noninteractive $run apt-get install -y -qq --no-install-recommends $need
