/*
 * polywave-seccomp: runs a command with one more seccomp filter, inside the OS sandbox (Linux).
 *
 *   polywave-seccomp <command> [args...]
 *
 * sandbox-runtime's own filter (apply-seccomp) refuses socket(AF_UNIX, ...) but not
 * socketpair(AF_UNIX, SOCK_DGRAM | SOCK_SEQPACKET, ...): a datagram socket made that way can
 * sendto() (and connect() to) any filesystem Unix datagram socket the sandbox can see — a way out
 * of a sandbox whose network namespace has no other (outside attack, 2026-12-02). This filter
 * answers EPERM to socketpair(AF_UNIX, <anything but SOCK_STREAM>); stream pairs (pipes between a
 * process and its children: libuv, bash) are untouched, and they cannot be connected elsewhere.
 * Filters stack: the library's stays in force. Other architectures' calls (x32, i386) are left to
 * the library's filter, which kills them.
 *
 * Built by scripts/build-native-client.mjs into dist/native/polywave-seccomp when a C compiler is
 * there; src/sandbox/wrap-in-sandbox.ts runs every sandboxed command through it when it exists.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define POLYWAVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define POLYWAVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "polywave-seccomp: x86_64 and aarch64 only"
#endif

/* The low 32 bits of a syscall argument (little-endian: the first word of the 64-bit slot). */
#define ARG_LOW(n) (offsetof(struct seccomp_data, args) + (n) * sizeof(unsigned long long))

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: polywave-seccomp <command> [args...]\n");
    return 2;
  }
  struct sock_filter filter[] = {
    /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, POLYWAVE_AUDIT_ARCH, 1, 0),
    /* 2 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    /* 3 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    /* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socketpair, 0, 6),
    /* 5 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(0)),
    /* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 4),
    /* 7 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(1)),
    /* 8 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf),
    /* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_STREAM, 1, 0),
    /* 10 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
    /* 11 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program = {.len = (unsigned short)(sizeof filter / sizeof filter[0]), .filter = filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    fprintf(stderr, "polywave-seccomp: PR_SET_NO_NEW_PRIVS: %s\n", strerror(errno));
    return 126;
  }
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
    fprintf(stderr, "polywave-seccomp: PR_SET_SECCOMP: %s\n", strerror(errno));
    return 126;
  }
  execvp(argv[1], argv + 1);
  fprintf(stderr, "polywave-seccomp: %s: %s\n", argv[1], strerror(errno));
  return 127;
}
