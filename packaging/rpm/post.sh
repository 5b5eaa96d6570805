# ibpm-agentx %post: the umad devices for the agent's group; the unit
# enabled or not as the system's presets say (first install only).
if [ -d /run/udev ] && command -v udevadm >/dev/null 2>&1; then
    udevadm control --reload-rules || :
    udevadm trigger --subsystem-match=infiniband_mad || :
fi
if [ "$1" -eq 1 ] && [ -d /run/systemd/system ]; then
    systemctl --no-reload preset ibpm-agentx.service >/dev/null 2>&1 || :
fi
exit 0
