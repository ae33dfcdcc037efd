/*
 * polywave-seccomp: runs a command with one more seccomp filter, inside the OS sandbox (Linux).
 *
 *   polywave-seccomp [--no-ipc] <command> [args...]
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

/* Kernel keyrings are not namespaced: a sandbox could link the user's keyring into its own session keyring and read
 * (or plant, or clear) its keys — Kerberos tickets, cached passphrases (outside attack X35-11). Always refused. */
static const int keyring_calls[] = {__NR_add_key, __NR_request_key, __NR_keyctl};
/* System V IPC and POSIX message queues: polywave's own sandbox gives each command a private IPC namespace
 * (bubblewrap's --unshare-ipc); a sandbox made by another program (Claude Code's, for its Bash) may share the host's,
 * where another process's shared memory, queues and semaphores can be read and written (X35-12). With --no-ipc they
 * are refused. */
static const int ipc_calls[] = {__NR_shmget, __NR_shmat, __NR_shmdt, __NR_shmctl, __NR_msgget, __NR_msgsnd, __NR_msgrcv, __NR_msgctl,
                                __NR_semget, __NR_semop, __NR_semtimedop, __NR_semctl, __NR_mq_open, __NR_mq_unlink, __NR_mq_timedsend,
                                __NR_mq_timedreceive, __NR_mq_notify, __NR_mq_getsetattr};
#define COUNT(array) ((int)(sizeof(array) / sizeof((array)[0])))
#define REFUSE BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))

int main(int argc, char **argv) {
  int first = 1;
  int no_ipc = 0;
  if (argc >= 2 && strcmp(argv[1], "--no-ipc") == 0) {
    no_ipc = 1;
    first = 2;
  }
  if (argc <= first) {
    fprintf(stderr, "usage: polywave-seccomp [--no-ipc] <command> [args...]\n");
    return 2;
  }
  struct sock_filter filter[4 + 2 * (COUNT(keyring_calls) + COUNT(ipc_calls)) + 8];
  int n = 0;
  filter[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  filter[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, POLYWAVE_AUDIT_ARCH, 1, 0);
  filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  filter[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  for (int i = 0; i < COUNT(keyring_calls); i++) {
    filter[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)keyring_calls[i], 0, 1);
    filter[n++] = (struct sock_filter)REFUSE;
  }
  for (int i = 0; no_ipc && i < COUNT(ipc_calls); i++) {
    filter[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)ipc_calls[i], 0, 1);
    filter[n++] = (struct sock_filter)REFUSE;
  }
  /* socketpair(AF_UNIX, <anything but SOCK_STREAM>): refused (the accumulator holds nr here) */
  filter[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socketpair, 0, 6);
  filter[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(0));
  filter[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 4);
  filter[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(1));
  filter[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf);
  filter[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_STREAM, 1, 0);
  filter[n++] = (struct sock_filter)REFUSE;
  filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog program = {.len = (unsigned short)n, .filter = filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    fprintf(stderr, "polywave-seccomp: PR_SET_NO_NEW_PRIVS: %s\n", strerror(errno));
    return 126;
  }
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
    fprintf(stderr, "polywave-seccomp: PR_SET_SECCOMP: %s\n", strerror(errno));
    return 126;
  }
  execvp(argv[first], argv + first);
  fprintf(stderr, "polywave-seccomp: %s: %s\n", argv[first], strerror(errno));
  return 127;
}
