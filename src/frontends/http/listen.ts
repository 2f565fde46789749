/**
 * `[http] listen`: `host:port`, where the host is an IPv4 address, a bracketed IPv6
 * address or `localhost`. Only loopback unless `[http] allow_non_loopback`: the
 * endpoint runs code on the host for whoever holds the token, and the token travels
 * in clear over plain HTTP.
 */
import net from 'node:net';
import { ConfigError } from '../../runtime/index.js';

/** Where to listen. */
export interface ListenAddress {
  host: string;
  port: number;
}

/** Parses and checks `[http] listen`; throws {@link ConfigError}. */
export function parseListen(listen: string, allowNonLoopback: boolean): ListenAddress {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(listen.trim());
  const port = Number(match?.[3]);
  if (!match || !Number.isInteger(port) || port > 65_535) {
    throw new ConfigError(`[http] listen must be "host:port" (e.g. "127.0.0.1:8088" or "[::1]:8088"), got ${JSON.stringify(listen)}`);
  }
  const given = (match[1] ?? match[2] ?? '').toLowerCase();
  const host = given === 'localhost' ? '127.0.0.1' : given;
  if (net.isIP(host) === 0) throw new ConfigError(`[http] listen: "${given}" is not an IP address or localhost`);
  if (match[1] !== undefined && net.isIPv6(host) === false) throw new ConfigError(`[http] listen: [${given}] is not an IPv6 address`);
  if (!allowNonLoopback && !isLoopback(host)) {
    throw new ConfigError(
      `[http] listen = "${listen}" is not a loopback address: set [http] allow_non_loopback = true to listen there (and put TLS in front: the token travels in clear)`,
    );
  }
  return { host, port };
}

/** True for 127.0.0.0/8, ::1 and IPv4-mapped loopback. */
export function isLoopback(host: string): boolean {
  const ip = host.toLowerCase().replace(/^::ffff:/, '');
  if (net.isIPv4(ip)) return ip.split('.')[0] === '127';
  return ip === '::1' || ip === '0:0:0:0:0:0:0:1';
}

/** The base URL of the API for `address` as it is listening. */
export function baseUrl(address: ListenAddress): string {
  const host = net.isIPv6(address.host) ? `[${address.host}]` : address.host;
  return `http://${host}:${address.port}/v1`;
}
