/** Turning a service's JSON log line into one short line for a person at a terminal. */

import { textOf } from '../../runtime/validate.js';

const SKIP = new Set(['level', 'time', 'service', 'pid', 'msg']);

/** `12:00:01 rtr     info  listening socket=/run/zino/rtr.sock`; a non-JSON line is returned as it is. */
export function formatLogLine(service: string, line: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return `${service.padEnd(7)} ${line}`;
  }
  const time = typeof record.time === 'string' ? record.time.slice(11, 19) : '';
  const level = textOf(record.level ?? '').padEnd(5);
  const fields = Object.entries(record)
    .filter(([k]) => !SKIP.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${time} ${service.padEnd(7)} ${level} ${textOf(record.msg ?? '')}${fields ? ` ${fields}` : ''}`;
}
