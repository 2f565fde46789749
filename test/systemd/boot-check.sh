#!/usr/bin/env bash
# Boots a throwaway copy of this machine under a real systemd (systemd-nspawn on a
# tmpfs overlay of /), installs ZINO there with `zino install-systemd --now` from
# this checkout, and checks that the hardened units work: every service active and
# ready, ask through exc's bubblewrap sandbox, group access, what code run by exc
# can reach (with and without bubblewrap), rtr reaching an LLM over TCP, exit 78
# not restarted, reload, a crash restarted, upgrade, uninstall and --purge.
# Nothing on this machine changes: every write goes to the overlay.
#
#   sudo bash test/systemd/boot-check.sh        (about two minutes)
#
# Needs root, systemd-nspawn (apt-get install systemd-container), overlayfs, and a
# built checkout (npm ci && npm run build). Prints PASS/FAIL lines; exits 1 on a FAIL.
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

# One execute request to exc, printing stdout and stderr.
cat > "$root/check/exc.js" <<'EOF'
const net = require('node:net');
const code = require('node:fs').readFileSync(process.argv[2], 'utf8');
const s = net.createConnection('/run/zino/exc.sock');
s.on('connect', () => { const b = Buffer.from(JSON.stringify({ type: 'execute', executor: 'bash', code, host: process.argv[3] === 'host' })); const h = Buffer.alloc(4); h.writeUInt32BE(b.length); s.write(Buffer.concat([h, b])); });
let d = Buffer.alloc(0);
s.on('data', (c) => { d = Buffer.concat([d, c]); if (d.length >= 4 && d.length >= 4 + d.readUInt32BE(0)) { const r = JSON.parse(d.subarray(4, 4 + d.readUInt32BE(0))); console.log(`sandboxed=${r.sandboxed}`); console.log(r.stdout + r.stderr); s.destroy(); } });
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
touch /tmp/x && echo "tmp writable"
EOF

cat > "$root/check/check.sh" <<'EOF'
set -u
units="zino-daemon zino-rtr zino-agr zino-sys zino-exc zino-mem zino-ctx"
pass() { echo "PASS: $*"; }
nope() { echo "FAIL: $*"; }
expect() {
  local what=$1
  shift
  if "$@" >/tmp/out 2>&1; then pass "$what"; else nope "$what: $(tail -5 /tmp/out | tr '\n' ' ')"; fi
}
config() { sed -i "$1" /etc/zino/ZINO.toml; }
active_within() { for _ in $(seq 100); do systemctl is-active --quiet "$1" && return 0; sleep 0.1; done; return 1; }

/src/zino uninstall-systemd --purge >/dev/null 2>&1 || true
expect "install-systemd --now on a running systemd" /src/zino install-systemd --now
expect "every service is active" systemctl is-active $units
expect "/run/zino is 0750 zino:zino" test "$(stat -c '%a %U:%G' /run/zino)" = "750 zino:zino"
expect "every socket is 0660 zino:zino" sh -c 'for s in /run/zino/*.sock; do [ "$(stat -c "%a %U:%G" "$s")" = "660 zino:zino" ] || exit 1; done'
expect "/etc/zino is 0750 and its files 0640 root:zino" sh -c '[ "$(stat -c "%a %U:%G" /etc/zino /etc/zino/ZINO.toml /etc/zino/zino.env | tr "\n" " ")" = "750 root:zino 640 root:zino 640 root:zino " ]'
for u in $units; do
  echo "exposure: $(systemd-analyze security "$u.service" | tail -1)"
done
expect "zino ask runs code (as root)" sh -c 'zino ask "how much disk space is free?" | grep -q "It ran successfully"'
expect "exc ran it in bubblewrap" sh -c "journalctl -u zino-exc -o cat | grep -q '\"sandboxed\":true'"

useradd -M -s /usr/sbin/nologin -G zino alice
useradd -M -s /usr/sbin/nologin bob
expect "a member of group zino can ask" sh -c 'runuser -u alice -- zino ask "what is the uptime?" | grep -q "It ran successfully"'
expect "another user cannot connect (EACCES)" sh -c 'runuser -u bob -- zino ask "what is the uptime?" 2>&1 | grep -q EACCES'

zino mock-llm --port 8099 >/tmp/mock.log 2>&1 &
mock=$!
for _ in $(seq 50); do grep -q listening /tmp/mock.log && break; sleep 0.1; done
node /check/exc.js /check/probe.sh >/tmp/probe1 2>&1
expect "code run by exc (bubblewrap) reaches no network, key, data, or writable system" sh -c 'grep -q "^sandboxed=true" /tmp/probe1 && grep -q "tmp writable" /tmp/probe1 && ! grep -q LEAK /tmp/probe1'
config 's/^# sandbox = "auto"/sandbox = "none"/'
systemctl restart zino-exc
node /check/exc.js /check/probe.sh >/tmp/probe2 2>&1
expect "code run by exc (unit layer only) reaches no network, key, data, or writable system" sh -c 'grep -q "^sandboxed=false" /tmp/probe2 && grep -q "tmp writable" /tmp/probe2 && ! grep -q LEAK /tmp/probe2'
config 's/^sandbox = "none"/# sandbox = "auto"/'
systemctl restart zino-exc

# The privileged runner: idle without host_user; with it, host runs act as that account (root: /etc is writable).
expect "zino-runner is inactive (exit 0) while [approval] host_user is empty" sh -c '! systemctl is-active --quiet zino-runner && [ "$(systemctl show zino-runner -p ExecMainStatus --value)" = 0 ]'
config 's/^# mode = "ask"/mode = "allow"/'
config 's/^# host_user = ""/host_user = "root"/'
systemctl restart zino-exc zino-runner
expect "zino-runner is active once host_user is set" active_within zino-runner
expect "/run/zino-runner is 0750 and its socket 0660, root:zino-runner" sh -c '[ "$(stat -c "%a %U:%G" /run/zino-runner /run/zino-runner/runner.sock | tr "\n" " ")" = "750 root:zino-runner 660 root:zino-runner " ]'
printf 'id -u\ntouch /etc/zino-runner-proof && echo wrote-etc\n' > /check/host.sh
node /check/exc.js /check/host.sh host >/tmp/host1 2>&1
expect "an allowed host run goes through the runner as root and can edit /etc" sh -c 'grep -q "^sandboxed=false" /tmp/host1 && grep -qx 0 /tmp/host1 && grep -q wrote-etc /tmp/host1 && [ -e /etc/zino-runner-proof ]'
expect "the audit log records the run with uid 0" sh -c 'tail -1 /var/log/zino/audit.jsonl | grep -q "\"uid\":0"'
expect "a member of group zino cannot reach the runner (EACCES)" runuser -u alice -- node -e 'require("net").createConnection("/run/zino-runner/runner.sock").on("error", (e) => process.exit(e.code === "EACCES" ? 0 : 1)).on("connect", () => process.exit(1))'
rm -f /etc/zino-runner-proof
config 's/^host_user = "root"/# host_user = ""/'
config 's/^mode = "allow"/# mode = "ask"/'
systemctl restart zino-exc zino-runner

config 's|^base_url = "demo"|base_url = "http://localhost:8099/v1"|'
systemctl restart zino-rtr
systemctl start zino.target
expect "rtr reaches an LLM over TCP by host name" sh -c 'zino ask "hello" | grep -q "mock reply"'

config 's|^base_url = .*|base_url = 5|'
systemctl restart zino-rtr >/dev/null 2>&1
sleep 4
expect "a config error fails with 78 and is not restarted" sh -c '[ "$(systemctl show zino-rtr -p ExecMainStatus -p NRestarts -p ActiveState | sort | tr "\n" " ")" = "ActiveState=failed ExecMainStatus=78 NRestarts=0 " ]'
config 's|^base_url = .*|base_url = "demo"|'
systemctl reset-failed
systemctl start zino.target
kill "$mock"

expect "reload sends SIGHUP to sys, agr and ctx" systemctl reload zino-sys zino-agr zino-ctx
expect "sys reloaded" sh -c "journalctl -u zino-sys -o cat | grep -q 'reloaded on SIGHUP'"
systemctl kill -s KILL zino-mem
sleep 3
if active_within zino-mem && [ "$(systemctl show zino-mem -p NRestarts --value)" = 1 ]; then pass "a killed service is restarted"; else nope "a killed service is restarted"; fi
systemctl restart zino.target
expect "zino ask works right after a restart" sh -c 'zino ask "what is the uptime?" | grep -q "It ran successfully"'

echo '{"m":[{"role":"user","content":"keep me"}]}' >> /var/lib/zino/history/keep.jsonl
expect "install again (upgrade) with --now" /src/zino install-systemd --now
expect "upgrade kept the data" grep -q "keep me" /var/lib/zino/history/keep.jsonl
expect "zino ask works after the upgrade" sh -c 'zino ask "what is the uptime?" | grep -q "It ran successfully"'
expect "uninstall-systemd" /src/zino uninstall-systemd
gone=yes
for u in $units zino; do [ ! -e "/etc/systemd/system/$u.service" ] && [ ! -e "/etc/systemd/system/$u.target" ] || gone=no; done
[ ! -e /opt/zino ] && [ ! -e /usr/local/bin/zino ] || gone=no
expect "uninstall removed the units, the prefix and the command" test "$gone" = yes
expect "uninstall kept configuration, data and user" sh -c 'grep -q "keep me" /var/lib/zino/history/keep.jsonl && [ -f /etc/zino/ZINO.toml ] && id zino'
expect "uninstall-systemd --purge" /src/zino uninstall-systemd --purge
expect "purge removed configuration, data and user" sh -c '[ ! -e /etc/zino ] && [ ! -e /var/lib/zino ] && ! id zino && ! getent group zino-runner'
echo "DONE"
EOF

echo "boot-check: booting a copy of this machine under systemd (log: $work/out/nspawn.log)"
timeout 600 systemd-nspawn -D "$root" --register=no --keep-unit --link-journal=no --console=pipe \
  --bind="$work/out:/out" --bind-ro="$here:/src" -b systemd.unit=zino-check.target >"$work/out/nspawn.log" 2>&1 || true

result="$work/out/result.txt"
[ -f "$result" ] || { tail -20 "$work/out/nspawn.log"; fail "the check did not run"; }
grep -E '^(PASS|FAIL|exposure):' "$result"
grep -q '^DONE' "$result" || { tail -20 "$result"; echo "boot-check: the check did not finish" >&2; exit 1; }
if grep -q '^FAIL' "$result"; then
  echo "boot-check: FAILED" >&2
  exit 1
fi
echo "boot-check: all passed"
