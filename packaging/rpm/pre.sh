# ibpm-agentx %pre: the system user the agent runs as (the same entry as
# /usr/lib/sysusers.d/ibpm-agentx.conf, for systems that create users
# before the package's files are in place).
getent group ibpm-agentx >/dev/null || groupadd -r ibpm-agentx
getent passwd ibpm-agentx >/dev/null || \
    useradd -r -g ibpm-agentx -d / -s /sbin/nologin -c "ibpm-agentx IB-PM-MIB subagent" ibpm-agentx
exit 0
