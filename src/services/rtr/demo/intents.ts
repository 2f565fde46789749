/**
 * The demo model's knowledge: which question about the machine maps to which
 * command. A command in backticks ("run `ls /etc`") is taken as is.
 */

/** A recognised request and the command that answers it. */
export interface Intent {
  /** bash command to run. */
  command: string;
  /** What the command shows, for the model's own sentences ("the disk usage"). */
  topic: string;
  /** Set when the command changes the host: it must run there (`"host": true`), which needs approval. */
  hostReason?: string;
}

interface Rule {
  test: RegExp;
  command: string | ((text: string) => string);
  topic: string;
  hostReason?: string;
}

/** The file the demo's host-run intent creates when the request names none. */
export const DEMO_MARKER = '/tmp/zino-demo-marker';

const RULES: Rule[] = [
  // The one intent that changes the host: a sandboxed run could not, so it asks for the host (and a person's yes).
  {
    test: /\b(create|touch|make|write)\b[^.?!]*\b(marker|file)\b/i,
    command: (text) => {
      const file = shellQuote(/(?:^|\s)(\/[\w./@+-]*[\w@+-])/.exec(text)?.[1] ?? DEMO_MARKER);
      return `touch -- ${file} && ls -l -- ${file}`;
    },
    topic: 'the file you asked for',
    hostReason: 'create the file you asked for; the sandbox cannot change anything on the host',
  },
  {
    test: /\b(disks?|storage|disk space|free space|filesystems?|partitions?|df)\b/i,
    command: 'df -h -x tmpfs -x devtmpfs -x squashfs -x overlay 2>/dev/null || df -h',
    topic: 'the disk usage',
  },
  { test: /\b(memory|ram|swap)\b/i, command: 'free -h', topic: 'the memory usage' },
  { test: /\b(uptime|load average|load|how long)\b/i, command: 'uptime', topic: 'the uptime and load' },
  { test: /\b(cpus?|cores?|processors?)\b/i, command: 'nproc; grep -m1 "model name" /proc/cpuinfo || true', topic: 'the processors' },
  {
    test: /\b(process(es)?|running programs?|busiest|top)\b/i,
    command: 'ps -eo pid,user,%cpu,%mem,comm --sort=-%cpu | head -n 6',
    topic: 'the busiest processes',
  },
  {
    test: /\b(kernel|operating system|os|distro|distribution|linux version)\b/i,
    command: 'uname -srmo; grep "^PRETTY_NAME=" /etc/os-release 2>/dev/null || true',
    topic: 'the operating system',
  },
  { test: /\b(hostname|host name|machine name)\b/i, command: 'hostname', topic: 'the host name' },
  { test: /\b(date|time|clock)\b/i, command: 'date', topic: 'the date and time' },
  { test: /\b(who am i|whoami|which user|my user)\b/i, command: 'id', topic: 'the user I run as' },
  { test: /\b(network|ip address(es)?|interfaces?)\b/i, command: 'ip -brief address 2>/dev/null || cat /proc/net/dev', topic: 'the network interfaces' },
  {
    test: /\b(list|show|what)\b.*\b(files?|director(y|ies)|folders?)\b/i,
    command: (text) => {
      const dir = /(?:^|\s)(\/[\w./@+-]*)/.exec(text)?.[1];
      return dir ? `ls -la -- ${shellQuote(dir)}` : 'ls -la';
    },
    topic: 'the files',
  },
];

/** The intent of `text`, or `undefined` when it is not a request about this machine. */
export function findIntent(text: string): Intent | undefined {
  const quoted = /`([^`\n]+)`/.exec(text)?.[1]?.trim();
  if (quoted) return { command: quoted, topic: `the output of \`${quoted}\`` };
  for (const rule of RULES) {
    if (rule.test.test(text)) {
      const command = typeof rule.command === 'string' ? rule.command : rule.command(text);
      return { command, topic: rule.topic, ...(rule.hostReason === undefined ? {} : { hostReason: rule.hostReason }) };
    }
  }
  return undefined;
}

/** Quotes `s` for bash in single quotes. */
export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}
