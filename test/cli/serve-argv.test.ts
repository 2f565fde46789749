/**
 * The plain `zino serve NAME` that the services run, and the plain `zino up`, are read
 * without commander (src/cli/serve-argv.ts); every other command line is left to commander.
 * test/cli/start-imports.test.ts runs both paths.
 */
import { describe, expect, it } from 'vitest';
import { plainServeArgv, plainUpArgv } from '../../src/cli/serve-argv.js';

describe('plainServeArgv', () => {
  it.each([
    [['serve', 'sys'], { service: 'sys', options: {} }],
    [['serve', 'mem', '--config', '/etc/zino/ZINO.toml'], { service: 'mem', options: { config: '/etc/zino/ZINO.toml' } }],
    [['serve', 'mem', '-c', 'a.toml'], { service: 'mem', options: { config: 'a.toml' } }],
    [['serve', '--config=a.toml', 'ctx'], { service: 'ctx', options: { config: 'a.toml' } }],
    [['serve', 'daemon', '--dir', '/tmp/z', '--config', 'a.toml'], { service: 'daemon', options: { dir: '/tmp/z', config: 'a.toml' } }],
    [['serve', 'http', '--dir=.zino'], { service: 'http', options: { dir: '.zino' } }],
    // An unknown name is serveCommand's to refuse, as it was when commander handed it over.
    [['serve', 'nosuch'], { service: 'nosuch', options: {} }],
  ])('reads %j', (argv, expected) => {
    expect(plainServeArgv(argv)).toEqual(expected);
  });

  it.each([
    [[]],
    [['ask', 'serve']],
    [['serve']],
    [['serve', '--help']],
    [['serve', 'sys', '-h']],
    [['serve', 'sys', 'mem']],
    [['serve', 'sys', '--config']],
    [['serve', 'sys', '--config', '--dir', 'x']],
    [['serve', 'sys', '--config=']],
    [['serve', 'sys', '--config', 'a', '--config', 'b']],
    [['serve', 'sys', '-c', 'a', '--config', 'b']],
    [['serve', 'sys', '--dir', '']],
    [['serve', 'sys', '-c=a.toml']],
    [['serve', 'sys', '-ca.toml']],
    [['serve', 'sys', '--config=-x']],
    [['serve', 'sys', '--verbose']],
    [['serve', '--', 'sys']],
    [['serve', 'sys', '--']],
  ])('leaves %j to commander', (argv) => {
    expect(plainServeArgv(argv)).toBeUndefined();
  });
});

describe('plainUpArgv', () => {
  it.each([
    [['up'], {}],
    [['up', '--config', 'a.toml'], { config: 'a.toml' }],
    [['up', '-c', 'a.toml', '--dir', '.zino'], { config: 'a.toml', dir: '.zino' }],
    [['up', '--http'], { http: true }],
    [['up', '--dir=.zino', '--http', '--config=a.toml'], { dir: '.zino', config: 'a.toml', http: true }],
  ])('reads %j', (argv, expected) => {
    expect(plainUpArgv(argv)).toEqual(expected);
  });

  it.each([
    [[]],
    [['serve', 'sys']],
    [['status']],
    [['up', '--help']],
    [['up', '-h']],
    [['up', 'sys']],
    [['up', '--http', '--http']],
    [['up', '--http=yes']],
    [['up', '--config']],
    [['up', '--config', 'a', '--config', 'b']],
    [['up', '--verbose']],
    [['up', '--']],
  ])('leaves %j to commander', (argv) => {
    expect(plainUpArgv(argv)).toBeUndefined();
  });

  it('reads no switch that serve does not know', () => {
    expect(plainServeArgv(['serve', 'sys', '--http'])).toBeUndefined();
  });
});
