#!/usr/bin/env bash
# What `make test` needs beyond Go: a JDK 17 and Maven for the local
# Cassandra (and the node with a password and TLS that cmd/cmdtest starts
# even when CASSANDRA_HOSTS names a cluster), openssl for that node's
# certificates, Chromium for the browser tests, Node.js to check
# static/*.js and systemd-analyze to check the systemd unit. Run as root with apt-get
# (a fresh Debian/Ubuntu machine, CI), it installs what is missing; anywhere
# else it says what to install and fails.
set -euo pipefail

need=() # Debian packages
{ command -v java >/dev/null && java -version 2>&1 | grep -q '"17\.'; } || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || need+=(maven)
command -v openssl >/dev/null || need+=(openssl)
command -v systemd-analyze >/dev/null || need+=(systemd)
if [ -n "${CHROMIUM:-}" ]; then
  [ -x "$CHROMIUM" ] || { echo "test-deps: \$CHROMIUM=$CHROMIUM is not an executable" >&2; exit 1; }
elif ! { [ -x /usr/bin/chromium ] || command -v chromium || command -v chromium-browser ||
         command -v google-chrome || command -v headless-shell; } >/dev/null; then
  need+=(chromium)
fi
command -v node >/dev/null || need+=(nodejs)

[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "test-deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  exit 0
fi
echo "make test needs these and could not install them (it does so only as root with apt-get):" >&2
for p in "${need[@]}"; do
  case $p in
    openjdk-17-jre-headless) echo "  - a JDK 17, to run the local Cassandra nodes" >&2 ;;
    maven) echo "  - Maven (mvn), to fetch Cassandra the first time" >&2 ;;
    chromium) echo "  - Chromium, for the browser tests (or set CHROMIUM to a Chrome or Chromium binary)" >&2 ;;
    nodejs) echo "  - Node.js (node), to check static/*.js" >&2 ;;
    openssl) echo "  - openssl, to make the certificates of the test node with TLS (scripts/cassandra.sh start --secure)" >&2 ;;
    systemd) echo "  - systemd-analyze (Debian: systemd), to check scripts/systemd/killrchat.service" >&2 ;;
  esac
done
echo "Debian/Ubuntu: sudo apt-get install ${need[*]}   (then run make test again)" >&2
exit 1
