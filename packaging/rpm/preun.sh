# ibpm-agentx %preun: stop and disable the unit when the package goes away
# (not on upgrade).
if [ "$1" -eq 0 ] && [ -d /run/systemd/system ]; then
    systemctl --no-reload disable --now ibpm-agentx.service >/dev/null 2>&1 || :
fi
exit 0
