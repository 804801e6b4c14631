#!/usr/bin/env bash
# Local single-node Apache Cassandra for KillrChat development, tests and CI,
# without Docker.
#
# Cassandra 5.0 has no binary tarball on Maven Central, so we fetch the
# cassandra-all jar and its runtime dependencies with Maven (see
# cassandra-pom.xml), write a minimal config, and run
# org.apache.cassandra.service.CassandraDaemon on the JVM ourselves, the way
# bin/cassandra + cassandra-env.sh would.
#
# Usage: scripts/cassandra.sh {fetch|start|stop|status|nodetool ARGS...}
#        scripts/cassandra.sh {start|stop|status} --nodes 3
#        scripts/cassandra.sh {start|stop|status} --node N
#        scripts/cassandra.sh nodetool --node N ARGS...
#        scripts/cassandra.sh {start|stop|status|nodetool ARGS...} --secure
#
#   fetch     download the jars once into the cache (atomic: temp dir + rename)
#   start     fetch if needed; reuse a node that already answers CQL on
#             127.0.0.1:9042, otherwise start one in the background and wait
#             until it answers `SELECT release_version FROM system.local`
#   stop      stop the node this script started (SIGTERM, then SIGKILL)
#   status    print running / not running (exit 0 / 3)
#   nodetool  run nodetool against the node (JMX on 127.0.0.1:7199)
#
# With --nodes 3 (issue 23) the commands act on a local cluster of three
# nodes on 127.0.0.2, 127.0.0.3 and 127.0.0.4 (CQL 9042 and internode 7000
# on each address, JMX on 127.0.0.1:7201-7203), so the development node on
# 127.0.0.1 can keep running. Each node has its own directory under
# CASSANDRA_CLUSTER_DIR (<repo>/.cassandra-cluster/nodeN), heap
# (CASSANDRA_HEAP, default 768M there) and a third of the ring (one token
# each); the snitch is GossipingPropertyFileSnitch with every node in dc1,
# rack1, for keyspaces at NetworkTopologyStrategy {'dc1': 3}. Nodes start
# one after another (a node joins once the one before answers CQL) and stop
# in reverse. `--node N` acts on node N alone (a restart after a fault:
# its directory, and so its data, stays); its pid is in
# CASSANDRA_CLUSTER_DIR/nodeN/cassandra.pid while it runs.
#
# Environment (all optional):
#   KILLRCHAT_CACHE          cache root              (~/.cache/killrchat)
#   CASSANDRA_DATA_DIR       data, config and logs   (<repo>/.cassandra)
#   CASSANDRA_PORT           CQL port                (9042)
#   CASSANDRA_STORAGE_PORT   internode port          (7000)
#   CASSANDRA_JMX_PORT       local JMX port          (7199)
#   CASSANDRA_HEAP           -Xms/-Xmx               (1G)
#   CASSANDRA_START_TIMEOUT  seconds to wait for CQL (180)
#   CASSANDRA_STOP_TIMEOUT   seconds before SIGKILL  (60)
#   CASSANDRA_JAVA_HOME      JDK to run Cassandra with (must be 11 or 17);
#                            default: JAVA_HOME, the Debian JDK 17, PATH
#   CASSANDRA_JVM_OPTS       extra JVM options, split on spaces
#   CASSANDRA_HOST           address to listen on    (127.0.0.1)
#   CASSANDRA_SEEDS          seed list               (<host>:<storage port>)
#   CASSANDRA_INITIAL_TOKEN  the node's token        (0)
#   CASSANDRA_DC             data centre; set: GossipingPropertyFileSnitch
#                            (default: SimpleSnitch, datacenter1)
#   CASSANDRA_RING_DELAY_MS  gossip ring delay       (100; 5000 in a cluster)
#   CASSANDRA_CLUSTER_DIR    where --nodes keeps its nodes (<repo>/.cassandra-cluster)
#   CASSANDRA_FAST_SCHEMA    1: schema changes skip the system tables'
#                            flush (single node only; see launch)  (1)
#
# With --secure (issue 33) the commands act on a node that requires a
# password (PasswordAuthenticator; the user is the default superuser
# cassandra, password cassandra) and TLS from clients (client encryption
# on, not optional), on 127.0.0.5 (CQL 9042, internode 7000, JMX on
# 127.0.0.1:7205), with its own directory CASSANDRA_SECURE_DIR
# (<repo>/.cassandra-secure) and a small heap (CASSANDRA_HEAP, default
# 512M), so the development node on 127.0.0.1 keeps running beside it
# without authentication. Its first start makes a certificate authority
# and a server certificate for 127.0.0.5 with openssl, in <dir>/tls:
# clients trust <dir>/tls/ca.pem. Nothing of it is committed.
#   scripts/cassandra.sh start --secure
#   killrchat migrate --cassandra-hosts 127.0.0.5 --cassandra-username cassandra \
#     --cassandra-password cassandra --cassandra-tls-ca .cassandra-secure/tls/ca.pem
#
# Running as root (CI does) is fine: the "refuses to run as root unless -R"
# check lives only in the bin/cassandra shell script, which we do not use;
# CassandraDaemon itself has no such check.
set -euo pipefail

readonly CASSANDRA_VERSION=5.0.9
HOST=${CASSANDRA_HOST:-127.0.0.1}

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(dirname "$SCRIPT_DIR")
CACHE_ROOT=${KILLRCHAT_CACHE:-$HOME/.cache/killrchat}
INSTALL_DIR=$CACHE_ROOT/cassandra-$CASSANDRA_VERSION
LIB_DIR=$INSTALL_DIR/lib
CQLPING=$CACHE_ROOT/bin/cqlping
DATA_DIR=${CASSANDRA_DATA_DIR:-$REPO_ROOT/.cassandra}
NATIVE_PORT=${CASSANDRA_PORT:-9042}
STORAGE_PORT=${CASSANDRA_STORAGE_PORT:-7000}
JMX_PORT=${CASSANDRA_JMX_PORT:-7199}
HEAP=${CASSANDRA_HEAP:-1G}
START_TIMEOUT=${CASSANDRA_START_TIMEOUT:-180}
STOP_TIMEOUT=${CASSANDRA_STOP_TIMEOUT:-60}
SEEDS=${CASSANDRA_SEEDS:-$HOST:$STORAGE_PORT}
INITIAL_TOKEN=${CASSANDRA_INITIAL_TOKEN:-0}
DC=${CASSANDRA_DC:-}
RING_DELAY_MS=${CASSANDRA_RING_DELAY_MS:-100}
CLUSTER_DIR=${CASSANDRA_CLUSTER_DIR:-$REPO_ROOT/.cassandra-cluster}
SECURE_DIR=${CASSANDRA_SECURE_DIR:-$REPO_ROOT/.cassandra-secure}
# Set by --secure: password authentication and client TLS.
SECURE=${CASSANDRA_SECURE:-}

# The config file URL and every path below must be absolute: the JVM runs
# with the data dir as its working directory.
case $DATA_DIR in
  /*) ;;
  *) DATA_DIR=$PWD/$DATA_DIR ;;
esac
PID_FILE=$DATA_DIR/cassandra.pid
CONF_DIR=$DATA_DIR/conf
LOG_DIR=$DATA_DIR/logs
TLS_DIR=$DATA_DIR/tls
# How cqlping reaches the node: with --secure, as the superuser over TLS.
CQLPING_AUTH=()
if [ -n "$SECURE" ]; then
  CQLPING_AUTH=(-user cassandra -password cassandra -ca "$TLS_DIR/ca.pem")
fi

say() { printf 'cassandra: %s\n' "$*"; }
die() { printf 'cassandra: error: %s\n' "$*" >&2; exit 1; }

# Milliseconds since the epoch; EPOCHREALTIME needs bash 5, so fall back to
# whole seconds on older shells (macOS /bin/bash is 3.2).
now_ms() {
  if [ -n "${EPOCHREALTIME:-}" ]; then
    local t=${EPOCHREALTIME/[.,]/}
    echo $((10#${t:0:${#t}-3}))
  else
    echo $(($(date +%s) * 1000))
  fi
}
# Seconds with one decimal between a now_ms value and now.
elapsed_since() {
  local ms=$(($(now_ms) - $1))
  printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}

# Serialise concurrent runs (e.g. `make -j run test`) on a lock file, so two
# of them never fetch into the same cache or boot two JVMs on one data dir.
# flock(1) is in util-linux (always on Debian); without it we run unlocked.
# The descriptor must not leak into the JVM, or the JVM would hold the lock
# forever: launch() closes it.
lock() { # lock FD FILE
  command -v flock >/dev/null 2>&1 || return 0
  mkdir -p "$(dirname "$2")"
  eval "exec $1>\"\$2\""
  flock "$1"
}

have_jars() { [ -f "$LIB_DIR/cassandra-all-$CASSANDRA_VERSION.jar" ]; }

cmd_fetch() {
  if have_jars; then
    return 0
  fi
  mkdir -p "$INSTALL_DIR"
  lock 8 "$INSTALL_DIR/.fetch.lock"
  have_jars && return 0 # another run fetched while we waited for the lock
  command -v mvn >/dev/null 2>&1 ||
    die "Maven (mvn) is needed to fetch Cassandra (Debian: apt-get install maven)"

  # Leftovers of fetches killed with SIGKILL; a live fetch would hold the lock.
  find "$INSTALL_DIR" -maxdepth 1 -name 'lib.tmp.*' -exec rm -rf {} + 2>/dev/null || true

  local tmp started
  tmp=$(mktemp -d "$INSTALL_DIR/lib.tmp.XXXXXX")
  FETCH_TMP=$tmp
  trap 'rm -rf "$FETCH_TMP"' EXIT
  started=$(now_ms)
  say "fetching Cassandra $CASSANDRA_VERSION from Maven Central into $LIB_DIR ..."
  say "(cassandra-all and ~100 runtime jars, ~70 MB; once per machine)"
  # -Dcassandra.version overrides the pom's property so this script is the one
  # place that names the version. Maven's own output (it prints colour codes
  # even in batch mode) goes to a log that is shown only when it fails.
  local mvnlog=$INSTALL_DIR/fetch.log
  if ! mvn -B -q -Dstyle.color=never -f "$SCRIPT_DIR/cassandra-pom.xml" \
    dependency:copy-dependencies \
    -DincludeScope=runtime \
    -Dcassandra.version="$CASSANDRA_VERSION" \
    -DoutputDirectory="$tmp" >"$mvnlog" 2>&1; then
    tail -n 40 "$mvnlog" >&2
    die "Maven could not fetch Cassandra $CASSANDRA_VERSION (log: $mvnlog)"
  fi
  [ -f "$tmp/cassandra-all-$CASSANDRA_VERSION.jar" ] ||
    die "Maven finished but cassandra-all-$CASSANDRA_VERSION.jar is missing"
  # The rename is what makes the cache appear: an interrupted fetch leaves
  # only a lib.tmp.* directory, never a half-filled lib/.
  mv "$tmp" "$LIB_DIR"
  trap - EXIT
  local count
  count=$(find "$LIB_DIR" -name '*.jar' | wc -l)
  say "fetched $((count)) jars ($(du -sh "$LIB_DIR" | cut -f1)) in $(elapsed_since "$started") s"
}

# Build scripts/cqlping once into the cache (and again when its source
# changes); running a built binary per poll is much cheaper than `go run`.
cqlping_built() {
  [ -x "$CQLPING" ] && [ ! "$SCRIPT_DIR/cqlping/main.go" -nt "$CQLPING" ] &&
    [ ! "$REPO_ROOT/store/inspect/ping.go" -nt "$CQLPING" ]
}
build_cqlping() {
  if cqlping_built; then
    return 0
  fi
  command -v go >/dev/null 2>&1 || die "Go is needed to build scripts/cqlping"
  mkdir -p "$(dirname "$CQLPING")"
  local tmp=$CQLPING.tmp.$$
  (cd "$REPO_ROOT" && go build -o "$tmp" ./scripts/cqlping) ||
    die "could not build scripts/cqlping"
  mv -f "$tmp" "$CQLPING"
}

# True when a node on HOST:NATIVE_PORT answers a real CQL query.
cql_ready() {
  "$CQLPING" -q -host "$HOST" -port "$NATIVE_PORT" -timeout "${1:-2s}" ${CQLPING_AUTH[@]+"${CQLPING_AUTH[@]}"}
}

# True when something accepts TCP connections on the CQL port.
port_open() {
  (exec 3<>"/dev/tcp/$HOST/$NATIVE_PORT") 2>/dev/null
}

# True while PID runs. The JVM is orphaned once `start` returns, so whoever
# adopts it may be slow to reap it: a zombie counts as gone.
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  local stat
  if [ -r "/proc/$1/stat" ] && stat=$(cat "/proc/$1/stat" 2>/dev/null); then
    stat=${stat##*) }
    [ "${stat%% *}" != Z ] || return 1
  fi
  return 0
}

# Prints the pid from our pid file when that process is alive and really is a
# Cassandra JVM (pids get reused after a reboot or crash).
our_pid() {
  [ -f "$PID_FILE" ] || return 1
  local pid args
  pid=$(cat "$PID_FILE" 2>/dev/null) || return 1
  case $pid in '' | *[!0-9]*) return 1 ;; esac
  alive "$pid" || return 1
  if [ -r "/proc/$pid/cmdline" ]; then
    args=$(tr '\0' ' ' <"/proc/$pid/cmdline")
  else
    args=$(ps -p "$pid" -o args= 2>/dev/null) || return 1
  fi
  case $args in *CassandraDaemon*) echo "$pid" ;; *) return 1 ;; esac
}

# Cassandra 5.0 runs on Java 11 or 17 only (21 is for 5.1+), so pick a JDK
# explicitly instead of trusting whatever `java` is first on PATH.
java_major() {
  "$1" -version 2>&1 | awk -F'"' '/version/ { split($2, v, "."); print (v[1] == "1") ? v[2] : v[1]; exit }'
}
find_java() {
  local candidates=() home java
  [ -n "${CASSANDRA_JAVA_HOME:-}" ] && candidates+=("$CASSANDRA_JAVA_HOME/bin/java")
  [ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME/bin/java")
  for home in /usr/lib/jvm/java-17-openjdk* /usr/lib/jvm/java-11-openjdk*; do
    [ -x "$home/bin/java" ] && candidates+=("$home/bin/java")
  done
  if [ -x /usr/libexec/java_home ]; then # macOS
    home=$(/usr/libexec/java_home -v 17 2>/dev/null || true)
    [ -n "$home" ] && candidates+=("$home/bin/java")
  fi
  command -v java >/dev/null 2>&1 && candidates+=("$(command -v java)")
  for java in ${candidates[@]+"${candidates[@]}"}; do
    [ -x "$java" ] || continue
    case $(java_major "$java") in
      11 | 17) echo "$java"; return 0 ;;
    esac
  done
  die "Cassandra $CASSANDRA_VERSION needs Java 11 or 17 (Debian: apt-get install openjdk-17-jre-headless; or set CASSANDRA_JAVA_HOME)"
}

# file:// URL for cassandra.config; escape what a URL cannot hold raw.
file_url() {
  local p=${1//%/%25}
  p=${p// /%20}
  printf 'file://%s' "$p"
}

# make_certs makes, once, a certificate authority and a server certificate
# for HOST signed by it, in TLS_DIR: ca.pem is what clients trust,
# server.p12 the node's keystore. Kept between starts so that clients
# holding ca.pem keep trusting the node.
make_certs() {
  [ -f "$TLS_DIR/server.p12" ] && [ -f "$TLS_DIR/ca.pem" ] && return 0
  command -v openssl >/dev/null 2>&1 || die "openssl is needed to make the node's certificates (Debian: apt-get install openssl)"
  local tmp=$TLS_DIR.tmp
  rm -rf "$tmp"
  mkdir -p "$tmp"
  (
    cd "$tmp"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=KillrChat dev CA" \
      -keyout ca.key -out ca.pem
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$HOST" -keyout server.key -out server.csr
    printf 'subjectAltName=IP:%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$HOST" >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile server.ext -out server.pem
    openssl pkcs12 -export -in server.pem -inkey server.key -name node -passout pass:cassandra -out server.p12
  ) >"$DATA_DIR/openssl.log" 2>&1 || { cat "$DATA_DIR/openssl.log" >&2; die "openssl could not make the node's certificates"; }
  rm -f "$tmp/ca.key" "$tmp/server.csr" "$tmp/server.ext" "$tmp/ca.srl"
  rm -rf "$TLS_DIR"
  mv "$tmp" "$TLS_DIR"
  say "made a CA and a certificate for $HOST in $TLS_DIR (clients trust $TLS_DIR/ca.pem)"
}

# security_config is the authentication and client encryption part of
# cassandra.yaml.
security_config() {
  if [ -z "$SECURE" ]; then
    cat <<EOF
authenticator:
  class_name: org.apache.cassandra.auth.AllowAllAuthenticator
authorizer:
  class_name: org.apache.cassandra.auth.AllowAllAuthorizer
EOF
    return
  fi
  cat <<EOF
# --secure: a password from every client (the default superuser is
# cassandra/cassandra), and TLS on the CQL port only.
authenticator:
  class_name: org.apache.cassandra.auth.PasswordAuthenticator
authorizer:
  class_name: org.apache.cassandra.auth.AllowAllAuthorizer
role_manager:
  class_name: org.apache.cassandra.auth.CassandraRoleManager
client_encryption_options:
  enabled: true
  optional: false
  keystore: $TLS_DIR/server.p12
  keystore_password: cassandra
  store_type: PKCS12
  require_client_auth: false
EOF
}

write_config() {
  mkdir -p "$CONF_DIR" "$LOG_DIR" "$DATA_DIR/data" "$DATA_DIR/commitlog" \
    "$DATA_DIR/saved_caches" "$DATA_DIR/hints" "$DATA_DIR/cdc_raw" \
    "$DATA_DIR/triggers" "$DATA_DIR/tmp"

  # Regenerated on every start so edits to this script take effect; the
  # token and addresses never change, so existing data stays valid.
  cat >"$CONF_DIR/cassandra.yaml" <<EOF
# Generated by scripts/cassandra.sh on every start: edit the script instead.
# Anything not set here keeps Cassandra $CASSANDRA_VERSION's default
# (including read/write/CAS/range request timeouts).
cluster_name: 'KillrChat Dev'

# One token per node, no vnodes: a single node owns the whole ring at 0;
# each node of a --nodes cluster owns its third.
num_tokens: 1
initial_token: $INITIAL_TOKEN
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: $(if [ -n "$DC" ]; then echo GossipingPropertyFileSnitch; else echo 'SimpleSnitch # datacenter1 / rack1'; fi)

listen_address: $HOST
rpc_address: $HOST
storage_port: $STORAGE_PORT
native_transport_port: $NATIVE_PORT
start_native_transport: true
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "$SEEDS"

data_file_directories:
  - '$DATA_DIR/data'
commitlog_directory: '$DATA_DIR/commitlog'
saved_caches_directory: '$DATA_DIR/saved_caches'
hints_directory: '$DATA_DIR/hints'
cdc_raw_directory: '$DATA_DIR/cdc_raw'

# Periodic fsync of the commit log (the default): a crash or SIGKILL can lose
# the last 10 s of writes, a normal stop (SIGTERM drains) loses nothing.
commitlog_sync: periodic
commitlog_sync_period: 10000ms
commitlog_total_space: 512MiB

$(security_config)

# On-disk format readable by Cassandra 4.x too (the 5.0 default).
storage_compatibility_mode: CASSANDRA_4

# Sized for a laptop or a 2-core CI box next to a 1 GiB heap; the defaults
# assume a dedicated server.
memtable_heap_space: 128MiB
memtable_offheap_space: 128MiB
memtable_flush_writers: 1
key_cache_size: 16MiB
counter_cache_size: 8MiB
row_cache_size: 0MiB
file_cache_size: 64MiB
networking_cache_size: 32MiB
concurrent_reads: 8
concurrent_writes: 8
concurrent_counter_writes: 8
concurrent_compactors: 1

# Tests drop and truncate tables all the time: do not snapshot on each.
auto_snapshot: false
EOF

  if [ -n "$DC" ]; then
    # Read from the classpath (the conf dir is on it).
    printf 'dc=%s\nrack=rack1\n' "$DC" >"$CONF_DIR/cassandra-rackdc.properties"
  fi

  # Everything to system.log at INFO (with rotation) and nothing to stdout,
  # so stdout.log only catches JVM-level output and crashes.
  cat >"$CONF_DIR/logback.xml" <<EOF
<!-- Generated by scripts/cassandra.sh on every start. -->
<configuration scan="false">
  <appender name="SYSTEMLOG" class="ch.qos.logback.core.rolling.RollingFileAppender">
    <file>$LOG_DIR/system.log</file>
    <rollingPolicy class="ch.qos.logback.core.rolling.SizeAndTimeBasedRollingPolicy">
      <fileNamePattern>$LOG_DIR/system.log.%d{yyyy-MM-dd}.%i.zip</fileNamePattern>
      <maxFileSize>50MB</maxFileSize>
      <maxHistory>7</maxHistory>
      <totalSizeCap>300MB</totalSizeCap>
    </rollingPolicy>
    <encoder>
      <pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern>
    </encoder>
  </appender>
  <root level="INFO">
    <appender-ref ref="SYSTEMLOG" />
  </root>
</configuration>
EOF
}

# Java 17 module access Cassandra needs (conf/jvm17-server.options of the
# cassandra-5.0 branch; nodetool needs the same, cf. jvm17-clients.options).
JPMS_OPTS=(
  -Djdk.attach.allowAttachSelf=true
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
  --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
  --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
  --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
  --add-exports java.sql/java.sql=ALL-UNNAMED
  --add-exports java.base/java.lang.ref=ALL-UNNAMED
  --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
  --add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
  --add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED
  --add-opens java.base/java.lang.module=ALL-UNNAMED
  --add-opens java.base/jdk.internal.loader=ALL-UNNAMED
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
  --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
  --add-opens java.base/jdk.internal.math=ALL-UNNAMED
  --add-opens java.base/jdk.internal.module=ALL-UNNAMED
  --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
  --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens java.base/java.io=ALL-UNNAMED
  --add-opens java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED
  --add-opens java.base/java.lang=ALL-UNNAMED
  --add-opens java.base/java.util=ALL-UNNAMED
)

launch() { # launch JAVA; prints the JVM's pid
  local java=$1 jamm
  jamm=$(find "$LIB_DIR" -name 'jamm-*.jar' | head -n 1)
  local opts=(
    # Heap: fixed size so the JVM never resizes it. No -XX:+AlwaysPreTouch
    # (bin/cassandra has it): it makes boot slower and RSS 1 GiB up front.
    "-Xms$HEAP" "-Xmx$HEAP"
    -Xss256k
    # From conf/jvm-server.options and conf/jvm17-server.options (5.0).
    -ea -da:net.openhft...
    -XX:+UseThreadPriorities
    -XX:+PerfDisableSharedMem
    -XX:+ExitOnOutOfMemoryError
    "-XX:ErrorFile=$LOG_DIR/hs_err_pid%p.log"
    -XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxTenuringThreshold=1
    -XX:G1RSetUpdatingPauseTimePercent=5 -XX:MaxGCPauseMillis=300
    -XX:InitiatingHeapOccupancyPercent=70
    -Djava.net.preferIPv4Stack=true
    "${JPMS_OPTS[@]}"
    -Dio.netty.tryReflectionSetAccessible=true
    -Dio.netty.allocator.useCacheForAllThreads=true
    -Dio.netty.allocator.maxOrder=11
    # jamm measures object sizes for memtable accounting (cassandra-env.sh).
    "-javaagent:$jamm"
    # JMX for nodetool, bound to localhost only, as cassandra-env.sh does.
    "-Dcassandra.jmx.local.port=$JMX_PORT"
    -Dcom.sun.management.jmxremote.authenticate=false
    # Our config, dirs and logging.
    "-Dcassandra.config=$(file_url "$CONF_DIR/cassandra.yaml")"
    "-Dcassandra.storagedir=$DATA_DIR"
    "-Dcassandra.logdir=$LOG_DIR"
    "-Dcassandra.triggers_dir=$DATA_DIR/triggers"
    "-Dlogback.configurationFile=$CONF_DIR/logback.xml"
    # Native libraries (JNA, netty) unpack into java.io.tmpdir; keep them off
    # /tmp, which may be noexec or shared.
    "-Djava.io.tmpdir=$DATA_DIR/tmp"
    # Keep stdout/stderr open (they go to stdout.log); the daemon removes the
    # pid file on a clean exit.
    -Dcassandra-foreground=yes
    "-Dcassandra-pidfile=$PID_FILE"
    # Fast single-node boot and stop: nobody to gossip with or wait for.
    -Dcassandra.skip_wait_for_gossip_to_settle=0
    "-Dcassandra.ring_delay_ms=$RING_DELAY_MS"
    -Dcassandra.shutdown_announce_in_ms=0
    -Dcassandra.superuser_setup_delay_ms=0
    "-Dcassandra.initial_token=$INITIAL_TOKEN"
    # Skip the ~1 s boot-time measurement of the skiplist memtable's per-row
    # overhead (5.0.9 with this JVM measures 180 bytes); it only steers
    # memtable size accounting.
    -Dcassandra.memtable.row_overhead_size=180
  )
  # The single node (not --nodes, not --secure): schema changes do not
  # flush the system tables. A fresh keyspace's migrations took 80 s on a
  # loaded 2-core machine with the flushes, 15 s without. The schema is
  # then only in the commit log until the next flush, and a node killed
  # before it replays data of columns its loaded schema lacks: such
  # mutations are skipped on start (ignorereplayerrors) instead of the node
  # refusing to start. A development and test node only: never on a
  # production node; the cluster of --nodes, whose tests kill nodes and
  # count what survives, keeps the flushes. CASSANDRA_FAST_SCHEMA=0 turns
  # it off.
  if [ "${CASSANDRA_FAST_SCHEMA:-1}" = 1 ]; then
    opts+=(-Dcassandra.unsafesystem=true -Dcassandra.commitlog.ignorereplayerrors=true)
  fi
  # shellcheck disable=SC2206 # word splitting is the documented contract
  [ -n "${CASSANDRA_JVM_OPTS:-}" ] && opts+=(${CASSANDRA_JVM_OPTS})

  [ -f "$LOG_DIR/stdout.log" ] && mv -f "$LOG_DIR/stdout.log" "$LOG_DIR/stdout.log.1"
  # setsid + nohup: its own session, so Ctrl-C in the terminal, the end of
  # `make`, or a closed terminal does not take the node down. In a
  # non-interactive shell the background child is no process-group leader,
  # so setsid execs in place and $! is the JVM's own pid. glibc arenas are
  # capped as cassandra-env.sh does, to bound native memory. Lock fds 8 and 9
  # are closed so the JVM does not inherit our locks.
  local setsid=() nolock=()
  command -v setsid >/dev/null 2>&1 && setsid=(setsid)
  # Cassandra always calls mlockall(MCL_CURRENT). For a normal user it fails
  # (RLIMIT_MEMLOCK) with one warning; as root (CI) it succeeds, which faults
  # in and pins the whole heap: ~2 s more boot and ~1.5 GB resident at once.
  # A dev node does not need that, so make root behave like a user: a low
  # soft memlock limit, and no CAP_IPC_LOCK (which would bypass the limit).
  if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 &&
    setpriv --bounding-set=-ipc_lock true 2>/dev/null; then
    nolock=(setpriv --bounding-set=-ipc_lock)
  fi
  (
    cd "$DATA_DIR"
    ulimit -S -l 64 2>/dev/null || true
    MALLOC_ARENA_MAX=4 exec ${setsid[@]+"${setsid[@]}"} nohup ${nolock[@]+"${nolock[@]}"} "$java" "${opts[@]}" \
      -cp "$CONF_DIR:$LIB_DIR/*" org.apache.cassandra.service.CassandraDaemon \
      </dev/null >"$LOG_DIR/stdout.log" 2>&1 8>&- 9>&-
  ) &
  echo $!
}

show_logs() {
  local f
  for f in "$LOG_DIR/system.log" "$LOG_DIR/stdout.log"; do
    [ -s "$f" ] || continue
    printf '\n----- last 40 lines of %s -----\n' "$f" >&2
    tail -n 40 "$f" >&2
  done
}

# Poll CQL until it answers, the JVM dies, or START_TIMEOUT passes.
wait_ready() { # wait_ready PID STARTED_MS
  local pid=$1 started=$2 rc
  while :; do
    rc=0
    cql_ready 2s || rc=$?
    if [ "$rc" -eq 0 ]; then
      say "Cassandra $CASSANDRA_VERSION ready on $HOST:$NATIVE_PORT in $(elapsed_since "$started") s" \
        "(pid $pid, data $DATA_DIR, log $LOG_DIR/system.log)"
      return 0
    fi
    # 1 means "not answering (yet)"; anything else is cqlping itself failing,
    # and polling on would only hide that for START_TIMEOUT seconds.
    [ "$rc" -eq 1 ] || die "scripts/cqlping failed (exit $rc) while polling $HOST:$NATIVE_PORT"
    if ! alive "$pid"; then
      rm -f "$PID_FILE"
      show_logs
      die "Cassandra (pid $pid) exited during startup; logs above, full logs in $LOG_DIR"
    fi
    if [ $(($(now_ms) - started)) -ge $((START_TIMEOUT * 1000)) ]; then
      show_logs
      "$CQLPING" -host "$HOST" -port "$NATIVE_PORT" -timeout 2s >/dev/null || true
      die "Cassandra (pid $pid) did not answer CQL on $HOST:$NATIVE_PORT within ${START_TIMEOUT} s; it is still running (scripts/cassandra.sh stop)"
    fi
    sleep 0.5
  done
}

cmd_start() {
  # On a fresh machine both the Maven fetch (network) and the first cqlping
  # build (compiling gocql, ~25 s with cold Go caches) are slow: overlap them.
  local build_pid=
  if ! cqlping_built; then
    build_cqlping &
    build_pid=$!
  fi
  cmd_fetch
  if [ -n "$build_pid" ]; then
    wait "$build_pid" || exit 1 # build_cqlping already said why
  fi

  if cql_ready 5s; then
    local pid
    if pid=$(our_pid); then
      say "reusing Cassandra already running on $HOST:$NATIVE_PORT (pid $pid, data $DATA_DIR)"
    else
      say "reusing Cassandra already running on $HOST:$NATIVE_PORT (not started from $DATA_DIR)"
    fi
    return 0
  fi

  local started pid
  started=$(now_ms)
  mkdir -p "$DATA_DIR"
  lock 9 "$DATA_DIR/.start.lock"

  # Ours, but still booting (another run launched it): just wait for it.
  if pid=$(our_pid); then
    say "Cassandra (pid $pid) is already starting from $DATA_DIR; waiting for CQL ..."
    wait_ready "$pid" "$started"
    return 0
  fi
  # Someone else's node on our port that does not answer CQL yet: maybe it is
  # booting too. Starting a second JVM would only fail to bind, so wait.
  if port_open; then
    say "something listens on $HOST:$NATIVE_PORT but does not answer CQL yet; waiting up to ${START_TIMEOUT} s ..."
    if "$CQLPING" -q -host "$HOST" -port "$NATIVE_PORT" -wait "${START_TIMEOUT}s"; then
      say "reusing Cassandra already running on $HOST:$NATIVE_PORT (not started from $DATA_DIR)"
      return 0
    fi
    die "$HOST:$NATIVE_PORT is taken by something that does not answer CQL"
  fi
  rm -f "$PID_FILE"

  local java
  java=$(find_java)
  [ -z "$SECURE" ] || make_certs
  write_config
  say "starting Cassandra $CASSANDRA_VERSION (heap $HEAP, Java $(java_major "$java"), data $DATA_DIR) ..."
  pid=$(launch "$java")
  echo "$pid" >"$PID_FILE"
  wait_ready "$pid" "$started"
}

cmd_stop() {
  local pid
  if ! pid=$(our_pid); then
    rm -f "$PID_FILE"
    if [ -x "$CQLPING" ] && cql_ready 2s; then
      say "not stopping Cassandra on $HOST:$NATIVE_PORT: it was not started from $DATA_DIR"
    else
      say "Cassandra is not running (nothing to stop)"
    fi
    return 0
  fi
  local started
  started=$(now_ms)
  say "stopping Cassandra (pid $pid) ..."
  # SIGTERM runs Cassandra's shutdown hook: it drains (flushes memtables and
  # the commit log), so a restart replays nothing and loses nothing.
  kill -TERM "$pid" 2>/dev/null || true
  while alive "$pid"; do
    if [ $(($(now_ms) - started)) -ge $((STOP_TIMEOUT * 1000)) ]; then
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.5
      rm -f "$PID_FILE"
      say "Cassandra (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT} s; killed it with SIGKILL"
      return 0
    fi
    sleep 0.2
  done
  rm -f "$PID_FILE"
  say "stopped Cassandra (pid $pid) in $(elapsed_since "$started") s"
}

cmd_status() {
  build_cqlping
  local pid
  if pid=$(our_pid); then
    if cql_ready 2s; then
      say "running: pid $pid, CQL on $HOST:$NATIVE_PORT, data $DATA_DIR"
    else
      say "running (starting, CQL not answering yet): pid $pid, data $DATA_DIR"
    fi
    return 0
  fi
  if cql_ready 2s; then
    say "running on $HOST:$NATIVE_PORT (not started from $DATA_DIR)"
    return 0
  fi
  say "not running"
  return 3
}

cmd_nodetool() {
  have_jars || die "Cassandra is not fetched yet (scripts/cassandra.sh fetch)"
  local java tools_log=$INSTALL_DIR/logback-tools.xml
  java=$(find_java)
  # Without a logback config every client library logs at DEBUG to stdout;
  # this mirrors Cassandra's conf/logback-tools.xml (warnings to stderr).
  if [ ! -f "$tools_log" ]; then
    cat >"$tools_log" <<'EOF'
<configuration>
  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%-5level %date{"HH:mm:ss,SSS"} %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="STDERR" /></root>
</configuration>
EOF
  fi
  exec "$java" -Xmx256m "${JPMS_OPTS[@]}" -cp "$LIB_DIR/*" \
    "-Dlogback.configurationFile=$tools_log" \
    org.apache.cassandra.tools.NodeTool -h 127.0.0.1 -p "$JMX_PORT" "$@"
}

usage() {
  echo "usage: scripts/cassandra.sh {fetch|start|stop|status|nodetool ARGS...}" >&2
  echo "       scripts/cassandra.sh {start|stop|status} --nodes 3 | {start|stop|status} --node N | nodetool --node N ARGS..." >&2
  echo "       scripts/cassandra.sh {start|stop|status} --secure | nodetool --secure ARGS..." >&2
  echo "(see the comment at the top of scripts/cassandra.sh)" >&2
  exit 2
}

# The three nodes of --nodes: node N listens on 127.0.0.(N+1) and owns a
# third of the Murmur3 ring.
readonly CLUSTER_NODES=3
CLUSTER_TOKENS=(-9223372036854775808 -3074457345618258603 3074457345618258602)

# on_node N CMD...: runs this script's CMD as node N of the cluster.
on_node() {
  local n=$1
  shift
  case $n in [1-3]) ;; *) die "--node takes 1, 2 or 3" ;; esac
  CASSANDRA_FAST_SCHEMA=0 \
    CASSANDRA_HOST=127.0.0.$((n + 1)) \
    CASSANDRA_DATA_DIR=$CLUSTER_DIR/node$n \
    CASSANDRA_JMX_PORT=$((7200 + n)) \
    CASSANDRA_SEEDS=127.0.0.2:$STORAGE_PORT \
    CASSANDRA_INITIAL_TOKEN=${CLUSTER_TOKENS[$((n - 1))]} \
    CASSANDRA_DC=dc1 \
    CASSANDRA_RING_DELAY_MS=${CASSANDRA_RING_DELAY_MS:-5000} \
    CASSANDRA_HEAP=${CASSANDRA_HEAP:-768M} \
    "$SCRIPT_DIR/cassandra.sh" "$@"
}

# on_secure CMD...: runs this script's CMD as the --secure node.
on_secure() {
  CASSANDRA_SECURE=1 \
    CASSANDRA_FAST_SCHEMA=0 \
    CASSANDRA_HOST=127.0.0.5 \
    CASSANDRA_DATA_DIR=$SECURE_DIR \
    CASSANDRA_JMX_PORT=7205 \
    CASSANDRA_SEEDS=127.0.0.5:$STORAGE_PORT \
    CASSANDRA_HEAP=${CASSANDRA_HEAP:-512M} \
    "$SCRIPT_DIR/cassandra.sh" "$@"
}

cluster() { # cluster start|stop|status
  local n rc=0
  case $1 in
    start) for n in $(seq 1 "$CLUSTER_NODES"); do on_node "$n" start; done ;;
    stop) for n in $(seq "$CLUSTER_NODES" -1 1); do on_node "$n" stop; done ;;
    status)
      for n in $(seq 1 "$CLUSTER_NODES"); do
        printf 'node %s (127.0.0.%s): ' "$n" $((n + 1))
        on_node "$n" status || rc=$?
      done
      return "$rc"
      ;;
  esac
}

case ${1:-} in
  fetch)
    if have_jars; then say "Cassandra $CASSANDRA_VERSION already cached in $LIB_DIR"; else cmd_fetch; fi
    ;;
  start | stop | status)
    if [ "${2:-}" = --nodes ]; then
      [ "${3:-}" = "$CLUSTER_NODES" ] || die "--nodes takes $CLUSTER_NODES"
      cluster "$1"
    elif [ "${2:-}" = --node ]; then
      on_node "${3:-}" "$1"
    elif [ "${2:-}" = --secure ] && [ $# -eq 2 ]; then
      on_secure "$1"
    elif [ $# -gt 1 ]; then
      usage
    else
      "cmd_$1"
    fi
    ;;
  nodetool)
    shift
    if [ "${1:-}" = --node ]; then
      n=${2:-}
      shift 2 || usage
      on_node "$n" nodetool "$@"
    elif [ "${1:-}" = --secure ]; then
      shift
      on_secure nodetool "$@"
    else
      cmd_nodetool "$@"
    fi
    ;;
  *) usage ;;
esac
