/**
 * The sandbox's seccomp filter, run by a small classic-BPF interpreter against
 * `struct seccomp_data` as the kernel builds it: what each system call gets.
 * (test/faults/sandbox-view.test.ts shows the same with the real kernel.)
 */
import { describe, expect, it } from 'vitest';
import {
  AF_INET,
  AF_INET6,
  AF_NETLINK,
  AF_PACKET,
  AF_UNIX,
  ARCHITECTURES,
  BPF_JEQ_K,
  BPF_JSET_K,
  BPF_LD_W_ABS,
  BPF_RET_K,
  CLONE_NEWUSER,
  EACCES,
  ENOSYS,
  EPERM,
  NETLINK_GENERIC,
  NETLINK_ROUTE,
  NETLINK_SOCK_DIAG,
  SECCOMP_RET_ALLOW,
  SECCOMP_RET_ERRNO,
  SECCOMP_RET_KILL_PROCESS,
  seccompFilter,
  seccompUnsupported,
} from '../../src/services/exc/seccomp.js';

const AUDIT_ARCH_I386 = 0x40000003;
const AUDIT_ARCH_ARM = 0x40000028;
const AF_VSOCK = 40;
const AF_BLUETOOTH = 31;
const NETLINK_USERSOCK = 2;
const NETLINK_KOBJECT_UEVENT = 15;
const CLONE_NEWNS = 0x00020000;
const SIGCHLD = 17;

/** Runs `filter` on one system call, as the kernel would: returns the action word. */
function decide(filter: Buffer, arch: number, nr: number, args: number[] = []): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(nr, 0);
  data.writeUInt32LE(arch, 4);
  args.forEach((a, i) => data.writeBigUInt64LE(BigInt(a), 16 + 8 * i));
  let acc = 0;
  for (let pc = 0; pc < filter.length / 8;) {
    const code = filter.readUInt16LE(pc * 8);
    const jt = filter.readUInt8(pc * 8 + 2);
    const jf = filter.readUInt8(pc * 8 + 3);
    const k = filter.readUInt32LE(pc * 8 + 4);
    if (code === BPF_LD_W_ABS) {
      acc = data.readUInt32LE(k);
      pc++;
    } else if (code === BPF_JEQ_K) pc += 1 + (acc === k ? jt : jf);
    else if (code === BPF_JSET_K) pc += 1 + ((acc & k) >>> 0 !== 0 ? jt : jf);
    else if (code === BPF_RET_K) return k;
    else throw new Error(`unexpected opcode ${code.toString(16)} at ${pc}`);
  }
  throw new Error('fell off the end of the filter');
}

const errno = (e: number): number => SECCOMP_RET_ERRNO | e;

describe.each(Object.keys(ARCHITECTURES))('the seccomp filter on %s', (arch) => {
  const { audit, nr } = ARCHITECTURES[arch]!;
  const filter = seccompFilter(arch);
  const call = (n: number, args: number[] = []): number => decide(filter, audit, n, args);

  it('is a whole number of instructions and runs to a return for any call', () => {
    expect(filter.length % 8).toBe(0);
    for (let n = 0; n < 500; n++) expect([SECCOMP_RET_ALLOW, errno(EACCES), errno(EPERM), errno(ENOSYS)]).toContain(call(n, [AF_UNIX]));
  });

  it('lets unix sockets and the netlink protocols that read the network configuration through', () => {
    expect(call(nr.socket, [AF_UNIX, 1, 0])).toBe(SECCOMP_RET_ALLOW);
    for (const protocol of [NETLINK_ROUTE, NETLINK_SOCK_DIAG, NETLINK_GENERIC]) expect(call(nr.socket, [AF_NETLINK, 3, protocol])).toBe(SECCOMP_RET_ALLOW);
  });

  it('refuses every socket that reaches the network, and netlink to other processes or uevents', () => {
    for (const family of [AF_INET, AF_INET6, AF_PACKET, AF_VSOCK, AF_BLUETOOTH, 0, 45, 255]) expect(call(nr.socket, [family, 1, 0])).toBe(errno(EACCES));
    for (const protocol of [NETLINK_USERSOCK, NETLINK_KOBJECT_UEVENT, 12, 9]) expect(call(nr.socket, [AF_NETLINK, 3, protocol])).toBe(errno(EACCES));
    // Only the low 32 bits are the family (an int): high bits do not smuggle AF_UNIX past it, nor AF_INET in.
    expect(call(nr.socket, [2 ** 32 + AF_INET, 1, 0])).toBe(errno(EACCES));
  });

  it('refuses io_uring (it opens sockets without socket()) and clone3 (its flags cannot be read) with ENOSYS', () => {
    for (const n of [nr.io_uring_setup, nr.io_uring_enter, nr.io_uring_register, nr.clone3]) expect(call(n)).toBe(errno(ENOSYS));
  });

  it('refuses new user namespaces, and nothing else of clone and unshare', () => {
    expect(call(nr.unshare, [CLONE_NEWUSER])).toBe(errno(EPERM));
    expect(call(nr.unshare, [CLONE_NEWUSER | CLONE_NEWNS])).toBe(errno(EPERM));
    expect(call(nr.clone, [CLONE_NEWUSER | SIGCHLD])).toBe(errno(EPERM));
    expect(call(nr.clone, [SIGCHLD])).toBe(SECCOMP_RET_ALLOW);
    expect(call(nr.unshare, [CLONE_NEWNS])).toBe(SECCOMP_RET_ALLOW); // needs CAP_SYS_ADMIN, which the program lacks
  });

  it('kills a process that makes a system call of another architecture', () => {
    for (const other of [AUDIT_ARCH_I386, AUDIT_ARCH_ARM, ...Object.values(ARCHITECTURES).map((a) => a.audit)].filter((a) => a !== audit))
      expect(decide(filter, other, nr.socket, [AF_INET])).toBe(SECCOMP_RET_KILL_PROCESS);
  });
});

describe.each(Object.keys(ARCHITECTURES))("the landlock view's filter (unixSockets: false) on %s", (arch) => {
  const { audit, nr } = ARCHITECTURES[arch]!;
  const filter = seccompFilter(arch, { unixSockets: false });
  const call = (n: number, args: number[] = []): number => decide(filter, audit, n, args);
  const SOCKETPAIR: Record<string, number> = { x64: 53, arm64: 199 };

  it('refuses unix sockets too, and keeps everything else of the filter', () => {
    expect(call(nr.socket, [AF_UNIX, 1, 0])).toBe(errno(EACCES));
    expect(call(nr.socket, [AF_INET, 1, 0])).toBe(errno(EACCES));
    for (const protocol of [NETLINK_ROUTE, NETLINK_SOCK_DIAG, NETLINK_GENERIC]) expect(call(nr.socket, [AF_NETLINK, 3, protocol])).toBe(SECCOMP_RET_ALLOW);
    expect(call(nr.unshare, [CLONE_NEWUSER])).toBe(errno(EPERM));
    expect(call(nr.io_uring_setup)).toBe(errno(ENOSYS));
  });

  it('lets socketpair through: a connected pair reaches nobody else', () => {
    expect(call(SOCKETPAIR[arch]!, [AF_UNIX, 1, 0])).toBe(SECCOMP_RET_ALLOW);
  });

  it('is the default filter but for that one rule', () => {
    expect(filter.length).toBe(seccompFilter(arch).length - 8);
    expect(seccompFilter(arch, { unixSockets: true })).toEqual(seccompFilter(arch));
  });
});

describe('the seccomp filter on x86_64 only', () => {
  it('kills a process that makes an x32 system call', () => {
    const { audit, nr } = ARCHITECTURES.x64!;
    expect(decide(seccompFilter('x64'), audit, 0x40000000 + nr.socket, [AF_INET])).toBe(SECCOMP_RET_KILL_PROCESS);
    expect(decide(seccompFilter('x64'), audit, 0x40000000 + 1)).toBe(SECCOMP_RET_KILL_PROCESS);
  });
});

describe('seccompUnsupported', () => {
  it('names the architectures it has no filter for', () => {
    expect(seccompUnsupported('x64')).toBeUndefined();
    expect(seccompUnsupported('arm64')).toBeUndefined();
    expect(seccompUnsupported('riscv64')).toBe('no seccomp filter for the riscv64 architecture (x64 and arm64 only)');
    expect(() => seccompFilter('ia32')).toThrow(/ia32/);
  });
});
