/**
 * The seccomp filter every sandboxed program runs under, as a classic BPF program
 * for bubblewrap's `--seccomp FD` (an array of `struct sock_filter`, host byte order).
 *
 * It exists so that the sandbox can share the host's network namespace (and so
 * show the host's interfaces, routes and sockets) without reaching the network:
 *
 * - `socket()` succeeds only for AF_UNIX and for AF_NETLINK with the protocols that
 *   read the network configuration (NETLINK_ROUTE for `ip`, NETLINK_SOCK_DIAG for
 *   `ss`, NETLINK_GENERIC for `ethtool`); every other family (AF_INET, AF_INET6,
 *   AF_PACKET, AF_VSOCK, AF_BLUETOOTH, …) fails with EACCES. Without an Internet
 *   socket there is no TCP, UDP, ICMP or DNS. With `unixSockets: false` (the Landlock
 *   view, which has no mount namespace to hide ZINO's sockets, the D-Bus buses or
 *   docker's socket behind) AF_UNIX fails with EACCES too; `socketpair()`, a
 *   connected pair that reaches nobody else, stays allowed.
 * - io_uring (which can create sockets without calling `socket()`) fails with ENOSYS.
 * - New user namespaces fail with EPERM (`unshare`/`clone` with CLONE_NEWUSER), and
 *   `clone3`, whose flags a filter cannot read, with ENOSYS (C libraries fall back
 *   to `clone`): inside one the program would be "root" again, the start of most
 *   escapes and of much kernel attack surface.
 * - Only the architecture exc runs on is known (x86_64 or aarch64); a system call of
 *   any other ABI (i386, x32, arm32) kills the process, since its numbers differ and
 *   would slip through.
 */
import { endianness } from 'node:os';

/** `AUDIT_ARCH_*` values of `seccomp_data.arch`. */
const AUDIT_ARCH_X86_64 = 0xc000003e;
const AUDIT_ARCH_AARCH64 = 0xc00000b7;
/** x32 system calls on x86_64 carry this bit in their number. */
const X32_SYSCALL_BIT = 0x40000000;

/** System call numbers the filter looks at, per architecture. */
interface SyscallNumbers {
  socket: number;
  clone: number;
  unshare: number;
  clone3: number;
  io_uring_setup: number;
  io_uring_enter: number;
  io_uring_register: number;
}

/** Supported architectures: Node's `process.arch` → audit arch and system call numbers. */
export const ARCHITECTURES: Readonly<Record<string, { audit: number; nr: SyscallNumbers }>> = {
  x64: {
    audit: AUDIT_ARCH_X86_64,
    nr: { socket: 41, clone: 56, unshare: 272, clone3: 435, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427 },
  },
  arm64: {
    audit: AUDIT_ARCH_AARCH64,
    nr: { socket: 198, clone: 220, unshare: 97, clone3: 435, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427 },
  },
};

export const AF_UNIX = 1;
export const AF_INET = 2;
export const AF_INET6 = 10;
export const AF_NETLINK = 16;
export const AF_PACKET = 17;
export const NETLINK_ROUTE = 0;
export const NETLINK_SOCK_DIAG = 4;
export const NETLINK_GENERIC = 16;
export const CLONE_NEWUSER = 0x10000000;
export const EPERM = 1;
export const EACCES = 13;
export const ENOSYS = 38;

/** The netlink protocols the sandbox may open: they read the network configuration (changing it needs CAP_NET_ADMIN, which it lacks). */
export const NETLINK_ALLOWED: readonly number[] = [NETLINK_ROUTE, NETLINK_SOCK_DIAG, NETLINK_GENERIC];

export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ERRNO = 0x00050000;
export const SECCOMP_RET_ALLOW = 0x7fff0000;

/** Offsets in `struct seccomp_data`: nr, arch, then args[i] (the low 32 bits on a little-endian machine). */
export const OFFSET_NR = 0;
export const OFFSET_ARCH = 4;
export const offsetArg = (i: number): number => 16 + 8 * i;

// Classic BPF opcodes used here.
export const BPF_LD_W_ABS = 0x20;
export const BPF_JEQ_K = 0x15;
export const BPF_JSET_K = 0x45;
export const BPF_RET_K = 0x06;

/** One instruction with symbolic jump targets (labels), resolved by {@link assemble}. */
type Insn =
  { op: 'ld'; offset: number } | { op: 'jeq' | 'jset'; k: number; jt: string; jf?: string } | { op: 'ret'; k: number } | { op: 'label'; name: string };

/** Why `seccompFilter` cannot give a filter for this machine, or `undefined` when it can. */
export function seccompUnsupported(arch: string = process.arch): string | undefined {
  if (endianness() !== 'LE') return 'the seccomp filter is built for little-endian machines only';
  if (!ARCHITECTURES[arch]) return `no seccomp filter for the ${arch} architecture (x64 and arm64 only)`;
  return undefined;
}

/** What the filter lets through beyond its fixed rules. */
export interface SeccompOptions {
  /** `socket(AF_UNIX, …)` allowed. @default true */
  unixSockets?: boolean;
}

/** The filter for `arch` (Node's `process.arch`): the bytes bwrap (or the Landlock launcher) reads from `--seccomp FD`. */
export function seccompFilter(arch: string = process.arch, options: SeccompOptions = {}): Buffer {
  const unsupported = seccompUnsupported(arch);
  if (unsupported) throw new Error(unsupported);
  const native = ARCHITECTURES[arch] as { audit: number; nr: SyscallNumbers };
  const { nr } = native;
  const errno = (e: number): number => SECCOMP_RET_ERRNO | e;
  const program: Insn[] = [
    { op: 'ld', offset: OFFSET_ARCH },
    { op: 'jeq', k: native.audit, jt: 'native', jf: 'kill' },
    { op: 'label', name: 'native' },
    { op: 'ld', offset: OFFSET_NR },
    ...(arch === 'x64' ? [{ op: 'jset', k: X32_SYSCALL_BIT, jt: 'kill' } as const] : []),
    { op: 'jeq', k: nr.socket, jt: 'socket' },
    { op: 'jeq', k: nr.unshare, jt: 'newuser' },
    { op: 'jeq', k: nr.clone, jt: 'newuser' },
    { op: 'jeq', k: nr.clone3, jt: 'enosys' },
    { op: 'jeq', k: nr.io_uring_setup, jt: 'enosys' },
    { op: 'jeq', k: nr.io_uring_enter, jt: 'enosys' },
    { op: 'jeq', k: nr.io_uring_register, jt: 'enosys' },
    { op: 'ret', k: SECCOMP_RET_ALLOW },
    // socket(family, type, protocol)
    { op: 'label', name: 'socket' },
    { op: 'ld', offset: offsetArg(0) },
    ...(options.unixSockets === false ? [] : [{ op: 'jeq', k: AF_UNIX, jt: 'allow' } as const]),
    { op: 'jeq', k: AF_NETLINK, jt: 'netlink', jf: 'eacces' },
    { op: 'label', name: 'netlink' },
    { op: 'ld', offset: offsetArg(2) },
    ...NETLINK_ALLOWED.map((p) => ({ op: 'jeq', k: p, jt: 'allow' }) as const),
    { op: 'ret', k: errno(EACCES) },
    // unshare(flags) and clone(flags, …): the flags are the first argument on both architectures.
    { op: 'label', name: 'newuser' },
    { op: 'ld', offset: offsetArg(0) },
    { op: 'jset', k: CLONE_NEWUSER, jt: 'eperm', jf: 'allow' },
    { op: 'label', name: 'allow' },
    { op: 'ret', k: SECCOMP_RET_ALLOW },
    { op: 'label', name: 'eacces' },
    { op: 'ret', k: errno(EACCES) },
    { op: 'label', name: 'eperm' },
    { op: 'ret', k: errno(EPERM) },
    { op: 'label', name: 'enosys' },
    { op: 'ret', k: errno(ENOSYS) },
    { op: 'label', name: 'kill' },
    { op: 'ret', k: SECCOMP_RET_KILL_PROCESS },
  ];
  return assemble(program);
}

/** Resolves labels into forward jump offsets (a missing `jf` falls through) and encodes each `struct sock_filter`. */
function assemble(program: Insn[]): Buffer {
  const labels = new Map<string, number>();
  const insns: Exclude<Insn, { op: 'label' }>[] = [];
  for (const insn of program) {
    if (insn.op === 'label') labels.set(insn.name, insns.length);
    else insns.push(insn);
  }
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach((insn, pc) => {
    const jump = (label: string | undefined): number => {
      if (label === undefined) return 0;
      const target = labels.get(label);
      if (target === undefined) throw new Error(`seccomp filter: no label ${label}`);
      const offset = target - pc - 1;
      if (offset < 0 || offset > 255) throw new Error(`seccomp filter: jump to ${label} out of range`);
      return offset;
    };
    let code: number,
      jt = 0,
      jf = 0,
      k: number;
    if (insn.op === 'ld') [code, k] = [BPF_LD_W_ABS, insn.offset];
    else if (insn.op === 'ret') [code, k] = [BPF_RET_K, insn.k];
    else [code, jt, jf, k] = [insn.op === 'jeq' ? BPF_JEQ_K : BPF_JSET_K, jump(insn.jt), jump(insn.jf), insn.k];
    out.writeUInt16LE(code, pc * 8);
    out.writeUInt8(jt, pc * 8 + 2);
    out.writeUInt8(jf, pc * 8 + 3);
    out.writeUInt32LE(k >>> 0, pc * 8 + 4);
  });
  return out;
}
