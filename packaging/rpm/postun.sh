# ibpm-agentx %postun: restart a running agent after an upgrade.
if [ "$1" -ge 1 ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || :
    systemctl try-restart ibpm-agentx.service >/dev/null 2>&1 || :
fi
exit 0
