#!/bin/sh
# roles/sglang_firewall (docs/firewall.md, The watch): run by <sglang_firewall_service_name>-watch.service
# every sglang_firewall_watch_interval_sec. Arguments: TABLE RULESET SERVER_UNIT.
# - table inet TABLE loaded: nothing to do, nothing said;
# - missing (nft flush ruleset, nft delete table): load RULESET again, the file the firewall unit
#   loads (the server keeps serving, filtered again), and say so;
# - RULESET does not load: stop SERVER_UNIT if it is running (fail closed, as its drop-in does at
#   start) and say why.
# A line's <N> prefix is its syslog level for the journal (4 warning, 3 error).
set -u
table=$1 ruleset=$2 server=$3

nft list table inet "$table" >/dev/null 2>&1 && exit 0

if error=$(nft -f "$ruleset" 2>&1); then
    echo "<4>sglang_firewall: table inet $table was missing from the running ruleset (nft flush ruleset or nft delete table?): restored it from $ruleset; $server kept running"
    exit 0
fi
echo "<3>sglang_firewall: table inet $table is missing and $ruleset did not load: $(echo "$error" | tr '\n' ' ')"
if systemctl is-active --quiet "$server"; then
    systemctl stop "$server" \
        && echo "<3>sglang_firewall: stopped $server so that its port is not served unfiltered (fail closed); fix $ruleset (deploy.yml --tags firewall), then start $server"
fi
exit 1
