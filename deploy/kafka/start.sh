#!/usr/bin/env bash
# Start a real single-node Apache Kafka broker (KRaft, combined broker+controller)
# for tests and local development. No Docker and no manual install: the broker jars
# are resolved once with Maven (deploy/kafka/pom.xml) into a cache outside the repo.
#
# Usage: deploy/kafka/start.sh [--data DIR] [--port N] [--timeout SECONDS]
#                              [--owner-pid PID] [--resolve-only]
#
#   --data DIR       broker state (config, KRaft metadata, topic logs, broker.log, pid
#                    file). Default: $SESSIONQ_KAFKA_DATA or <repo>/.sessionq/kafka.
#                    An already formatted DIR is reused (its topics survive restarts).
#   --port N         PLAINTEXT listener port on 127.0.0.1. Default: the port this
#                    data dir used last time (DIR/port), so clients pointed at it
#                    reconnect after a restart; on a first start, the first free port
#                    from 19092 on (19092-19191), kept outside this machine's ephemeral
#                    range (/proc/sys/net/ipv4/ip_local_port_range): an OS-picked port
#                    lies inside it, and after a stop a reconnecting client's source
#                    port can take it, so a restart finds it taken. A port that is
#                    taken fails in one line naming it (start.sh never silently
#                    moves). The controller port is the next free one of that window.
#   --timeout S      readiness deadline in seconds (default 60).
#   --owner-pid PID  stop the broker when process PID exits (used by the pytest
#                    fixture so a killed test run does not leave a broker behind).
#   --resolve-only   only make sure the jars are in the cache, then exit.
#
# stdout: "pid=...", "data=...", "log=..." and, as the last line, exactly
# "bootstrap=127.0.0.1:PORT"; DIR/bootstrap holds the address alone (the README's
# quickstart: export SESSIONQ_BOOTSTRAP=$(cat DIR/bootstrap)). Progress and errors go
# to stderr.
#
# Environment: SESSIONQ_KAFKA_VERSION (default 4.4.0), SESSIONQ_KAFKA_CACHE (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/sessionq), SESSIONQ_KAFKA_HEAP_OPTS (default
# "-Xms256m -Xmx512m"), SESSIONQ_PYTHON (default python3; stdlib only),
# SESSIONQ_KAFKA_MVN_ARGS (extra Maven arguments, e.g. -Dlog4j.version=...),
# JAVA_HOME (java on PATH otherwise; Java 17+).
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/../.." && pwd)

KAFKA_VERSION=${SESSIONQ_KAFKA_VERSION:-4.4.0}
CACHE_ROOT=${SESSIONQ_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sessionq}
KAFKA_HOME="$CACHE_ROOT/kafka-$KAFKA_VERSION"
DATA_DIR=${SESSIONQ_KAFKA_DATA:-$REPO_ROOT/.sessionq/kafka}
PYTHON=${SESSIONQ_PYTHON:-python3}
HEAP_OPTS=${SESSIONQ_KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}
PORT=""
DEFAULT_PORT=19092  # the first of DEFAULT_PORTS candidates for a first start
DEFAULT_PORTS=100
TIMEOUT=60
OWNER_PID=""
RESOLVE_ONLY=0

log() { printf 'kafka/start.sh: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2; }

while (($#)); do
    case "$1" in
        --data) DATA_DIR=${2:?--data needs a directory}; shift 2 ;;
        --data=*) DATA_DIR=${1#*=}; shift ;;
        --port) PORT=${2:?--port needs a number}; shift 2 ;;
        --port=*) PORT=${1#*=}; shift ;;
        --timeout) TIMEOUT=${2:?--timeout needs seconds}; shift 2 ;;
        --timeout=*) TIMEOUT=${1#*=}; shift ;;
        --owner-pid) OWNER_PID=${2:?--owner-pid needs a pid}; shift 2 ;;
        --owner-pid=*) OWNER_PID=${1#*=}; shift ;;
        --resolve-only) RESOLVE_ONLY=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage; die "unknown argument: $1" ;;
    esac
done

[[ -z "$PORT" || "$PORT" =~ ^[0-9]+$ ]] || die "--port must be a number, got '$PORT'"
[[ "$PORT" == 0 ]] && PORT=""
[[ "$TIMEOUT" =~ ^[0-9]+$ ]] || die "--timeout must be whole seconds, got '$TIMEOUT'"
[[ -z "$OWNER_PID" || "$OWNER_PID" =~ ^[0-9]+$ ]] || die "--owner-pid must be a pid"

# --------------------------------------------------------------------------- jars
# Idempotent and safe against concurrent callers: resolve into a temporary sibling
# directory under a lock, then rename it into place with a completion marker.
resolve_jars() {
    [[ -f "$KAFKA_HOME/.complete" ]] && return 0
    command -v mvn >/dev/null 2>&1 \
        || die "Maven (mvn) is needed once to download Kafka $KAFKA_VERSION into $KAFKA_HOME"
    mkdir -p "$CACHE_ROOT"
    local lock="$CACHE_ROOT/.kafka-$KAFKA_VERSION.lock"
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$lock"
        flock -w 900 9 || die "timed out waiting for $lock (another resolve running?)"
        if [[ -f "$KAFKA_HOME/.complete" ]]; then exec 9>&-; return 0; fi
    fi
    local tmp start extra=()
    tmp=$(mktemp -d "$CACHE_ROOT/.kafka-$KAFKA_VERSION.XXXXXX")
    chmod 755 "$tmp"
    start=$SECONDS
    if [[ -n "${SESSIONQ_KAFKA_MVN_ARGS:-}" ]]; then
        read -r -a extra <<<"$SESSIONQ_KAFKA_MVN_ARGS"
    fi
    log "resolving Apache Kafka $KAFKA_VERSION jars into $KAFKA_HOME (first run only, ~45 MB)"
    if ! mvn -B -q -f "$SCRIPT_DIR/pom.xml" "-Dkafka.version=$KAFKA_VERSION" ${extra[@]+"${extra[@]}"} \
            dependency:copy-dependencies -DincludeScope=runtime \
            "-DoutputDirectory=$tmp/libs" >"$tmp/mvn.log" 2>&1; then
        tail -n 40 "$tmp/mvn.log" >&2 || true
        rm -rf -- "$tmp"
        die "Maven could not resolve org.apache.kafka:kafka_2.13:$KAFKA_VERSION (output above)"
    fi
    [[ -f "$tmp/libs/kafka_2.13-$KAFKA_VERSION.jar" ]] \
        || { rm -rf -- "$tmp"; die "kafka_2.13-$KAFKA_VERSION.jar missing after resolve"; }
    printf 'kafka_version=%s\nresolved_at=%s\n' "$KAFKA_VERSION" "$(date -u +%FT%TZ)" \
        >"$tmp/.complete"
    rm -rf -- "$KAFKA_HOME"
    mv -- "$tmp" "$KAFKA_HOME"
    log "resolved $(find "$KAFKA_HOME/libs" -name '*.jar' | wc -l) jars in $((SECONDS - start)) s"
    if command -v flock >/dev/null 2>&1; then exec 9>&-; fi
}

resolve_jars
if ((RESOLVE_ONLY)); then
    printf 'kafka_home=%s\n' "$KAFKA_HOME"
    exit 0
fi

JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
command -v "$JAVA" >/dev/null 2>&1 || die "java (17+) is required to run Kafka $KAFKA_VERSION"
java_major=$("$JAVA" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1 || true)
if [[ "$java_major" =~ ^[0-9]+$ ]] && ((java_major < 17)); then
    die "Kafka $KAFKA_VERSION brokers need Java 17+, $JAVA is Java $java_major (set JAVA_HOME)"
fi
command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON is required (readiness probe, stdlib only)"

mkdir -p -- "$DATA_DIR"
DATA_DIR=$(cd -- "$DATA_DIR" && pwd)
PID_FILE="$DATA_DIR/kafka.pid"
PORT_FILE="$DATA_DIR/port"
BOOTSTRAP_FILE="$DATA_DIR/bootstrap"
BROKER_LOG="$DATA_DIR/broker.log"
CONFIG="$DATA_DIR/server.properties"
LOG4J_CONFIG="$DATA_DIR/log4j2.properties"
LOG_DIR="$DATA_DIR/kraft"
CLASSPATH_GLOB="$KAFKA_HOME/libs/*"

# A broker already running on this data dir is reused rather than started twice.
is_our_broker() {  # pid
    [[ -r "/proc/$1/cmdline" ]] || { kill -0 "$1" 2>/dev/null; return; }
    tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "kafka.Kafka $CONFIG"
}
if [[ -f "$PID_FILE" ]]; then
    old_pid=$(<"$PID_FILE")
    if [[ "$old_pid" =~ ^[0-9]+$ ]] && is_our_broker "$old_pid"; then
        old_bootstrap=$(cat "$BOOTSTRAP_FILE" 2>/dev/null || true)
        if [[ -n "$PORT" && "$old_bootstrap" != "127.0.0.1:$PORT" ]]; then
            die "a broker (pid $old_pid, $old_bootstrap) already runs on $DATA_DIR; stop it first"
        fi
        log "broker already running (pid $old_pid) on $DATA_DIR"
        printf 'pid=%s\ndata=%s\nlog=%s\nbootstrap=%s\n' \
            "$old_pid" "$DATA_DIR" "$BROKER_LOG" "$old_bootstrap"
        exit 0
    fi
    rm -f -- "$PID_FILE" "$BOOTSTRAP_FILE"
fi

# Without --port, reuse the port this data dir was started on before (DIR/port).
PORT_REMEMBERED=0
if [[ -z "$PORT" && -f "$PORT_FILE" ]]; then
    remembered=$(tr -d '[:space:]' <"$PORT_FILE")
    [[ "$remembered" =~ ^[0-9]+$ ]] \
        || die "$PORT_FILE does not hold a port number ('$remembered'); fix or remove it"
    PORT=$remembered
    PORT_REMEMBERED=1
fi

port_free() {  # port -> 0 when 127.0.0.1:port can be bound now
    "$PYTHON" - "$1" <<'PY'
import socket, sys
s = socket.socket()
# As the broker does: TIME_WAIT leftovers of the last run do not count as taken.
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
PY
}
# The machine's ephemeral range (outgoing connections' source ports): a listener port
# inside it can be taken by any client while the broker is down. Where the kernel does
# not say, the union of Linux's and IANA's defaults.
EPHEMERAL_LOW=32768 EPHEMERAL_HIGH=65535
if [[ -r /proc/sys/net/ipv4/ip_local_port_range ]]; then
    read -r EPHEMERAL_LOW EPHEMERAL_HIGH </proc/sys/net/ipv4/ip_local_port_range
fi
EPHEMERAL="$EPHEMERAL_LOW-$EPHEMERAL_HIGH"
# The default window, moved below (or above) the ephemeral range when that covers it.
window_low=$DEFAULT_PORT
if ((window_low + DEFAULT_PORTS > EPHEMERAL_LOW && window_low <= EPHEMERAL_HIGH)); then
    if ((EPHEMERAL_LOW - DEFAULT_PORTS >= 1024)); then
        window_low=$((EPHEMERAL_LOW - DEFAULT_PORTS))
    else
        window_low=$((EPHEMERAL_HIGH + 1))
    fi
fi
window_high=$((window_low + DEFAULT_PORTS - 1))
((window_high <= 65535)) \
    || die "no $DEFAULT_PORTS ports lie outside the ephemeral range $EPHEMERAL: pass --port N"

if [[ -n "$PORT" ]] && ! port_free "$PORT"; then
    if ((PORT_REMEMBERED)); then
        die "port $PORT (used before by $DATA_DIR, see $PORT_FILE) is taken by another process; free it, or pass --port N to move this broker (clients must then be pointed at the new port)"
    fi
    die "port $PORT is taken by another process: pass --port N with a free port (outside the ephemeral range $EPHEMERAL, e.g. $window_low-$window_high), or free $PORT"
fi
if [[ -n "$PORT" ]] && ((PORT >= EPHEMERAL_LOW && PORT <= EPHEMERAL_HIGH)); then
    log "note: port $PORT is inside the ephemeral range $EPHEMERAL: while the broker is down a client may take it (pass --port N outside it to move)"
fi

# Free loopback ports of the default window, skipping any given. The tiny race between
# the probe and the broker binding is covered by the retry loop below.
pick_ports() {  # n [taken...] -> n distinct free ports of the window on one line, or nothing
    "$PYTHON" - "$window_low" "$window_high" "$@" <<'PY'
import socket, sys
low, high, n, taken = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
found = []
for port in range(low, high + 1):
    if str(port) in taken:
        continue
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as port_free
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    found.append(port)
    if len(found) == n:
        print(" ".join(map(str, found)))
        break
PY
}

write_config() {  # broker_port controller_port
    cat >"$CONFIG" <<EOF
# Generated by deploy/kafka/start.sh on $(date -u +%FT%TZ); rewritten on every start.
# Single-node KRaft: this JVM is both the broker and the (only) controller.
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$2
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:$1,CONTROLLER://127.0.0.1:$2
advertised.listeners=PLAINTEXT://127.0.0.1:$1
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$LOG_DIR

# One replica of everything, including the internal topics.
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
num.partitions=1

# Tests join groups all the time: no 3 s wait for more members.
group.initial.rebalance.delay.ms=0
# Topics are created explicitly (tests: topic_factory; app: its own admin calls),
# with explicit partition counts. A typo'd topic name must fail, not appear.
auto.create.topics.enable=false

# Sized for a 2-core dev box / CI machine.
num.network.threads=2
num.io.threads=4
background.threads=4
num.recovery.threads.per.data.dir=1
log.retention.hours=168
EOF
    cat >"$LOG4J_CONFIG" <<'EOF'
# Generated by deploy/kafka/start.sh: broker log to stdout (redirected to broker.log).
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
# The full config dumps of every client/config object are noise here.
logger.config.name = org.apache.kafka.common.config.AbstractConfig
logger.config.level = WARN
EOF
}

format_storage() {
    [[ -f "$LOG_DIR/meta.properties" ]] && return 0
    local cluster_id
    # A Kafka cluster id is a random 16-byte UUID in unpadded base64url (22 chars).
    cluster_id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
    log "formatting KRaft storage in $LOG_DIR (cluster id $cluster_id)"
    # --cluster-id=... form: an id may start with '-', which would parse as a flag.
    if ! "$JAVA" -cp "$CLASSPATH_GLOB" kafka.tools.StorageTool format \
            "--cluster-id=$cluster_id" --config "$CONFIG" --standalone \
            >"$DATA_DIR/format.log" 2>&1; then
        cat "$DATA_DIR/format.log" >&2
        die "kafka-storage format failed"
    fi
}

# Polls until the broker answers ApiVersions and a Metadata request that lists
# itself (i.e. it is registered and unfenced). Stdlib only, speaks the Kafka wire
# protocol directly. Exit 0 ready, 2 broker process died, 3 timed out.
wait_ready() {  # port pid timeout
    "$PYTHON" - "$@" <<'PY'
import os, socket, struct, sys, time

port, pid, timeout = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
deadline = time.monotonic() + timeout


def request(sock, api_key, version, corr, body):
    client = b"sessionq-probe"
    hdr = struct.pack(">hhih", api_key, version, corr, len(client)) + client
    msg = hdr + body
    sock.sendall(struct.pack(">i", len(msg)) + msg)
    size = struct.unpack(">i", recv(sock, 4))[0]
    data = recv(sock, size)
    if struct.unpack(">i", data[:4])[0] != corr:
        raise OSError("correlation id mismatch")
    return data[4:]


def recv(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return buf


def probe():
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.settimeout(3)
        # ApiVersions v0 (api key 18): every Kafka version answers it.
        r = request(s, 18, 0, 1, b"")
        err, n = struct.unpack(">hi", r[:6])
        if err:
            raise OSError(f"ApiVersions error {err}")
        versions = {}
        for i in range(n):
            k, lo, hi = struct.unpack(">hhh", r[6 + 6 * i: 12 + 6 * i])
            versions[k] = (lo, hi)
        lo, hi = versions.get(3, (99, -1))  # Metadata
        v = max(lo, 4)
        if v > min(hi, 8):  # v9+ is "flexible" (tagged fields): not spoken here
            return True  # broker answers but speaks only newer Metadata: accept
        # Metadata v4..v8: topics=null(all), allow_auto_topic_creation=false
        body = struct.pack(">ib", -1, 0) + (b"\x00\x00" if v >= 8 else b"")
        r = request(s, 3, v, 2, body)
        nbrokers = struct.unpack(">i", r[4:8])[0]  # after throttle_time_ms
        off, ports = 8, []
        for _ in range(nbrokers):
            off += 4  # node_id
            hlen = struct.unpack(">h", r[off: off + 2])[0]
            off += 2 + hlen
            ports.append(struct.unpack(">i", r[off: off + 4])[0])
            off += 4
            rlen = struct.unpack(">h", r[off: off + 2])[0]
            off += 2 + max(rlen, 0)
        return port in ports


last = "no attempt"
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit(2)
    except PermissionError:
        pass
    try:
        if probe():
            sys.exit(0)
        last = "metadata does not list the broker yet"
    except (OSError, struct.error) as e:
        last = f"{type(e).__name__}: {e}"
    time.sleep(0.2)
print(f"last probe result: {last}", file=sys.stderr)
sys.exit(3)
PY
}

is_port_clash() { grep -qE 'Address already in use|BindException' "$BROKER_LOG" 2>/dev/null; }

start_broker() {  # broker_port controller_port -> sets BROKER_PID
    # setsid: own session, so Ctrl-C in the caller's terminal or the end of the
    # calling shell does not kill the broker; stop it with stop.sh.
    # shellcheck disable=SC2086  # HEAP_OPTS is deliberately word-split
    setsid "$JAVA" $HEAP_OPTS \
        -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError \
        -Djava.awt.headless=true \
        "-Dlog4j2.configurationFile=$LOG4J_CONFIG" \
        "-Dkafka.logs.dir=$DATA_DIR" \
        -cp "$CLASSPATH_GLOB" kafka.Kafka "$CONFIG" \
        >"$BROKER_LOG" 2>&1 </dev/null &
    BROKER_PID=$!
    printf '%s\n' "$BROKER_PID" >"$PID_FILE"
}

stop_pid() {  # pid: TERM, short wait, KILL
    kill -TERM "$1" 2>/dev/null || return 0
    for _ in $(seq 1 50); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.2; done
    kill -KILL "$1" 2>/dev/null || true
}

start_watchdog() {
    [[ -n "$OWNER_PID" ]] || return 0
    # Watchdog: when the owner (e.g. the pytest process) goes away, stop the broker.
    # Started before the readiness wait, so even a start.sh killed mid-startup does
    # not leak the JVM past its owner. Detached from our stdout so callers reading
    # our output are not held open.
    (
        trap '' HUP
        while kill -0 "$OWNER_PID" 2>/dev/null && kill -0 "$BROKER_PID" 2>/dev/null; do
            sleep 2
        done
        if kill -0 "$BROKER_PID" 2>/dev/null; then
            stop_pid "$BROKER_PID"
            rm -f -- "$PID_FILE" "$BOOTSTRAP_FILE"
        fi
    ) </dev/null >/dev/null 2>&1 &
    disown
}

# Ctrl-C / TERM while waiting: do not leave a half-started broker behind.
on_interrupt() {
    if [[ -n "${BROKER_PID:-}" ]]; then
        stop_pid "$BROKER_PID"
        rm -f -- "$PID_FILE"
    fi
    exit 130
}
trap on_interrupt INT TERM

t_start=$SECONDS
attempts=1
[[ -z "$PORT" ]] && attempts=3   # picked ports may race with another start.sh
for ((attempt = 1; attempt <= attempts; attempt++)); do
    broker_port="" controller_port=""
    if [[ -n "$PORT" ]]; then
        broker_port=$PORT
        controller_port=$(pick_ports 1 "$PORT")
    else
        read -r broker_port controller_port < <(pick_ports 2) || true
    fi
    [[ "$broker_port" =~ ^[0-9]+$ && "$controller_port" =~ ^[0-9]+$ ]] \
        || die "no free ports in $window_low-$window_high (outside the ephemeral range $EPHEMERAL): pass --port N with a free port"
    write_config "$broker_port" "$controller_port"
    format_storage
    log "starting Kafka $KAFKA_VERSION on 127.0.0.1:$broker_port (controller $controller_port)"
    start_broker "$broker_port" "$controller_port"
    start_watchdog
    rc=0
    wait_ready "$broker_port" "$BROKER_PID" "$TIMEOUT" || rc=$?
    if ((rc == 0)); then break; fi
    # Keep the log as it was when we gave up, not the shutdown noise that follows.
    log_tail=$(tail -n 60 "$BROKER_LOG" 2>/dev/null || true)
    stop_pid "$BROKER_PID"
    rm -f -- "$PID_FILE"
    if ((attempt < attempts)) && is_port_clash; then
        log "port clash, retrying with new ports"
        continue
    fi
    log "broker log tail ($BROKER_LOG):"
    printf '%s\n' "$log_tail" >&2
    if ((rc == 2)); then die "broker process exited during startup (log tail above)"; fi
    die "broker not ready within ${TIMEOUT}s (log tail above)"
done

trap - INT TERM
printf '127.0.0.1:%s\n' "$broker_port" >"$BOOTSTRAP_FILE"
printf '%s\n' "$broker_port" >"$PORT_FILE"

log "ready in $((SECONDS - t_start)) s (pid $BROKER_PID, log $BROKER_LOG)"
printf 'pid=%s\ndata=%s\nlog=%s\nbootstrap=127.0.0.1:%s\n' \
    "$BROKER_PID" "$DATA_DIR" "$BROKER_LOG" "$broker_port"
