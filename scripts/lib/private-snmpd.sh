# Sourced by scripts: a private snmpd on 127.0.0.1:$port with its AgentX
# socket at $dir/master (no root port, no system service).
#   start_private_snmpd DIR PORT   sets snmpd_pid; fails if it does not come up
#   stop_pid PID                   SIGTERM, then wait

start_private_snmpd() {
    local dir=$1 port=$2
    mkdir -p "$dir/persist"
    cat > "$dir/snmpd.conf" <<CONF
agentAddress udp:127.0.0.1:$port
master agentx
agentXSocket unix:$dir/master
agentXPerms 0660 0755 0 nogroup
rocommunity public 127.0.0.1
rwcommunity private 127.0.0.1
dontLogTCPWrappersConnects yes
CONF
    SNMP_PERSISTENT_DIR=$dir/persist /usr/sbin/snmpd -f -Lf "$dir/snmpd.log" -C -c "$dir/snmpd.conf" \
        -m '' -I -smux -p "$dir/snmpd.pid" &
    snmpd_pid=$!
    for _ in $(seq 50); do [ -S "$dir/master" ] && return 0; sleep 0.1; done
    echo "snmpd did not start:" >&2
    cat "$dir/snmpd.log" >&2
    return 1
}

stop_pid() {  # a process killed by the signal waits with status 143: not an error here
    [ -n "${1:-}" ] || return 0
    if kill "$1" 2>/dev/null; then wait "$1" 2>/dev/null || true; fi
    return 0
}
