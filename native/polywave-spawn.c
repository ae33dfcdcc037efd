/*
 * polywave-spawn: the git helper process of src/git/spawn-server.ts, in C.
 *
 * A long-running orchestrator starts hundreds of git commands per IMPL. Started by Node, each costs
 * the starting process ~3.5 ms of CPU (libuv forks the whole process, then execs; measured with
 * `execFile('/bin/true')` from a small node process: 1.8 ms user + 2.0 ms system per command),
 * and the node helper that took this off the orchestrator's thread became the queue every IMPL of a
 * PROGRAM tier waited in (bench:program: 2.0 s of its CPU for 470 commands). Here a command is
 * started with posix_spawn (glibc: clone(CLONE_VM|CLONE_VFORK), no page tables copied) from a
 * process of a few hundred KB, and the outputs are collected with poll(): ~0.1 ms per command.
 *
 * Protocol (all integers u32 little-endian; every message is `u32 length` + that many bytes):
 *   request 'E' u32 count, count x (u32 len, bytes)       the environment of the commands that follow
 *   request 'R' u32 id, u32 maxBuffer, u32 n, n x (u32 len, bytes) = file, cwd, argv[0..n-3],
 *               u32 inputLength, input bytes            run a command (stdin: input, then closed)
 *   request 'S' (as 'R')                                  run a command whose stdout is also sent as it comes:
 *                                                         a kind 5 answer per piece read (its bytes as `out`), the
 *                                                         final answer carrying only what was not sent before
 *   request 'K' u32 id                                    SIGTERM to that command (if it still runs)
 *   request 'U' u32 mask                                  the file mode creation mask of the commands that follow
 *                                                         (a resident server runs each request with its caller's)
 *   answer      u32 id, u8 kind, i32 value, u32 outLength, out, u32 errLength, err
 *               kind 0: exited with status `value`; 1: killed by signal `value`; 2: could not start
 *               (`value` = errno); 3 / 4: stdout / stderr went past maxBuffer (the command was sent
 *               SIGTERM, the output is cut there) — sent once the command ended and both pipes closed.
 * The file is looked up on the PATH of the command's own environment (as Node does). Commands start
 * with default signal dispositions and an empty signal mask, in this process's process group (Ctrl-C
 * reaches them; this process ignores SIGINT and stays for the orchestrator's shutdown). End of stdin:
 * this process exits; commands still running go on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
  char *data;
  size_t length;
  size_t capacity;
} Buffer;

typedef struct Command {
  uint32_t id;
  pid_t pid;
  int in_fd, out_fd, err_fd;
  char *input;
  size_t input_length, input_sent;
  Buffer out, err;
  size_t max_buffer;
  int exited, status;
  int over; /* 0, 3 (stdout) or 4 (stderr) */
  int stream; /* 'S': stdout pieces are answered as they are read */
  size_t streamed; /* stdout bytes already sent in pieces (they count against maxBuffer) */
  struct Command *next;
} Command;

static Command *commands;
static char **environment;
static size_t environment_count;
static int sigchld_pipe[2];
static Buffer requests;

static void die(const char *what) {
  perror(what);
  exit(1);
}

static void reserve(Buffer *buffer, size_t more) {
  if (buffer->length + more <= buffer->capacity) return;
  size_t capacity = buffer->capacity ? buffer->capacity : 4096;
  while (capacity < buffer->length + more) capacity *= 2;
  char *grown = realloc(buffer->data, capacity);
  if (!grown) die("realloc");
  buffer->data = grown;
  buffer->capacity = capacity;
}

static void append(Buffer *buffer, const void *bytes, size_t length) {
  reserve(buffer, length);
  memcpy(buffer->data + buffer->length, bytes, length);
  buffer->length += length;
}

static void put32(Buffer *buffer, uint32_t value) {
  unsigned char bytes[4] = {value & 0xff, (value >> 8) & 0xff, (value >> 16) & 0xff, (value >> 24) & 0xff};
  append(buffer, bytes, 4);
}

static int get32(const unsigned char *data, size_t length, size_t *at, uint32_t *value) {
  if (length - *at < 4 || *at > length) return -1;
  const unsigned char *p = data + *at;
  *value = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
  *at += 4;
  return 0;
}

/* A length-prefixed string, copied with a terminating NUL (NULL on a malformed message). */
static char *get_string(const unsigned char *data, size_t length, size_t *at) {
  uint32_t size;
  if (get32(data, length, at, &size) != 0 || length - *at < size) return NULL;
  char *text = malloc((size_t)size + 1);
  if (!text) die("malloc");
  memcpy(text, data + *at, size);
  text[size] = '\0';
  *at += size;
  return text;
}

static void write_all(int fd, const char *data, size_t length) {
  while (length > 0) {
    ssize_t written = write(fd, data, length);
    if (written < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        struct pollfd wait_for = {fd, POLLOUT, 0};
        poll(&wait_for, 1, -1);
        continue;
      }
      exit(0); /* the orchestrator went away */
    }
    data += written;
    length -= (size_t)written;
  }
}

static void answer(uint32_t id, unsigned char kind, int32_t value, const Buffer *out, const Buffer *err) {
  Buffer message = {0};
  size_t out_length = out ? out->length : 0, err_length = err ? err->length : 0;
  put32(&message, (uint32_t)(4 + 1 + 4 + 4 + out_length + 4 + err_length));
  put32(&message, id);
  append(&message, &kind, 1);
  put32(&message, (uint32_t)value);
  put32(&message, (uint32_t)out_length);
  if (out_length) append(&message, out->data, out_length);
  put32(&message, (uint32_t)err_length);
  if (err_length) append(&message, err->data, err_length);
  write_all(1, message.data, message.length);
  free(message.data);
}

static const char *environment_value(const char *name) {
  size_t length = strlen(name);
  for (size_t index = 0; index < environment_count; index += 1)
    if (strncmp(environment[index], name, length) == 0 && environment[index][length] == '=') return environment[index] + length + 1;
  return NULL;
}

/* posix_spawn of a path; a file the kernel cannot execute (ENOEXEC: a script without #!) is run by
   /bin/sh, as execvp — and so Node — does. */
static int spawn_file(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions, const posix_spawnattr_t *attributes, char *const argv[]) {
  int error = posix_spawn(pid, path, actions, attributes, argv, environment);
  if (error != ENOEXEC) return error;
  size_t count = 0;
  while (argv[count]) count += 1;
  char **shell = calloc(count + 2, sizeof(char *));
  if (!shell) die("calloc");
  shell[0] = "/bin/sh";
  shell[1] = (char *)path;
  for (size_t index = 1; index < count; index += 1) shell[index + 1] = argv[index];
  error = posix_spawn(pid, "/bin/sh", actions, attributes, shell, environment);
  free(shell);
  return error;
}

/* posix_spawn on `file`, looked up on the command environment's PATH when it has no slash, as execvp does (and so
   Node): an entry where it is not found (ENOENT, ENOTDIR, ESTALE, ENODEV, ETIMEDOUT) or not permitted (EACCES,
   remembered) is passed over; any other failure ends the search with that error — a later entry is never tried
   (X40-03: an ELOOP link earlier on PATH made a later program start). The command's cwd was checked before. */
static int spawn_in_path(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions, const posix_spawnattr_t *attributes, char *const argv[], const char *cwd) {
  if (strchr(file, '/')) return spawn_file(pid, file, actions, attributes, argv);
  const char *search = environment_value("PATH");
  if (!search) search = "/usr/local/bin:/usr/bin:/bin";
  int denied = 0;
  const char *start = search;
  for (;;) {
    const char *end = strchr(start, ':');
    size_t length = end ? (size_t)(end - start) : strlen(start);
    char *candidate = malloc(length + strlen(file) + strlen(cwd) + 3);
    if (!candidate) die("malloc");
    /* An empty or relative PATH entry is relative to the command's cwd (it is chdir'd there first). git-cli never
       sends one (src/git/harden.ts keeps only absolute entries: X40-02); kept here for execvp's semantics. */
    if (length == 0) sprintf(candidate, "%s/%s", cwd, file);
    else if (start[0] != '/') sprintf(candidate, "%s/%.*s/%s", cwd, (int)length, start, file);
    else sprintf(candidate, "%.*s/%s", (int)length, start, file);
    int error = access(candidate, X_OK) == 0 ? spawn_file(pid, candidate, actions, attributes, argv) : errno;
    free(candidate);
    if (error == 0) return 0;
    if (error == EACCES) denied = 1;
    else if (error != ENOENT && error != ENOTDIR && error != ESTALE && error != ENODEV && error != ETIMEDOUT) return error;
    if (!end) return denied ? EACCES : ENOENT;
    start = end + 1;
  }
}

static void run(const unsigned char *data, size_t length) {
  int stream = data[0] == 'S';
  size_t at = 1;
  uint32_t id, max_buffer, count;
  if (get32(data, length, &at, &id) || get32(data, length, &at, &max_buffer) || get32(data, length, &at, &count) || count < 3 || count > 1u << 20) return;
  char **strings = calloc(count + 1, sizeof(char *));
  if (!strings) die("calloc");
  for (uint32_t index = 0; index < count; index += 1) {
    strings[index] = get_string(data, length, &at);
    if (!strings[index]) {
      for (uint32_t other = 0; other < index; other += 1) free(strings[other]);
      free(strings);
      return;
    }
  }
  uint32_t input_length;
  if (get32(data, length, &at, &input_length) || length - at < input_length) {
    for (uint32_t index = 0; index < count; index += 1) free(strings[index]);
    free(strings);
    return;
  }
  const char *file = strings[0], *cwd = strings[1];
  char **argv = strings + 2;

  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  int error = 0;
  /* The cwd first, with its own error (X40-04: a cwd that is a file failed every PATH entry's chdir and was
     reported as a missing program): ENOENT, ENOTDIR or EACCES, as Node reports it. */
  int directory = open(cwd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory < 0) error = errno;
  else close(directory);
  if (!error && (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC))) error = errno;
  pid_t pid = -1;
  if (!error) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    posix_spawn_file_actions_addchdir_np(&actions, cwd);
    posix_spawnattr_init(&attributes);
    sigset_t all, none;
    sigfillset(&all);
    /* glibc leaves its two internal signals (32, 33) out of sigfillset, and its posix_spawn then
       starts the command with them IGNORED (they survive the exec); Node's children have them at the
       default like every other signal. Set in the sigset by hand so the command gets SIG_DFL. */
    for (int internal = 32; internal <= 33 && internal < SIGRTMIN; internal += 1) {
      unsigned long *words = (unsigned long *)&all;
      words[(internal - 1) / (8 * sizeof(unsigned long))] |= 1UL << ((internal - 1) % (8 * sizeof(unsigned long)));
    }
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attributes, &all);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    error = spawn_in_path(&pid, file, &actions, &attributes, argv, cwd);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
  /* The command's ends of its pipes. */
  if (in_pipe[0] >= 0) close(in_pipe[0]);
  if (out_pipe[1] >= 0) close(out_pipe[1]);
  if (err_pipe[1] >= 0) close(err_pipe[1]);
  if (error) {
    if (in_pipe[1] >= 0) close(in_pipe[1]);
    if (out_pipe[0] >= 0) close(out_pipe[0]);
    if (err_pipe[0] >= 0) close(err_pipe[0]);
    answer(id, 2, error, NULL, NULL);
  } else {
    Command *command = calloc(1, sizeof(Command));
    if (!command) die("calloc");
    command->id = id;
    command->pid = pid;
    command->in_fd = in_pipe[1];
    command->out_fd = out_pipe[0];
    command->err_fd = err_pipe[0];
    command->max_buffer = max_buffer;
    command->stream = stream;
    fcntl(command->in_fd, F_SETFL, fcntl(command->in_fd, F_GETFL) | O_NONBLOCK);
    fcntl(command->out_fd, F_SETFL, fcntl(command->out_fd, F_GETFL) | O_NONBLOCK);
    fcntl(command->err_fd, F_SETFL, fcntl(command->err_fd, F_GETFL) | O_NONBLOCK);
    if (input_length > 0) {
      command->input = malloc(input_length);
      if (!command->input) die("malloc");
      memcpy(command->input, data + at, input_length);
      command->input_length = input_length;
    } else {
      close(command->in_fd);
      command->in_fd = -1;
    }
    command->next = commands;
    commands = command;
  }
  for (uint32_t index = 0; index < count; index += 1) free(strings[index]);
  free(strings);
}

static void set_environment(const unsigned char *data, size_t length) {
  size_t at = 1;
  uint32_t count;
  if (get32(data, length, &at, &count) || count > 1u << 20) return;
  char **next = calloc((size_t)count + 1, sizeof(char *));
  if (!next) die("calloc");
  for (uint32_t index = 0; index < count; index += 1) {
    next[index] = get_string(data, length, &at);
    if (!next[index]) {
      for (uint32_t other = 0; other < index; other += 1) free(next[other]);
      free(next);
      return;
    }
  }
  static int owned = 0;
  for (size_t index = 0; index < environment_count; index += 1) free(environment[index]);
  if (owned) free(environment);
  owned = 1;
  environment = next;
  environment_count = count;
}

static void kill_command(const unsigned char *data, size_t length) {
  size_t at = 1;
  uint32_t id;
  if (get32(data, length, &at, &id)) return;
  for (Command *command = commands; command; command = command->next)
    if (command->id == id && !command->exited) kill(command->pid, SIGTERM);
}

/* 'U': the umask the following commands inherit (posix_spawn keeps the parent's; this process is single-threaded). */
static void set_umask(const unsigned char *data, size_t length) {
  size_t at = 1;
  uint32_t mask;
  if (get32(data, length, &at, &mask)) return;
  umask((mode_t)(mask & 0777));
}

/* Handles every complete request in the buffer; keeps a partial one for later. */
static void handle_requests(void) {
  size_t at = 0;
  for (;;) {
    uint32_t size;
    size_t start = at;
    if (get32((unsigned char *)requests.data, requests.length, &at, &size) || requests.length - at < size) {
      at = start;
      break;
    }
    const unsigned char *message = (unsigned char *)requests.data + at;
    if (size > 0) {
      if (message[0] == 'R' || message[0] == 'S') run(message, size);
      else if (message[0] == 'E') set_environment(message, size);
      else if (message[0] == 'K') kill_command(message, size);
      else if (message[0] == 'U') set_umask(message, size);
    }
    at += size;
  }
  memmove(requests.data, requests.data + at, requests.length - at);
  requests.length -= at;
}

static void on_sigchld(int signal_number) {
  (void)signal_number;
  int saved = errno;
  char byte = 0;
  if (write(sigchld_pipe[1], &byte, 1) < 0) { /* full: a wake-up is pending anyway */ }
  errno = saved;
}

/* Reads what a pipe has; at EOF (or an error) closes it. Output past maxBuffer is dropped and the command is stopped. */
static void drain(Command *command, int *fd, Buffer *buffer, int which) {
  char chunk[65536];
  for (;;) {
    ssize_t got = read(*fd, chunk, sizeof chunk);
    if (got > 0) {
      size_t keep = (size_t)got;
      size_t used = buffer->length + (which == 3 ? command->streamed : 0);
      if (used + keep > command->max_buffer) {
        keep = command->max_buffer > used ? command->max_buffer - used : 0;
        if (!command->over) {
          command->over = which;
          if (!command->exited) kill(command->pid, SIGTERM);
        }
      }
      append(buffer, chunk, keep);
      if (which == 3 && command->stream && buffer->length > 0) {
        answer(command->id, 5, 0, buffer, NULL);
        command->streamed += buffer->length;
        buffer->length = 0;
      }
      if ((size_t)got < sizeof chunk) return;
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) return;
    close(*fd);
    *fd = -1;
    return;
  }
}

static void reap(void) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (Command *command = commands; command; command = command->next)
      if (command->pid == pid) {
        command->exited = 1;
        command->status = status;
      }
  }
}

static void finish_ended(void) {
  Command **link = &commands;
  while (*link) {
    Command *command = *link;
    /* Ended and both pipes closed; or ended past maxBuffer (X40-05: execFile answers then, whatever still holds the
       pipes — a background child — is not waited for). */
    if (command->exited && ((command->out_fd < 0 && command->err_fd < 0) || command->over)) {
      if (command->in_fd >= 0) close(command->in_fd);
      if (command->out_fd >= 0) close(command->out_fd);
      if (command->err_fd >= 0) close(command->err_fd);
      if (command->over) answer(command->id, (unsigned char)command->over, 0, &command->out, &command->err);
      else if (WIFSIGNALED(command->status)) answer(command->id, 1, WTERMSIG(command->status), &command->out, &command->err);
      else answer(command->id, 0, WEXITSTATUS(command->status), &command->out, &command->err);
      *link = command->next;
      free(command->input);
      free(command->out.data);
      free(command->err.data);
      free(command);
      continue;
    }
    link = &command->next;
  }
}

int main(void) {
  static char *no_environment[1] = {NULL};
  environment = no_environment;
  signal(SIGINT, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  if (pipe2(sigchld_pipe, O_CLOEXEC | O_NONBLOCK)) die("pipe2");
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_sigchld;
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigemptyset(&action.sa_mask);
  sigaction(SIGCHLD, &action, NULL);
  fcntl(0, F_SETFD, FD_CLOEXEC);
  fcntl(1, F_SETFD, FD_CLOEXEC);
  int input_open = 1;
  struct pollfd *fds = NULL;
  Command **owners = NULL;
  int *kinds = NULL;
  size_t fds_capacity = 0;
  for (;;) {
    size_t count = 0, needed = 2;
    for (Command *command = commands; command; command = command->next) needed += 3;
    if (needed > fds_capacity) {
      fds_capacity = needed * 2;
      fds = realloc(fds, fds_capacity * sizeof *fds);
      owners = realloc(owners, fds_capacity * sizeof *owners);
      kinds = realloc(kinds, fds_capacity * sizeof *kinds);
      if (!fds || !owners || !kinds) die("realloc");
    }
    fds[count] = (struct pollfd){sigchld_pipe[0], POLLIN, 0};
    owners[count] = NULL;
    kinds[count++] = 0;
    if (input_open) {
      fds[count] = (struct pollfd){0, POLLIN, 0};
      owners[count] = NULL;
      kinds[count++] = 1;
    }
    for (Command *command = commands; command; command = command->next) {
      if (command->out_fd >= 0) {
        fds[count] = (struct pollfd){command->out_fd, POLLIN, 0};
        owners[count] = command;
        kinds[count++] = 3;
      }
      if (command->err_fd >= 0) {
        fds[count] = (struct pollfd){command->err_fd, POLLIN, 0};
        owners[count] = command;
        kinds[count++] = 4;
      }
      if (command->in_fd >= 0) {
        fds[count] = (struct pollfd){command->in_fd, POLLOUT, 0};
        owners[count] = command;
        kinds[count++] = 2;
      }
    }
    if (!input_open) return 0; /* the orchestrator is gone: the commands still running go on */
    int ready = poll(fds, (nfds_t)count, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    for (size_t index = 0; index < count; index += 1) {
      if (!fds[index].revents) continue;
      Command *command = owners[index];
      switch (kinds[index]) {
        case 0: {
          char sink[64];
          while (read(sigchld_pipe[0], sink, sizeof sink) > 0) {}
          reap();
          break;
        }
        case 1: {
          reserve(&requests, 65536);
          ssize_t got = read(0, requests.data + requests.length, 65536);
          if (got > 0) {
            requests.length += (size_t)got;
            handle_requests();
          } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
            input_open = 0;
          }
          break;
        }
        case 2: {
          ssize_t written = write(command->in_fd, command->input + command->input_sent, command->input_length - command->input_sent);
          if (written > 0) command->input_sent += (size_t)written;
          if ((written < 0 && errno != EAGAIN && errno != EINTR) || command->input_sent >= command->input_length) {
            close(command->in_fd);
            command->in_fd = -1;
          }
          break;
        }
        case 3:
          drain(command, &command->out_fd, &command->out, 3);
          break;
        case 4:
          drain(command, &command->err_fd, &command->err, 4);
          break;
      }
    }
    reap();
    finish_ended();
  }
}
