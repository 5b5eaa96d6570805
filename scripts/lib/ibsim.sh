# Sourced by scripts: an ibsim fabric on a unix socket of its own, with
# LIDs assigned by one pass of opensm, for tools run under umad2sim.
#   start_ibsim_fabric WORK NETFILE SOCK   starts ibsim (appending its PIDs
#                                          to the caller's `pids` array),
#                                          waits for it, runs `opensm -o`;
#                                          fails if either does not come up
#   UMAD2SIM                               the library to LD_PRELOAD
UMAD2SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so

start_ibsim_fabric() {
    local work=$1 net=$2 sock=$3
    [[ -e $UMAD2SIM ]] || { echo "$UMAD2SIM missing (install ibsim-utils)" >&2; return 2; }
    local tool
    for tool in ibsim opensm; do
        command -v "$tool" > /dev/null || { echo "$tool missing (see scripts/install-deps)" >&2; return 2; }
    done
    local nodes switches ports
    nodes=$(grep -c '^\(Hca\|Ca\|Switch\)' "$net")
    switches=$(grep -c '^Switch' "$net")
    ports=$(grep -c '^\[' "$net")
    local max_nodes=$((nodes + 1024 > 16384 ? nodes + 1024 : 16384))
    local max_switches=$((switches + 64 > 512 ? switches + 64 : 512))
    local max_ports=$((4 * ports > 262144 ? 4 * ports : 262144))
    mkfifo "$work/console.fifo"
    # Holds the console open: on EOF ibsim spins.
    sleep 1000000 > "$work/console.fifo" &
    pids+=($!)
    IBSIM_SOCKNAME=$sock ibsim -s -N "$max_nodes" -S "$max_switches" -P "$max_ports" "$net" \
        < "$work/console.fifo" > "$work/ibsim.out" 2>&1 &
    local ibsim_pid=$!
    pids+=("$ibsim_pid")
    for _ in $(seq 3000); do
        grep -q "Network simulator ready" "$work/ibsim.out" 2>/dev/null && break
        kill -0 "$ibsim_pid" 2>/dev/null || { tail "$work/ibsim.out" >&2; return 1; }
        sleep 0.1
    done
    grep -q "Network simulator ready" "$work/ibsim.out" || { echo "ibsim not ready" >&2; return 1; }
    mkdir -p "$work/osm"
    LD_PRELOAD=$UMAD2SIM IBSIM_SOCKNAME=$sock OSM_TMP_DIR=$work/osm OSM_CACHE_DIR=$work/osm \
        timeout 600 opensm -o -f "$work/osm/osm.log" > /dev/null 2>&1 ||
        { echo "opensm -o failed" >&2; tail "$work/osm/osm.log" >&2; return 1; }
}
