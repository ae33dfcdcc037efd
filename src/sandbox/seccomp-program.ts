/**
 * polywave's second seccomp filter as a classic-BPF program, for bubblewrap's `--seccomp <fd>` — the same program
 * native/polywave-seccomp.c installs, made here where that program was not built (no C compiler at install: a slim
 * container, a CI image): add_key, request_key and keyctl refused (kernel keyrings are not namespaced, X35-11), and
 * socketpair(AF_UNIX, <anything but SOCK_STREAM>) refused (a datagram pair can send to any host Unix datagram socket the
 * sandbox sees, X2 #6). EPERM for each; other architectures' calls (x32, i386) are left to sandbox-runtime's own
 * filter, which kills them. Filters stack: the library's stays in force.
 *
 * Written here rather than taken from a library: the program is 18 instructions, and the maintained seccomp packages
 * for node are native addons (a compiler again) or apply a filter to the calling process, which is not what bubblewrap
 * needs (the bytes, on a descriptor). The encoding is the kernel's `struct sock_filter` (linux/filter.h): u16 code,
 * u8 jt, u8 jf, u32 k, little-endian on both architectures.
 *
 * Bubblewrap applies it to everything in the sandbox — sandbox-runtime's network bridge too, whose socat needs datagram
 * pairs — so it is used for sandboxes without network hosts only; one with hosts allowed needs the native program,
 * which filters the command alone (wrap-in-sandbox.ts fails closed there).
 */

/** The architectures polywave builds a filter for, by `process.arch`. */
const architectures = {
  // AUDIT_ARCH_X86_64; the syscall numbers of arch/x86/entry/syscalls/syscall_64.tbl
  x64: { audit: 0xc000003e, calls: { add_key: 248, request_key: 249, keyctl: 250, socketpair: 53 } },
  // AUDIT_ARCH_AARCH64; include/uapi/asm-generic/unistd.h
  arm64: { audit: 0xc00000b7, calls: { add_key: 217, request_key: 218, keyctl: 219, socketpair: 199 } },
} as const;

const BPF_LD_W_ABS = 0x20;
const BPF_JMP_JEQ_K = 0x15;
const BPF_RET_K = 0x06;
const BPF_ALU_AND_K = 0x54;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO_EPERM = 0x00050000 | 1;
const AF_UNIX = 1;
const SOCK_STREAM = 1;
/** offsetof(struct seccomp_data, …): nr, arch, then the six 64-bit arguments from 16 (their low word first). */
const NR = 0;
const ARCH = 4;
const argLow = (index: number): number => 16 + 8 * index;

/** Whether a BPF filter can be made for this machine (Linux x64 or arm64). */
export function seccompProgramSupported(platform: string = process.platform, arch: string = process.arch): boolean {
  return platform === 'linux' && arch in architectures;
}

/** The filter's bytes for `arch` (`process.arch`), ready for `bwrap --seccomp`; throws for an architecture it does not know. */
export function seccompProgram(arch: string = process.arch): Buffer {
  const target = architectures[arch as keyof typeof architectures];
  if (!target) throw new Error(`no seccomp program for ${arch} (x64 and arm64 only)`);
  const instructions: Array<[code: number, jt: number, jf: number, k: number]> = [];
  const statement = (code: number, k: number) => instructions.push([code, 0, 0, k]);
  const jump = (k: number, jt: number, jf: number) => instructions.push([BPF_JMP_JEQ_K, jt, jf, k]);
  // another architecture's call: left to the library's filter
  statement(BPF_LD_W_ABS, ARCH);
  jump(target.audit, 1, 0);
  statement(BPF_RET_K, SECCOMP_RET_ALLOW);
  statement(BPF_LD_W_ABS, NR);
  for (const call of [target.calls.add_key, target.calls.request_key, target.calls.keyctl]) {
    jump(call, 0, 1);
    statement(BPF_RET_K, SECCOMP_RET_ERRNO_EPERM);
  }
  // socketpair(AF_UNIX, type & 0xf != SOCK_STREAM): refused
  jump(target.calls.socketpair, 0, 6);
  statement(BPF_LD_W_ABS, argLow(0));
  jump(AF_UNIX, 0, 4);
  statement(BPF_LD_W_ABS, argLow(1));
  statement(BPF_ALU_AND_K, 0xf);
  jump(SOCK_STREAM, 1, 0);
  statement(BPF_RET_K, SECCOMP_RET_ERRNO_EPERM);
  statement(BPF_RET_K, SECCOMP_RET_ALLOW);
  const bytes = Buffer.alloc(instructions.length * 8);
  instructions.forEach(([code, jt, jf, k], index) => {
    bytes.writeUInt16LE(code, index * 8);
    bytes.writeUInt8(jt, index * 8 + 2);
    bytes.writeUInt8(jf, index * 8 + 3);
    bytes.writeUInt32LE(k >>> 0, index * 8 + 4);
  });
  return bytes;
}
