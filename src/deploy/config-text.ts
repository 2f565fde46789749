/**
 * The `/etc/zino/ZINO.toml` an installation starts with: the package's ZINO.toml
 * (every key, documented, at its default) with absolute paths under the prefix,
 * the sockets at their `/run/zino` defaults, mem's data in `/var/lib/zino`, the
 * HTTP front end's token in `/var/lib/zino-http`, and the demo model until the
 * operator sets an endpoint.
 */
import { PATHS } from './layout.js';

/** One key to set: its TOML value, already encoded. */
interface Setting {
  section: string;
  key: string;
  value: string;
}

const HEADER = `# ZINO configuration of the systemd installation (written by \`zino install-systemd\`
# because none existed; it is never overwritten). Every unit runs
#   zino serve <service> --config ${PATHS.configFile}
# Restart after a change: systemctl restart zino.target
#
# Every key is listed with its default value, commented out: uncomment a line to
# change it. Unknown keys are warned about; a value of the wrong type stops the
# service (exit status 78) with a message naming this file and the key.

`;

const API_ADVICE = `# >>> Set the LLM endpoint here, and the model under [service] below. <<<
# "demo" is ZINO's built-in demo model: it works with no LLM at all, and tells
# every user how to configure a real one. The API key does not belong in this
# file: put LLM_API_KEY=... in ${PATHS.envFile} (0640 root:zino, read by rtr only).
`;

/** TOML basic string for `value`. */
function tomlString(value: string): string {
  return JSON.stringify(value);
}

/** The settings an installation under `prefix` needs. */
export function installSettings(prefix: string): Setting[] {
  const settings: Setting[] = [
    { section: 'api', key: 'base_url', value: tomlString('demo') },
    { section: 'tools', key: 'dir', value: tomlString(`${prefix}/tools`) },
    { section: 'skills', key: 'dir', value: tomlString(`${prefix}/skills`) },
    { section: 'sys', key: 'template', value: tomlString(`${prefix}/SYSTEM.md`) },
    { section: 'mem', key: 'data_dir', value: tomlString(PATHS.stateDir) },
    // Beside the data would be /var/lib, which exc may not write; /var/log/zino is exc's LogsDirectory.
    { section: 'exc', key: 'audit_log', value: tomlString(PATHS.auditLog) },
    { section: 'http', key: 'token_file', value: tomlString(PATHS.httpTokenFile) },
  ];
  for (const service of ['daemon', 'rtr', 'agr', 'sys', 'exc', 'mem', 'ctx']) {
    settings.push({ section: service, key: 'socket', value: tomlString(`${PATHS.runtimeDir}/${service}.sock`) });
  }
  return settings;
}

/**
 * Sets `key = value` in `[section]` of a TOML text: replaces the first line that
 * sets the key or shows it commented out (`# key = …`), else adds the line
 * after the section header, else adds the section at the end.
 */
export function setKey(text: string, section: string, key: string, value: string): string {
  const lines = text.split('\n');
  const header = lines.findIndex((line) => line.trim() === `[${section}]`);
  const line = `${key} = ${value}`;
  if (header < 0) return `${text.replace(/\n*$/, '\n')}\n[${section}]\n${line}\n`;
  let end = lines.findIndex((l, i) => i > header && /^\s*\[[^\]]+\]\s*$/.test(l));
  if (end < 0) end = lines.length;
  const keyLine = new RegExp(`^\\s*(#\\s*)?${key}\\s*=`);
  const set = lines.findIndex((l, i) => i > header && i < end && /^\s*[^#\s]/.test(l) && keyLine.test(l));
  const commented = lines.findIndex((l, i) => i > header && i < end && keyLine.test(l));
  const at = set >= 0 ? set : commented;
  if (at >= 0) lines[at] = line;
  else lines.splice(header + 1, 0, line);
  return lines.join('\n');
}

/** The initial `/etc/zino/ZINO.toml`, from the package's `ZINO.toml` text. */
export function installConfigText(packageConfig: string, prefix: string): string {
  // The package file's own header speaks of `zino up --dir`; ours speaks of systemd.
  const body = packageConfig.replace(/^(#[^\n]*\n)*\n?/, '');
  let text = HEADER + body;
  for (const { section, key, value } of installSettings(prefix)) text = setKey(text, section, key, value);
  return text.replace(/^\[api\]\n/m, `[api]\n${API_ADVICE}`);
}

/** The initial `/etc/zino/zino.env`: the key, commented out. */
export function envFileText(): string {
  return `# Environment of zino-rtr (EnvironmentFile=${PATHS.envFile}). Keep this file
# 0640 root:zino: it is the only place the LLM API key should be written.
# Uncomment and set, then: systemctl restart zino-rtr
#LLM_API_KEY=
`;
}
