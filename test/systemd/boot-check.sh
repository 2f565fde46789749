#!/usr/bin/env bash
# Boots a throwaway copy of this machine under a real systemd (systemd-nspawn on a
# tmpfs overlay of /), installs ZINO there with `zino install-systemd --now` from
# this checkout, and checks that the hardened units work: every service active and
# ready, ask through exc's sandbox (the landlock view: the host's PID 1, owners and
# addresses, no unix sockets), group access, what code run by exc can reach (with
# and without a sandbox), the privileged runner (idle without [approval]
# host_user; with host_user = "root": exc reaching its socket through
# SupplementaryGroups=zino-runner, a host run approved from
# another connection editing /etc as root, denied and unattended runs refused and
# recorded, a forged or replayed run refused by the runner, EACCES for anyone else
# and for exc without the group), rtr reaching an LLM over TCP, exit 78 not
# restarted, reload, a crash restarted, upgrade, uninstall and --purge. It also
# prints `systemd-analyze security` of each unit as installed ("exposure:" lines).
# Nothing on this machine changes: every write goes to the overlay.
#
#   sudo bash test/systemd/boot-check.sh        (about 90 seconds)
#   sudo BOOT_CHECK_LOGS=/tmp/boot bash test/systemd/boot-check.sh
#                                               (keeps the result, ZINO's journal
#                                                and the full security tables)
#
# Needs root, systemd-nspawn (apt-get install systemd-container), overlayfs, and a
# built checkout (npm ci && npm run build). systemd need not be PID 1 here: it runs
# in a Firecracker VM with a hybrid cgroup tree and no init system. Prints
# PASS/FAIL lines; exits 1 on a FAIL, 2 when it cannot run at all.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
fail() {
  echo "boot-check: $*" >&2
  exit 2
}
[ "$(id -u)" -eq 0 ] || fail "must run as root"
command -v systemd-nspawn >/dev/null || fail "needs systemd-nspawn (apt-get install systemd-container)"
[ -f "$here/dist/bundle/zino.js" ] || fail "build first: npm ci && npm run build"

work=$(mktemp -d /tmp/zino-boot-XXXXXX)
cleanup() {
  umount "$work/merged" 2>/dev/null || true
  umount "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mount -t tmpfs -o size=2g tmpfs "$work"
mkdir "$work/upper" "$work/work" "$work/merged" "$work/out"
mount -t overlay overlay -o "lowerdir=/,upperdir=$work/upper,workdir=$work/work" "$work/merged"
root="$work/merged"

mkdir -p "$root/check"
cat > "$root/etc/systemd/system/zino-check.target" <<'EOF'
[Unit]
Description=ZINO boot check
Wants=zino-check.service
EOF
cat > "$root/etc/systemd/system/zino-check.service" <<'EOF'
[Unit]
Description=ZINO boot check script
[Service]
Type=oneshot
ExecStart=/bin/bash /check/check.sh
ExecStopPost=/bin/systemctl --no-block poweroff
StandardOutput=append:/out/result.txt
StandardError=inherit
TimeoutStartSec=400
EOF

# One request on a socket; prints every frame it gets back as one JSON line. With a
# third argument, writes the id of an approval_required frame to that file (the
# request then waits for a person's answer on another connection).
cat > "$root/check/frame.js" <<'EOF'
const net = require('node:net');
const fs = require('node:fs');
const [socket, request, idFile] = process.argv.slice(2);
const s = net.createConnection(socket);
s.on('connect', () => { const b = Buffer.from(request); const h = Buffer.alloc(4); h.writeUInt32BE(b.length); s.write(Buffer.concat([h, b])); });
let d = Buffer.alloc(0);
s.on('data', (c) => {
  d = Buffer.concat([d, c]);
  while (d.length >= 4 && d.length >= 4 + d.readUInt32BE(0)) {
    const frame = JSON.parse(d.subarray(4, 4 + d.readUInt32BE(0)));
    d = d.subarray(4 + d.readUInt32BE(0));
    console.log(JSON.stringify(frame));
    if (frame.type === 'approval_required' && idFile) fs.writeFileSync(idFile, frame.id);
  }
});
s.on('error', (e) => console.log(JSON.stringify({ type: 'socket_error', code: e.code })));
EOF

# One execute request to exc: prints sandboxed=, then stdout and stderr (or the error frame).
cat > "$root/check/exc.js" <<'EOF'
const net = require('node:net');
const code = require('node:fs').readFileSync(process.argv[2], 'utf8');
const s = net.createConnection('/run/zino/exc.sock');
s.on('connect', () => { const b = Buffer.from(JSON.stringify({ type: 'execute', executor: 'bash', code, host: process.argv[3] === 'host' })); const h = Buffer.alloc(4); h.writeUInt32BE(b.length); s.write(Buffer.concat([h, b])); });
let d = Buffer.alloc(0);
s.on('data', (c) => { d = Buffer.concat([d, c]); if (d.length >= 4 && d.length >= 4 + d.readUInt32BE(0)) { const r = JSON.parse(d.subarray(4, 4 + d.readUInt32BE(0))); if (r.type === 'error') console.log(`error=${r.code} ${r.message}`); else { console.log(`sandboxed=${r.sandboxed}`); console.log(r.stdout + r.stderr); } s.destroy(); } });
s.on('error', (e) => console.log('ERR', e.code));
EOF

# What code run by exc tries; any LEAK line is a failure.
cat > "$root/check/probe.sh" <<'EOF'
cat /etc/zino/zino.env >/dev/null 2>&1 && echo "LEAK: read the key file"
ls /var/lib/zino/history >/dev/null 2>&1 && echo "LEAK: listed mem's data"
timeout 3 bash -c 'echo > /dev/tcp/127.0.0.1/8099' 2>/dev/null && echo "LEAK: TCP to 127.0.0.1"
python3 -c "import socket; socket.create_connection(('127.0.0.1', 8099), 2)" 2>/dev/null && echo "LEAK: python TCP"
touch /opt/zino/x 2>/dev/null && echo "LEAK: wrote the prefix"
touch /etc/x 2>/dev/null && echo "LEAK: wrote /etc"
ls /root >/dev/null 2>&1 && echo "LEAK: listed /root"
touch ./x && echo "workdir writable"
EOF

# What a run sees of the host, compared with the host's own view (run by check.sh as root).
cat > "$root/check/view.sh" <<'EOF'
echo "pid1=$(ps -p 1 -o comm=)"
stat -c '%n %U:%G %a' /etc/passwd /etc/shadow /usr/bin/passwd
ip -o addr show | awk '{print "addr", $2, $4}'
EOF

# A run connecting to the daemon's socket (refused in the landlock view).
cat > "$root/check/unix.sh" <<'EOF'
python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('/run/zino/daemon.sock')" 2>&1 && echo "LEAK: connected"
echo "unix probe done"
EOF

cat > "$root/check/check.sh" <<'EOF'
set -u
units="zino-daemon zino-rtr zino-agr zino-sys zino-exc zino-mem zino-ctx"
audit=/var/log/zino/audit.jsonl
pass() { echo "PASS: $*"; }
nope() { echo "FAIL: $*"; }
# expect WHAT COMMAND...: PASS when the command succeeds; else FAIL with the end of its output.
expect() {
  local what=$1
  shift
  if "$@" >/tmp/out 2>&1; then pass "$what"; else nope "$what: $(tail -8 /tmp/out | tr '\n' ' ')"; fi
}
config() { sed -i "$1" /etc/zino/ZINO.toml; }
# The check restarts exc more often than systemd's default start limit (5 starts in
# 10 s) allows; reset-failed clears the count, so each restart is a fresh start.
restart() {
  systemctl reset-failed "$@"
  systemctl restart "$@" || nope "systemctl restart $*: $(systemctl status --no-pager -n 5 "$@" | tail -5 | tr '\n' ' ')"
}
active_within() { for _ in $(seq 100); do systemctl is-active --quiet "$1" && return 0; sleep 0.1; done; return 1; }
# prop_within UNIT PROPERTY VALUE: waits (up to 10 s) until systemctl shows that value.
prop_within() { for _ in $(seq 100); do [ "$(systemctl show "$1" -p "$2" --value)" = "$3" ] && return 0; sleep 0.1; done; return 1; }
file_within() { for _ in $(seq 300); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }
# The last audit line matching a jq filter.
audit_last() { jq -c "select($1)" "$audit" | tail -1; }
echo "env: kernel $(uname -r), $(systemctl --version | head -1), node $(node --version)"

/src/zino uninstall-systemd --purge >/dev/null 2>&1 || true
expect "install-systemd --now on a running systemd" /src/zino install-systemd --now
expect "every service is active" systemctl is-active $units
expect "/run/zino is 0750 zino:zino" test "$(stat -c '%a %U:%G' /run/zino)" = "750 zino:zino"
expect "every socket is 0660 zino:zino" sh -c 'for s in /run/zino/*.sock; do [ "$(stat -c "%a %U:%G" "$s")" = "660 zino:zino" ] || exit 1; done'
expect "/etc/zino is 0750 and its files 0640 root:zino" sh -c '[ "$(stat -c "%a %U:%G" /etc/zino /etc/zino/ZINO.toml /etc/zino/zino.env | tr "\n" " ")" = "750 root:zino 640 root:zino 640 root:zino " ]'
for u in $units zino-runner zino-http; do
  [ -e "/etc/systemd/system/$u.service" ] || continue
  systemd-analyze security --no-pager "$u.service" >"/out/security-$u.txt" 2>&1
  echo "exposure: $(tail -1 "/out/security-$u.txt")"
done
expect "zino ask runs code (as root)" sh -c 'zino ask "how much disk space is free?" | grep -q "It ran successfully"'
expect "exc ran it sandboxed" sh -c "journalctl -u zino-exc -o cat | grep -q '\"sandboxed\":true'"

useradd -M -s /usr/sbin/nologin -G zino alice
useradd -M -s /usr/sbin/nologin bob
expect "a member of group zino can ask" sh -c 'runuser -u alice -- zino ask "what is the uptime?" | grep -q "It ran successfully"'
expect "another user cannot connect (EACCES)" sh -c 'runuser -u bob -- zino ask "what is the uptime?" 2>&1 | grep -q EACCES'

# The sandboxed view under the unit: exc runs as zino, so runs get the landlock view
# (no namespaces): PID 1, file owners and the network's addresses are the host's.
expect "exc's sandbox is the landlock view" sh -c "journalctl -u zino-exc -o cat | grep -q 'landlock view (Landlock ABI'"
bash /check/view.sh >/tmp/view.host 2>&1
node /check/exc.js /check/view.sh >/tmp/view.sandbox 2>&1
same_view() { grep -v -e '^sandboxed=' -e '^$' /tmp/view.sandbox | diff /tmp/view.host - && grep -q '^pid1=systemd$' /tmp/view.host && grep -q '^addr lo 127.0.0.1/8$' /tmp/view.host; }
expect "a sandboxed run sees the host's PID 1, file owners and addresses as the host does" same_view
node /check/exc.js /check/unix.sh >/tmp/unix.out 2>&1
expect "a sandboxed run cannot connect to the daemon's socket (no unix sockets in the landlock view)" sh -c 'grep -q "unix probe done" /tmp/unix.out && ! grep -q LEAK /tmp/unix.out || { cat /tmp/unix.out; exit 1; }'
zino mock-llm --port 8099 >/tmp/mock.log 2>&1 &
mock=$!
for _ in $(seq 50); do grep -q listening /tmp/mock.log && break; sleep 0.1; done
node /check/exc.js /check/probe.sh >/tmp/probe1 2>&1
expect "code run by exc (landlock view) reaches no network, key, data, or writable system" sh -c 'grep -q "^sandboxed=true" /tmp/probe1 && grep -q "workdir writable" /tmp/probe1 && ! grep -q LEAK /tmp/probe1 || { tail -8 /tmp/probe1; exit 1; }'
# Without a sandbox every run is a host run: refused for a client that cannot answer
# approvals ([approval] unattended = "deny"), run by exc itself (as zino, in the unit) under mode = "allow".
config 's/^# sandbox = "auto"/sandbox = "none"/'
restart zino-exc
node /check/exc.js /check/probe.sh >/tmp/probe2 2>&1
expect "without a sandbox, an unattended run is refused (unattended = deny) and recorded" sh -c 'grep -q "^error=APPROVAL_DENIED" /tmp/probe2 && tail -1 /var/log/zino/audit.jsonl | jq -e ".event == \"decision\" and .where == \"host\" and .how == \"unattended:deny\"" || { tail -8 /tmp/probe2; exit 1; }'
config 's/^# mode = "ask"/mode = "allow"/'
restart zino-exc
node /check/exc.js /check/probe.sh >/tmp/probe2 2>&1
expect "code run by exc (unit layer only) reaches no network, key, data, or writable system" sh -c 'grep -q "^sandboxed=false" /tmp/probe2 && grep -q "workdir writable" /tmp/probe2 && ! grep -q LEAK /tmp/probe2 || { tail -8 /tmp/probe2; exit 1; }'
config 's/^mode = "allow"/# mode = "ask"/'
config 's/^sandbox = "none"/# sandbox = "auto"/'
restart zino-exc

# The privileged runner: idle without host_user; with it, host runs act as that account (root: /etc is writable).
expect "zino-runner is inactive (exit 0) while [approval] host_user is empty" sh -c '! systemctl is-active --quiet zino-runner && [ "$(systemctl show zino-runner -p ExecMainStatus --value)" = 0 ]'
config 's/^# host_user = ""/host_user = "root"/'
restart zino-exc zino-runner
expect "zino-runner is active once host_user is set" active_within zino-runner
expect "/run/zino-runner is 0750 and its socket 0660, root:zino-runner" sh -c '[ "$(stat -c "%a %U:%G" /run/zino-runner /run/zino-runner/runner.sock | tr "\n" " ")" = "750 root:zino-runner 660 root:zino-runner " ]'

# exc reaches the runner's socket through SupplementaryGroups=zino-runner.
runner_gid=$(getent group zino-runner | cut -d: -f3)
exc_pid=$(systemctl show zino-exc -p MainPID --value)
echo "info: zino-runner is gid $runner_gid; exc (pid $exc_pid) as seen from the host: $(grep -E '^(Uid|Gid|Groups):' "/proc/$exc_pid/status" | tr -s '\t\n' '  ')"
exc_groups() { grep -qE "^Groups:.*\b$runner_gid\b" "/proc/$exc_pid/status" || { grep Groups "/proc/$exc_pid/status"; return 1; }; }
expect "exc has zino-runner as a supplementary group" exc_groups

# An approved host run: asked on one connection, approved by a member of group zino
# on another, run by the runner as root.
host_run() { # FILE-IN-/etc ID-FILE OUT: asks the daemon to create the file, with approvals
  rm -f "$2"
  node /check/frame.js /run/zino/daemon.sock "{\"message\": \"create the file $1\", \"stream\": true, \"approvals\": true, \"request_id\": \"boot-$(basename "$1")\"}" "$2" >"$3" 2>&1 &
}
host_run /etc/zino-approved /tmp/approved.id /tmp/approved.out
asker=$!
waits_for_person() { file_within /tmp/approved.id && [ ! -e /etc/zino-approved ] || { tail -8 /tmp/approved.out; return 1; }; }
expect "a host run waits for a person: approval_required on the asking connection, /etc untouched" waits_for_person
id=$(cat /tmp/approved.id 2>/dev/null)
expect "a member of group zino lists it (zino approvals)" sh -c "runuser -u alice -- zino approvals | grep -q -- '$id'"
expect "a member of group zino approves it from another connection (zino approve)" runuser -u alice -- zino approve "$id"
wait "$asker"
expect "the approved host run edited /etc as root, and the answer says so" sh -c 'grep -q "\"type\":\"done\"" /tmp/approved.out && [ "$(stat -c %U /etc/zino-approved)" = root ] || { tail -8 /tmp/approved.out; exit 1; }'
approved=$(audit_last ".event == \"decision\" and .approval_id == \"$id\"")
run_id=$(jq -r .id <<<"$approved")
approved_recorded() {
  jq -e '.how == "approved" and .decision == "allow" and .where == "host"' <<<"$approved" &&
    jq -e --arg id "$run_id" 'select(.event == "run" and .id == $id) | .uid == 0 and .exit_code == 0' "$audit"
}
expect "the audit log holds the approval (how: approved) and the run (uid 0, exit 0)" approved_recorded
expect "the runner's journal shows the run" sh -c "journalctl -u zino-runner -o cat | grep -q '$run_id'"

# Refused: a person's no, a client that cannot answer, and anything at the runner without a recorded decision.
host_run /etc/zino-denied /tmp/denied.id /tmp/denied.out
asker=$!
file_within /tmp/denied.id
expect "a member of group zino denies a host run (zino deny --note)" runuser -u alice -- zino deny "$(cat /tmp/denied.id)" --note "not on a Friday"
wait "$asker"
expect "the denied run did not happen; the model got the note" sh -c '[ ! -e /etc/zino-denied ] && grep -q "not on a Friday" /tmp/denied.out || { tail -8 /tmp/denied.out; exit 1; }'
denial_recorded() {
  local d
  d=$(audit_last ".event == \"decision\" and .approval_id == \"$(cat /tmp/denied.id)\"")
  jq -e '.how == "denied" and .decision == "deny"' <<<"$d" && ! jq -e --arg id "$(jq -r .id <<<"$d")" 'select(.event == "run" and .id == $id)' "$audit"
}
expect "the audit log records the denial (how: denied) and no run" denial_recorded
expect "zino ask without a terminal: a host run is refused (unattended = deny)" sh -c '! zino ask "create the file /etc/zino-unattended" >/tmp/unattended.out 2>&1; [ ! -e /etc/zino-unattended ] && [ -n "$(jq -c "select(.how == \"unattended:deny\" and (.code | contains(\"/etc/zino-unattended\")))" /var/log/zino/audit.jsonl)" ] || { tail -8 /tmp/unattended.out; exit 1; }'
forged_code='touch /etc/zino-forged'
forged_sha=$(printf %s "$forged_code" | sha256sum | cut -d' ' -f1)
node /check/frame.js /run/zino-runner/runner.sock "{\"type\": \"run\", \"id\": \"0123456789abcdef\", \"executor\": \"bash\", \"code\": \"$forged_code\", \"sha256\": \"$forged_sha\"}" >/tmp/forged.out 2>&1
expect "the runner refuses a run without a recorded decision (RUN_NOT_RECORDED), runs nothing" sh -c 'grep -q RUN_NOT_RECORDED /tmp/forged.out && [ ! -e /etc/zino-forged ] || { tail -8 /tmp/forged.out; exit 1; }'
rm -f /etc/zino-approved
jq -c '{type: "run", id, executor, code, sha256: .code_sha256}' <<<"$approved" >/tmp/replay.json
node /check/frame.js /run/zino-runner/runner.sock "$(cat /tmp/replay.json)" >/tmp/replay.out 2>&1
expect "the runner refuses to replay an approved run (RUN_NOT_RECORDED), runs nothing" sh -c 'grep -q RUN_NOT_RECORDED /tmp/replay.out && [ ! -e /etc/zino-approved ] || { tail -8 /tmp/replay.out; exit 1; }'
expect "a member of group zino cannot reach the runner (EACCES)" runuser -u alice -- node -e 'require("net").createConnection("/run/zino-runner/runner.sock").on("error", (e) => process.exit(e.code === "EACCES" ? 0 : 1)).on("connect", () => process.exit(1))'

# mode = "allow": a host run goes through without a person; and without the group, exc cannot reach the runner.
config 's/^# mode = "ask"/mode = "allow"/'
restart zino-exc
printf 'id -u\ntouch /etc/zino-runner-proof && echo wrote-etc\n' > /check/host.sh
node /check/exc.js /check/host.sh host >/tmp/host1 2>&1
expect "an allowed host run goes through the runner as root and can edit /etc" sh -c 'grep -q "^sandboxed=false" /tmp/host1 && grep -qx 0 /tmp/host1 && grep -q wrote-etc /tmp/host1 && [ -e /etc/zino-runner-proof ] || { tail -8 /tmp/host1; exit 1; }'
expect "the audit log records the run with uid 0 (how: policy:allow)" sh -c "tail -1 $audit | jq -e '.event == \"run\" and .uid == 0' && tail -2 $audit | head -1 | jq -e '.how == \"policy:allow\"'"
rm -f /etc/zino-runner-proof
# What a host run as root can and cannot do: restart a service (through systemd's
# socket), but a file system it mounts stays in the runner's own mount namespace.
printf '[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n' >/etc/systemd/system/boot-dummy.service
systemctl daemon-reload
systemctl start boot-dummy
before=$(systemctl show boot-dummy -p InvocationID --value)
printf 'systemctl restart boot-dummy && echo restarted\n' >/check/restart.sh
node /check/exc.js /check/restart.sh host >/tmp/restart.out 2>&1
expect "an allowed host run as root restarts a service" sh -c "grep -q restarted /tmp/restart.out && [ \"\$(systemctl show boot-dummy -p InvocationID --value)\" != '$before' ] || { tail -8 /tmp/restart.out; exit 1; }"
mkdir -p /mnt/boot-check
printf 'mount -t tmpfs boot-check /mnt/boot-check && findmnt -n -o SOURCE /mnt/boot-check\n' >/check/mount.sh
node /check/exc.js /check/mount.sh host >/tmp/mount.out 2>&1
expect "a file system a host run mounts stays in the runner's mount namespace (PrivateMounts=)" sh -c 'grep -qx boot-check /tmp/mount.out && ! findmnt /mnt/boot-check || { tail -8 /tmp/mount.out; exit 1; }'
mkdir -p /etc/systemd/system/zino-exc.service.d
printf '[Service]\nSupplementaryGroups=\n' > /etc/systemd/system/zino-exc.service.d/no-runner-group.conf
systemctl daemon-reload
restart zino-exc
node /check/exc.js /check/host.sh host >/tmp/host2 2>&1
refused_without_group() {
  grep -q "^error=UPSTREAM_UNAVAILABLE" /tmp/host2 && [ ! -e /etc/zino-runner-proof ] &&
    journalctl -u zino-exc -o cat "_PID=$(systemctl show zino-exc -p MainPID --value)" | grep -q 'runner.sock: EACCES' || { tail -8 /tmp/host2; return 1; }
}
expect "without SupplementaryGroups=zino-runner exc is refused by the socket (EACCES); nothing runs as zino instead" refused_without_group
rm -r /etc/systemd/system/zino-exc.service.d
systemctl daemon-reload
config 's/^host_user = "root"/# host_user = ""/'
config 's/^mode = "allow"/# mode = "ask"/'
restart zino-exc zino-runner

config 's|^base_url = "demo"|base_url = "http://localhost:8099/v1"|'
restart zino-rtr
systemctl start zino.target
expect "rtr reaches an LLM over TCP by host name" sh -c 'zino ask "hello" | grep -q "mock reply"'

config 's|^base_url = .*|base_url = 5|'
systemctl restart zino-rtr >/dev/null 2>&1
# Whether a unit is restarted is decided when its process exits: once failed, it stays so.
prop_within zino-rtr ActiveState failed
expect "a config error fails with 78 and is not restarted" sh -c '[ "$(systemctl show zino-rtr -p ExecMainStatus -p NRestarts -p ActiveState | sort | tr "\n" " ")" = "ActiveState=failed ExecMainStatus=78 NRestarts=0 " ]'
config 's|^base_url = .*|base_url = "demo"|'
systemctl reset-failed
systemctl start zino.target
kill "$mock"

expect "reload sends SIGHUP to sys, agr and ctx" systemctl reload zino-sys zino-agr zino-ctx
sys_reloaded() { for _ in $(seq 100); do journalctl -u zino-sys -o cat | grep -q 'reloaded on SIGHUP' && return 0; sleep 0.1; done; return 1; }
expect "sys reloaded" sys_reloaded
systemctl kill -s KILL zino-mem
# RestartSec=2s, then the start.
if prop_within zino-mem NRestarts 1 && active_within zino-mem; then pass "a killed service is restarted"; else nope "a killed service is restarted"; fi
systemctl restart zino.target
expect "zino ask works right after a restart" sh -c 'zino ask "what is the uptime?" | grep -q "It ran successfully"'

echo '{"m":[{"role":"user","content":"keep me"}]}' >> /var/lib/zino/history/keep.jsonl
expect "install again (upgrade) with --now" /src/zino install-systemd --now
expect "upgrade kept the data" grep -q "keep me" /var/lib/zino/history/keep.jsonl
expect "zino ask works after the upgrade" sh -c 'zino ask "what is the uptime?" | grep -q "It ran successfully"'
expect "uninstall-systemd" /src/zino uninstall-systemd
gone=yes
for u in $units zino-runner zino; do [ ! -e "/etc/systemd/system/$u.service" ] && [ ! -e "/etc/systemd/system/$u.target" ] || gone=no; done
[ ! -e /opt/zino ] && [ ! -e /usr/local/bin/zino ] || gone=no
expect "uninstall removed the units, the prefix and the command" test "$gone" = yes
expect "uninstall kept configuration, data and user" sh -c 'grep -q "keep me" /var/lib/zino/history/keep.jsonl && [ -f /etc/zino/ZINO.toml ] && id zino'
expect "uninstall-systemd --purge" /src/zino uninstall-systemd --purge
expect "purge removed configuration, data and user" sh -c '[ ! -e /etc/zino ] && [ ! -e /var/lib/zino ] && ! id zino && ! getent group zino-runner'
echo "DONE"
journalctl -o short-monotonic --no-pager -u 'zino-*' >/out/journal.txt 2>&1
EOF

echo "boot-check: booting a copy of this machine under systemd (log: $work/out/nspawn.log)"
# nspawn (252) filters the container's system calls and its list has no Landlock
# calls; a machine booted by systemd has no such outer filter: allow them here.
timeout 600 systemd-nspawn -D "$root" --register=no --keep-unit --link-journal=no --console=pipe \
  --system-call-filter='landlock_create_ruleset landlock_add_rule landlock_restrict_self' \
  --bind="$work/out:/out" --bind-ro="$here:/src" -b systemd.unit=zino-check.target >"$work/out/nspawn.log" 2>&1 || true

result="$work/out/result.txt"
# BOOT_CHECK_LOGS=DIR keeps the container's output (result, nspawn log, ZINO's journal) there.
if [ -n "${BOOT_CHECK_LOGS:-}" ]; then mkdir -p "$BOOT_CHECK_LOGS" && cp -r "$work/out/." "$BOOT_CHECK_LOGS/"; fi
[ -f "$result" ] || { tail -20 "$work/out/nspawn.log"; fail "the check did not run"; }
grep -E '^(PASS|FAIL|exposure|info|env):' "$result"
grep -q '^DONE' "$result" || { tail -20 "$result"; echo "boot-check: the check did not finish" >&2; exit 1; }
if grep -q '^FAIL' "$result"; then
  echo "boot-check: FAILED" >&2
  exit 1
fi
echo "boot-check: all passed"
