#!/usr/bin/env python3
"""zino-sandbox: the launcher of exc's Landlock view (src/services/exc/sandbox.ts).

It confines itself, then runs one program under that confinement and supervises it:
the program sees the host as it is (the same processes, network namespace, file
owners and modes; no namespace of its own) but can write only in its working
directory, open no Internet or unix socket, signal or trace no process outside its
run, and nothing it starts outlives it. Only the standard library (ctypes, os), so
that it runs wherever python3 does, which ZINO requires anyway (docs/decisions.md).

Usage (every option before `--`, each at most once unless marked [many]):

    python3 -I -S -B zino-sandbox.py --workdir DIR [--hide PATH]... [--hide-prefix PREFIX]...
        [--seccomp-fd FD] [--user UID:GID[:GID,GID...]] [--grace-ms MS] [--probe] [--dry-run]
        -- PROGRAM [ARG...]

  --workdir DIR        the only place the program may write (every handled right).
  --hide PATH          [many] a directory or file the program may not read (or execute);
                       ZINO's sockets, data, config and audit log (sandbox.ts hiddenPaths).
  --hide-prefix PREFIX [many] every entry of dirname(PREFIX) whose name starts with
                       basename(PREFIX), at the time of the walk, is hidden (the other runs'
                       working directories: /tmp/zino-exc-); DIR itself stays writable.
  --seccomp-fd FD      read a classic BPF program (struct sock_filter[]) from FD to EOF and
                       load it last, as bubblewrap's --seccomp FD does.
  --user U:G[:GROUPS]  (exc is root) become this uid, gid and supplementary groups; from
                       root, setresuid clears every capability.
  --grace-ms MS        after a SIGTERM or SIGINT (passed on to the run), SIGKILL what is
                       still running after MS milliseconds (default 1000).
  --probe              print "landlock=ABI python=EXECUTABLE" on stdout before running the
                       program (exc's probe at start: sandbox.ts).
  --dry-run            print "abi N", then the rules ("RIGHTS PATH" lines), and exit 0;
                       nothing applied (N is 0 where the kernel has no Landlock).

Exit status: the program's (128 + N when signal N ended it, as a shell reports it);
125 when the launcher itself fails (usage, Landlock missing or older than ABI 6,
the ruleset or the filter refused), with one "zino-sandbox: ..." line on stderr;
126/127 when the program cannot be executed / is not found.

What it sets up, in this order:

1. Landlock ruleset (ABI detected with LANDLOCK_CREATE_RULESET_VERSION; only rights
   the ABI knows are handled). Handled: every write right (WRITE_FILE, REMOVE_*,
   MAKE_*, REFER, TRUNCATE, IOCTL_DEV) plus READ_FILE and EXECUTE, not READ_DIR
   (names can be listed everywhere, hidden directories included: Landlock cannot
   allow listing / without allowing it beneath). Rules: DIR gets every handled right;
   /dev/null read and write; READ_FILE|EXECUTE on every entry of / except the
   ancestors of hidden paths, which are walked into (each entry granted on its own)
   and the hidden paths themselves; symbolic links are skipped (their targets are
   covered where they are). Rules are allow-only, recursive and attached to what
   exists at the walk, so a file created later directly inside an ancestor of a
   hidden path (a new file in /tmp, or in the user's home when the data directory is
   ~/.local/share/zino) cannot be read by runs that started before it existed; a
   hard link or bind mount of a hidden file elsewhere is readable there. Network
   (ABI >= 4): BIND_TCP and CONNECT_TCP handled with no rule, so no TCP at all.
   Scopes (ABI >= 6): ABSTRACT_UNIX_SOCKET and SIGNAL, so the run can neither
   signal nor reach the abstract sockets of any process outside it (exc, ZINO's
   other services, the user's session, all of the same uid under `zino up`);
   Landlock also forbids tracing them, which keeps /proc/PID/environ and /mem out
   of reach. An ABI below 6 is refused: the view would let the run signal them.
2. no_new_privs; then, with --user, the switch to the run's user.
3. landlock_restrict_self; then the seccomp filter (sandbox.ts builds it: no
   Internet, packet or unix sockets, netlink for ip and ss, no io_uring, no new
   user namespace).
4. Child subreaper; fork. The child adds a nested Landlock domain with the two
   scopes, so that the program cannot signal this supervisor either, restores the
   signal dispositions Python changed (SIGPIPE, SIGXFSZ), and executes PROGRAM. The
   supervisor waits, reaping orphans (they reparent to it). A SIGTERM or SIGINT is
   passed on to the descendants still in its process group (exc signals that group,
   and SIGKILLs it after its own grace) and ends at once, with SIGKILL, those that
   left it (setsid: exc's SIGKILL would miss them); whatever is left --grace-ms later
   gets SIGKILL. When the program exits, it SIGKILLs whatever the program left
   (setsid, nohup, double fork) before exiting with the program's status. It asks
   for SIGTERM when exc dies (PR_SET_PDEATHSIG).
"""

import ctypes
import errno
import os
import signal
import stat
import sys

MIN_ABI = 6

SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on x86_64 and aarch64 (asm-generic)
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
LANDLOCK_RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

PR_SET_PDEATHSIG = 1
PR_SET_SECCOMP = 22
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2

READ = FS_READ_FILE | FS_EXECUTE
# Rights that may be given on a file (not only on a directory).
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV


class Failure(Exception):
    """The launcher cannot set up the sandbox: exit 125 with this message."""


def handled_fs(abi):
    """Every write right the ABI knows, plus READ_FILE and EXECUTE (READ_DIR deliberately not)."""
    rights = READ | FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_CHAR | FS_MAKE_DIR | FS_MAKE_REG
    rights |= FS_MAKE_SOCK | FS_MAKE_FIFO | FS_MAKE_BLOCK | FS_MAKE_SYM
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def rights_name(rights):
    names = [
        (FS_EXECUTE, "execute"),
        (FS_WRITE_FILE, "write_file"),
        (FS_READ_FILE, "read_file"),
        (FS_REMOVE_DIR, "remove_dir"),
        (FS_REMOVE_FILE, "remove_file"),
        (FS_MAKE_CHAR, "make_char"),
        (FS_MAKE_DIR, "make_dir"),
        (FS_MAKE_REG, "make_reg"),
        (FS_MAKE_SOCK, "make_sock"),
        (FS_MAKE_FIFO, "make_fifo"),
        (FS_MAKE_BLOCK, "make_block"),
        (FS_MAKE_SYM, "make_sym"),
        (FS_REFER, "refer"),
        (FS_TRUNCATE, "truncate"),
        (FS_IOCTL_DEV, "ioctl_dev"),
    ]
    return ",".join(name for bit, name in names if rights & bit)


# --- arguments ---------------------------------------------------------------


def parse(argv):
    opts = {"hide": [], "hide_prefix": [], "seccomp_fd": None, "user": None, "grace_ms": 1000, "probe": False, "dry_run": False}
    single = {"--workdir": "workdir", "--seccomp-fd": "seccomp_fd", "--user": "user", "--grace-ms": "grace_ms"}
    many = {"--hide": "hide", "--hide-prefix": "hide_prefix"}
    flags = {"--probe": "probe", "--dry-run": "dry_run"}
    seen = set()
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            program = argv[i + 1 :]
            break
        if arg in flags:
            opts[flags[arg]] = True
            i += 1
            continue
        if arg not in single and arg not in many:
            raise Failure("unknown option %r (see the top of %s)" % (arg, __file__))
        if i + 1 >= len(argv):
            raise Failure("%s needs a value" % arg)
        value = argv[i + 1]
        if arg in many:
            opts[many[arg]].append(value)
        elif arg in seen:
            raise Failure("%s given twice" % arg)
        else:
            seen.add(arg)
            opts[single[arg]] = value
        i += 2
    else:
        raise Failure('no "--" before the program')
    if "workdir" not in opts:
        raise Failure("--workdir is required")
    if not program and not opts["dry_run"]:
        raise Failure("no program after --")
    for key in ("seccomp_fd", "grace_ms"):
        if isinstance(opts[key], str):
            if not opts[key].isdigit():
                raise Failure("--%s must be a number, got %r" % (key.replace("_", "-"), opts[key]))
            opts[key] = int(opts[key])
    if opts["user"] is not None:
        opts["user"] = parse_user(opts["user"])
    for key in ("workdir",):
        if not os.path.isabs(opts[key]):
            raise Failure("--%s must be an absolute path" % key)
    for path in opts["hide"] + opts["hide_prefix"]:
        if not os.path.isabs(path):
            raise Failure("hidden paths must be absolute, got %r" % path)
    return opts, program


def parse_user(text):
    parts = text.split(":")
    groups = [g for g in parts[2].split(",") if g != ""] if len(parts) == 3 else []
    # Digits only: -1 would mean "unchanged" to setresuid, and so stay root.
    numbers = parts[:2] + groups
    if len(parts) not in (2, 3) or not all(n.isdigit() and 0 < int(n) < 2**32 - 1 for n in numbers):
        raise Failure("--user must be UID:GID[:GID,...] (not root, not -1), got %r" % text)
    return int(parts[0]), int(parts[1]), [int(g) for g in groups]


# --- the allowlist walk ------------------------------------------------------


def resolve(path):
    """The real path (Landlock works on what a path reaches); a missing one is kept as written."""
    return os.path.realpath(path)


def plan_rules(workdir, hidden, hide_prefixes, handled):
    """The (path, rights) rules: what the walk grants. Pure but for reading the tree."""
    hidden = {resolve(p) for p in hidden}
    prefixes = [(resolve(os.path.dirname(p)), os.path.basename(p)) for p in hide_prefixes]
    workdir = resolve(workdir)
    # Directories walked into rather than granted whole: every ancestor of a hidden path, and the directories of the prefixes.
    ancestors = set()
    for parent in [os.path.dirname(p) for p in hidden] + [d for d, _ in prefixes]:
        while parent not in ancestors:
            ancestors.add(parent)
            parent = os.path.dirname(parent)
    # A hidden / would hide everything: nothing to walk.
    rules = [(workdir, handled)]
    dev_null = (FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV) & handled
    rules.append(("/dev/null", dev_null))
    if "/" in hidden:
        return rules

    def hidden_by_prefix(directory, name):
        return any(directory == d and name.startswith(b) for d, b in prefixes)

    def walk(directory):
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            # Not listable (a directory exc's user cannot read): nothing beneath it is granted.
            return
        for name in names:
            path = os.path.join(directory, name)
            if path in hidden or path == workdir or hidden_by_prefix(directory, name):
                continue
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                continue
            if stat.S_ISDIR(st.st_mode) and path in ancestors:
                walk(path)
            else:
                rules.append((path, READ & handled))

    walk("/")
    return rules


# --- system calls ------------------------------------------------------------

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.prctl.restype = ctypes.c_int
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


class RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def check(result, what):
    if result < 0:
        err = ctypes.get_errno()
        raise Failure("%s: %s" % (what, os.strerror(err)))
    return result


def landlock_abi():
    result = libc.syscall(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    if result < 0:
        err = ctypes.get_errno()
        if err == errno.ENOSYS:
            raise Failure("the kernel has no Landlock (landlock_create_ruleset: ENOSYS)")
        if err == errno.EOPNOTSUPP:
            raise Failure("Landlock is disabled on this kernel (not in the lsm= list)")
        raise Failure("landlock_create_ruleset: %s" % os.strerror(err))
    return result


def create_ruleset(abi, fs, net, scoped):
    attr = RulesetAttr(fs, net, scoped)
    # The struct grew with the ABI: give the kernel only the fields it knows.
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    fd = libc.syscall(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    return check(fd, "landlock_create_ruleset")


def add_rule(ruleset, path, rights):
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False  # gone since the walk
    try:
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        allowed = rights if is_dir else rights & FILE_RIGHTS
        if allowed == 0:
            return False
        attr = PathBeneathAttr(allowed, fd)
        result = libc.syscall(ctypes.c_long(SYS_LANDLOCK_ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH), ctypes.byref(attr), ctypes.c_uint32(0))
        check(result, "landlock_add_rule %s" % path)
        return True
    finally:
        os.close(fd)


def restrict_self(ruleset):
    check(libc.syscall(ctypes.c_long(SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)), "landlock_restrict_self")


def prctl(option, arg2, what):
    check(libc.prctl(option, arg2, 0, 0, 0), what)


def load_seccomp(program):
    if len(program) == 0 or len(program) % 8 != 0 or len(program) // 8 > 4096:
        raise Failure("the seccomp filter is %d bytes, not a whole number of 8-byte instructions (at most 4096)" % len(program))
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0), "loading the seccomp filter")


def read_all(fd):
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


# --- supervision -------------------------------------------------------------


def children_of(pid):
    """Direct children of pid, from /proc/PID/task/*/children (CONFIG_PROC_CHILDREN), else from every /proc/*/stat."""
    found = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
        for task in tasks:
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                found.extend(int(p) for p in f.read().split())
        return found
    except FileNotFoundError:
        pass
    except OSError:
        return found
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                text = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        fields = text[text.rfind(")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def descendants():
    seen = []
    pending = [os.getpid()]
    while pending:
        for child in children_of(pending.pop()):
            if child not in seen:
                seen.append(child)
                pending.append(child)
    return seen


def signal_all(sig):
    for pid in descendants():
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def end_everything():
    """SIGKILL every descendant and reap until none is left (orphans keep reparenting to us)."""
    while True:
        signal_all(signal.SIGKILL)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def execute(program):
    """execvp without the imports os.execvp makes on the way (the run's user may not read Python's library)."""
    name = program[0]
    if "/" in name:
        os.execv(name, program)
    denied = None
    for directory in os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin").split(":"):
        try:
            os.execv(os.path.join(directory or ".", name), program)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except PermissionError as err:
            denied = err
    if denied is not None:
        raise denied
    raise FileNotFoundError(errno.ENOENT, "not found", name)


def supervise(program, grace_ms, nested_scopes):
    prctl(PR_SET_CHILD_SUBREAPER, 1, "PR_SET_CHILD_SUBREAPER")
    parent = os.getppid()
    # exc dying (even by SIGKILL) ends the run as a SIGTERM would.
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM, "PR_SET_PDEATHSIG")

    def on_alarm(_sig, _frame):
        signal_all(signal.SIGKILL)

    def on_stop(sig, _frame):
        # What left our process group did so to escape it, and exc's SIGKILL of the group would miss it: it ends now.
        group = os.getpgrp()
        for pid in descendants():
            try:
                os.kill(pid, sig if os.getpgid(pid) == group else signal.SIGKILL)
            except OSError:
                pass
        if signal.getitimer(signal.ITIMER_REAL)[0] == 0:
            signal.setitimer(signal.ITIMER_REAL, max(grace_ms, 1) / 1000)

    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    if os.getppid() != parent:
        on_stop(signal.SIGTERM, None)  # exc died before the death signal was armed

    child = os.fork()
    if child == 0:
        try:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM, signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(sig, signal.SIG_DFL)
            # A domain of its own inside ours: the program cannot signal (or trace) this supervisor.
            ruleset = create_ruleset(MIN_ABI, 0, 0, nested_scopes)
            restrict_self(ruleset)
            os.close(ruleset)
            execute(program)
        except Failure as failure:
            os.write(2, ("zino-sandbox: %s\n" % failure).encode())
            os._exit(125)
        except FileNotFoundError:
            os.write(2, ("zino-sandbox: %s: command not found\n" % program[0]).encode())
            os._exit(127)
        except OSError as err:
            os.write(2, ("zino-sandbox: cannot execute %s: %s\n" % (program[0], err.strerror)).encode())
            os._exit(126)
        os._exit(126)

    status = None
    while status is None:
        try:
            pid, st = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == child:
            status = st
    end_everything()
    if status is None:
        return 125
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


# --- main --------------------------------------------------------------------


def main(argv):
    opts, program = parse(argv)
    try:
        abi = landlock_abi()
    except Failure:
        if not opts["dry_run"]:
            raise
        abi = 0  # a plan needs no Landlock: the rights of ABI 1
    fs = handled_fs(abi)
    rules = plan_rules(opts["workdir"], opts["hide"], opts["hide_prefix"], fs)
    if opts["dry_run"]:
        sys.stdout.write("abi %d\n" % abi)
        for path, rights in rules:
            sys.stdout.write("%s %s\n" % (rights_name(rights), path))
        return 0
    if abi < MIN_ABI:
        raise Failure(
            "Landlock ABI %d is older than %d: without its signal and abstract-socket scopes the run could reach exc and ZINO's other services" % (abi, MIN_ABI)
        )
    seccomp = read_all(opts["seccomp_fd"]) if opts["seccomp_fd"] is not None else None
    scopes = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
    ruleset = create_ruleset(abi, fs, NET_BIND_TCP | NET_CONNECT_TCP, scopes)
    for path, rights in rules:
        add_rule(ruleset, path, rights)
    prctl(PR_SET_NO_NEW_PRIVS, 1, "PR_SET_NO_NEW_PRIVS")
    if opts["user"] is not None:
        uid, gid, groups = opts["user"]
        try:
            os.setgroups(groups)
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        except OSError as err:
            raise Failure("cannot become uid %d gid %d: %s" % (uid, gid, err.strerror))
    restrict_self(ruleset)
    os.close(ruleset)
    if seccomp is not None:
        load_seccomp(seccomp)
    if opts["probe"]:
        sys.stdout.write("landlock=%d python=%s\n" % (abi, sys.executable))
        sys.stdout.flush()
    return supervise(program, opts["grace_ms"], scopes)


if __name__ == "__main__":
    try:
        code = main(sys.argv[1:])
    except Failure as failure:
        sys.stderr.write("zino-sandbox: %s\n" % failure)
        code = 125
    sys.stdout.flush()
    os._exit(code)
