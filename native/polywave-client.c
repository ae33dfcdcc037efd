/*
 * polywave-client — the native thin client of polywave's resident mode (src/cli/resident-server.ts).
 *
 * Hooks call `polywave validate|check-completion|scan-stubs|list-impls|…` on every write; a fresh
 * Node process costs ~2× the Go binary's whole call before any of our code runs
 * (docs/performance.md). This client sends argv, cwd and the environment to a warm server over a
 * per-user Unix socket, writes the stdout/stderr frames it gets back through, and exits with the
 * server's exit code. Whenever that cannot be done exactly, it becomes `node <pkg>/bin/polywave.js
 * <args>` (execvp "node"), which is what the call would have been without it:
 *   - POLYWAVE_RESIDENT=0, or stdout or stderr is a terminal (colours, prompts, progress stay exact),
 *     or NODE_OPTIONS is set (the caller's --inspect, --max-old-space-size, … must apply);
 *   - the socket's directory is not ours, open to others or a symlink;
 *   - no server answers (then a server may be started in the background for the next call, one at
 *     a time: the pid file <socket>.pid is created with O_EXCL — but never in CI, only for a command
 *     the server could run, and only by the second such call within 60 s: see may_start_server);
 *   - the server says the command is not resident-capable (it writes, reads stdin without being
 *     resident-capable, …), that it is stopping (the code on disk changed; a new server is
 *     started), or that the call waited or ran too long there;
 *   - the server goes away before it sent any output (the command is read-only: running it again
 *     is safe). After output was written, or stdin was sent, a lost server is one coded line and
 *     exit 2.
 * Stdin is read only when the server asks for it ('i': `hook <event>` reads its payload), at most
 * MAX_STDIN bytes, and sent on the same connection. The request carries the caller's umask, its
 * RLIMIT_AS/DATA/CPU soft limits, RLIMIT_NOFILE hard limit (node raises its soft limit to it) and
 * nice level (the server refuses a caller whose limits are tighter than its own: that call runs in
 * node, under them).
 *
 * Installed as every bin of the package (polywave, polywave-tools, sawtools, polywave-fast) after a
 * successful compile; docs/performance.md ("Resident mode") says why and what it changes.
 *
 * C99 + POSIX; Linux and macOS. Built by scripts/build-native-client.mjs (cc -O2), which defines
 * POLYWAVE_VERSION. Wire format: see src/cli/resident-server.ts.
 */
#define _DEFAULT_SOURCE
#define _DARWIN_C_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __APPLE__
#include <mach-o/dyld.h>
#endif

/* The hook payload limit (8 MiB) + 1: a larger payload is refused by the command as node refuses it. */
#define MAX_STDIN (8u * 1024u * 1024u + 1u)
/* Request feature bits: 1 = this client answers 'i' with its stdin. */
#define FEATURE_STDIN 1u

/* Outside CI, no server is started by a one-off call: only the second call within this many seconds
   that found no server (a marker file beside the socket, its mtime the clock) starts one. */
#define START_WINDOW_S 60

#ifndef POLYWAVE_VERSION
#define POLYWAVE_VERSION "0.0.0"
#endif

extern char **environ;

static char package_dir[PATH_MAX];
static char launcher[PATH_MAX];

/* The command as it would run without the client. */
static void exec_node(int argc, char **argv) {
  char **args = calloc((size_t)argc + 2, sizeof(char *));
  if (!args) _exit(2);
  args[0] = "node";
  args[1] = launcher;
  for (int i = 1; i < argc; i++) args[i + 1] = argv[i];
  args[argc + 1] = NULL;
  signal(SIGPIPE, SIG_DFL);
  execvp("node", args);
  fprintf(stderr, "polywave: error[RESIDENT_NO_NODE]: cannot run node: %s\n", strerror(errno));
  _exit(2);
}

static int is_launcher_dir(const char *dir) {
  char file[PATH_MAX];
  if (snprintf(file, sizeof file, "%s/bin/polywave.js", dir) >= (int)sizeof file) return 0;
  return access(file, R_OK) == 0;
}

/* The package directory: the nearest ancestor (up to 3 levels) of this executable that holds bin/polywave.js. */
static int find_package_dir(void) {
  char exe[PATH_MAX];
  char real[PATH_MAX];
#ifdef __APPLE__
  uint32_t size = sizeof exe;
  if (_NSGetExecutablePath(exe, &size) != 0) return 0;
#else
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return 0;
  exe[n] = '\0';
#endif
  if (!realpath(exe, real)) return 0;
  for (int level = 0; level < 3; level++) {
    char *slash = strrchr(real, '/');
    if (!slash || slash == real) return 0;
    *slash = '\0';
    if (is_launcher_dir(real)) {
      strcpy(package_dir, real);
      snprintf(launcher, sizeof launcher, "%s/bin/polywave.js", real);
      return 1;
    }
  }
  return 0;
}

static uint32_t fnv1a(const char *text, uint32_t hash) {
  for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
    hash ^= *p;
    hash *= 0x01000193u;
  }
  return hash;
}

/* A real directory (not a symlink) of ours, closed to others. */
static int private_dir(const char *dir) {
  struct stat st;
  return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() && (st.st_mode & 077) == 0;
}

/* $POLYWAVE_RESIDENT_SOCKET; else $XDG_RUNTIME_DIR/polywave/resident-<hash>.sock when that directory
   is absolute, ours and private; else <tmp>/polywave-<uid>/resident-<hash>.sock, where hash is
   fnv1a(package dir "\n" version) — as residentSocketPath() in src/cli/resident-server.ts. */
static int socket_path(char *out, size_t size) {
  const char *explicit_path = getenv("POLYWAVE_RESIDENT_SOCKET");
  if (explicit_path && *explicit_path) {
    if (explicit_path[0] == '/') return snprintf(out, size, "%s", explicit_path) < (int)size;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return 0;
    return snprintf(out, size, "%s/%s", cwd, explicit_path) < (int)size;
  }
  uint32_t hash = fnv1a(package_dir, 0x811c9dc5u);
  hash = fnv1a("\n", hash);
  hash = fnv1a(POLYWAVE_VERSION, hash);
  char dir[PATH_MAX];
  const char *runtime = getenv("XDG_RUNTIME_DIR");
  if (runtime && runtime[0] == '/' && private_dir(runtime)) {
    snprintf(dir, sizeof dir, "%s", runtime);
    size_t length = strlen(dir);
    while (length > 1 && dir[length - 1] == '/') dir[--length] = '\0';
    if (length == 1) dir[0] = '\0';
    return snprintf(out, size, "%s/polywave/resident-%08x.sock", dir, (unsigned)hash) < (int)size;
  }
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = getenv("TMP");
  if (!tmp || !*tmp) tmp = getenv("TEMP");
  if (!tmp || !*tmp) tmp = "/tmp";
  snprintf(dir, sizeof dir, "%s", tmp);
  size_t length = strlen(dir);
  while (length > 1 && dir[length - 1] == '/') dir[--length] = '\0';
  return snprintf(out, size, "%s/polywave-%lu/resident-%08x.sock", dir, (unsigned long)getuid(), (unsigned)hash) < (int)size;
}

/* The socket's directory must be a real directory (not a symlink), ours, closed to others. */
static int safe_dir(const char *socket_file) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", socket_file);
  char *slash = strrchr(dir, '/');
  if (!slash) return 0;
  if (slash == dir) slash[1] = '\0';
  else *slash = '\0';
  struct stat st;
  if (lstat(dir, &st) != 0) {
    if (errno != ENOENT || mkdir(dir, 0700) != 0 || lstat(dir, &st) != 0) return 0;
  }
  return S_ISDIR(st.st_mode) && st.st_uid == getuid() && (st.st_mode & 077) == 0;
}

/* True when `pid` runs: exists for kill(pid, 0) and, on Linux, is not a zombie nobody reaped. */
static int process_alive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno != EPERM) return 0;
#ifdef __linux__
  char file[64];
  char text[512];
  snprintf(file, sizeof file, "/proc/%ld/stat", (long)pid);
  int fd = open(file, O_RDONLY);
  if (fd < 0) return 1;
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 1;
  text[n] = '\0';
  char *end = strrchr(text, ')');
  if (end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X')) return 0;
#endif
  return 1;
}

/* True when `name` is set to a non-empty value. */
static int env_set(const char *name) {
  const char *value = getenv(name);
  return value && *value;
}

/* The environment says this is CI (as Nx decides for its daemon): CI set and not "false"/"0", or one
   of the CI services' own variables. A running server is still used there; none is started. */
static int in_ci(void) {
  const char *ci = getenv("CI");
  if (ci && *ci && strcmp(ci, "false") != 0 && strcmp(ci, "0") != 0) return 1;
  return env_set("GITHUB_ACTIONS") || env_set("GITLAB_CI") || env_set("BUILDKITE") || env_set("JENKINS_URL") || env_set("TF_BUILD");
}

/* The commands a server could run (src/cli/resident-server.ts: residentCommands and stdinCommands;
   test/resident.test.ts checks the two lists agree). A call of any other command never starts one. */
static const char *const resident_commands[] = {
    "validate", "validate-program", "check-completion", "scan-stubs", "list-impls", "list-programs", "resolve-impl",
    "program-status", "query", "metrics", "check-conflicts", "freeze-check", "check-callers", "analyze-deps",
    "detect-cascades", "detect-shared-types", "detect-wiring", "detect-scaffolds", "check-test-cascade",
    "analyze-suitability", "suggest-wave-structure", "list-error-ranges", "hook", NULL};

/* The command's name after the root options ([--repo-dir D] <command>), as invokedCommandName(); NULL when none. */
static const char *command_name(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--repo-dir") == 0) {
      i++;
      continue;
    }
    if (strncmp(argv[i], "--repo-dir=", 11) == 0) continue;
    return argv[i];
  }
  return NULL;
}

static int resident_command(int argc, char **argv) {
  const char *name = command_name(argc, argv);
  if (name == NULL || name[0] == '-') return 0;
  for (const char *const *known = resident_commands; *known; known++)
    if (strcmp(name, *known) == 0) return 1;
  return 0;
}

/* Whether the call is the `resident` command itself (status, stop, start): it never starts a server on its way
   (outside round X47: `resident status` under POLYWAVE_RESIDENT=1 started one, then said it was running). */
static int resident_self(int argc, char **argv) {
  const char *name = command_name(argc, argv);
  return name != NULL && strcmp(name, "resident") == 0;
}

/* Whether this call, which found no server, starts one: POLYWAVE_RESIDENT=1 always (but `resident …`); in CI never;
   else only for a command the server could run, and only when another such call found no server
   within START_WINDOW_S seconds (the marker <socket>.seen, 0600, in our private directory: its
   mtime says when). A one-off script call leaves no server behind; a hook or a loop gets one on
   its second call. */
static int may_start_server(const char *socket_file, int argc, char **argv) {
  const char *mode = getenv("POLYWAVE_RESIDENT");
  if (resident_self(argc, argv)) return 0;
  if (mode && strcmp(mode, "1") == 0) return 1;
  if (in_ci() || !resident_command(argc, argv)) return 0;
  char marker[PATH_MAX];
  if (snprintf(marker, sizeof marker, "%s.seen", socket_file) >= (int)sizeof marker) return 0;
  struct stat st;
  time_t now = time(NULL);
  if (lstat(marker, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() && st.st_mtime <= now && now - st.st_mtime < START_WINDOW_S) {
    unlink(marker);
    return 1;
  }
  if (lstat(marker, &st) == 0 && !S_ISREG(st.st_mode)) return 0;
  int fd = open(marker, O_WRONLY | O_CREAT | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    /* mtime = now (the file may exist, older than the window) */
    futimens(fd, NULL);
    close(fd);
  }
  return 0;
}

/* The caller's resource limits and nice level, as the request and the server's start carry them:
   "as=<n|inf> data=… cpu=… nofile=… nice=<n>" (soft limits in bytes, bytes, seconds; nofile the hard
   limit, which node raises its soft limit to). */
static void limits_text(char *out, size_t size) {
  static const struct {
    const char *name;
    int resource;
  } limits[] = {{"as", RLIMIT_AS}, {"data", RLIMIT_DATA}, {"cpu", RLIMIT_CPU}, {"nofile", RLIMIT_NOFILE}};
  size_t used = 0;
  out[0] = '\0';
  for (size_t i = 0; i < sizeof limits / sizeof limits[0] && used < size; i++) {
    struct rlimit limit;
    int n;
    /* Node raises its open-files soft limit to the hard one at start: that is the limit node would run under. */
    rlim_t value;
    if (getrlimit(limits[i].resource, &limit) != 0) value = RLIM_INFINITY;
    else value = limits[i].resource == RLIMIT_NOFILE ? limit.rlim_max : limit.rlim_cur;
    if (value == RLIM_INFINITY) n = snprintf(out + used, size - used, "%s=inf ", limits[i].name);
    else n = snprintf(out + used, size - used, "%s=%llu ", limits[i].name, (unsigned long long)value);
    if (n < 0) return;
    used += (size_t)n;
  }
  errno = 0;
  int nice_level = getpriority(PRIO_PROCESS, 0);
  if (used < size) snprintf(out + used, size - used, "nice=%d", errno == 0 ? nice_level : 0);
}

/* Starts `node bin/polywave.js resident start --foreground` detached, unless the pid file says one is starting or running. */
static void start_server(const char *socket_file) {
  char pid_file[PATH_MAX];
  if (snprintf(pid_file, sizeof pid_file, "%s.pid", socket_file) >= (int)sizeof pid_file) return;
  int fd = -1;
  for (int attempt = 0; attempt < 2 && fd < 0; attempt++) {
    fd = open(pid_file, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd >= 0 || errno != EEXIST) break;
    /* Someone holds it: a live process (a server, or one starting) wins; a dead holder's file is removed. */
    char text[32] = {0};
    int rfd = open(pid_file, O_RDONLY);
    if (rfd < 0) return;
    ssize_t n = read(rfd, text, sizeof text - 1);
    close(rfd);
    long pid = n > 0 ? strtol(text, NULL, 10) : 0;
    /* The socket refused us, so no server listens: a holder is a server still starting (the pid
       file is at most a few seconds old), or one that died or hangs (a killed process may stay a
       zombie, alive for kill(pid, 0), where nothing reaps it). An old file is taken over. */
    struct stat st;
    int young = stat(pid_file, &st) == 0 && st.st_mtime + 10 > time(NULL);
    if (young && (pid <= 0 || process_alive((pid_t)pid))) return;
    unlink(pid_file);
  }
  if (fd < 0) return;
  pid_t child = fork();
  if (child < 0) {
    close(fd);
    unlink(pid_file);
    return;
  }
  if (child == 0) {
    setsid();
    pid_t grandchild = fork();
    if (grandchild != 0) {
      if (grandchild > 0) {
        char text[32];
        int length = snprintf(text, sizeof text, "%ld\n", (long)grandchild);
        if (write(fd, text, (size_t)length) < 0) _exit(1);
      }
      _exit(0);
    }
    /* Nothing of the caller's but the environment: its other descriptors (a pipe someone waits on
       to close, a lock) must not live on in the server. */
    long max_fd = sysconf(_SC_OPEN_MAX);
    if (max_fd < 0 || max_fd > 65536) max_fd = 65536;
    for (long other = 3; other < max_fd; other++) close((int)other);
    int null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      dup2(null_fd, 0);
      dup2(null_fd, 1);
      dup2(null_fd, 2);
      if (null_fd > 2) close(null_fd);
    }
    if (chdir("/") != 0) _exit(1);
    /* The server listens where this client looks: the absolute path (the server runs in "/"), and the
       name hashed from the version compiled in here even if package.json says another one since. */
    setenv("POLYWAVE_RESIDENT_SOCKET", socket_file, 1);
    /* The limits it runs under (inherited from here): the server reads /proc/self/limits where it
       can, this where it cannot (macOS). */
    char limits[256];
    limits_text(limits, sizeof limits);
    setenv("POLYWAVE_RESIDENT_LIMITS", limits, 1);
    signal(SIGPIPE, SIG_DFL);
    char *args[] = {"node", launcher, "resident", "start", "--foreground", NULL};
    execvp("node", args);
    _exit(127);
  }
  close(fd);
  while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
  }
}

/* A growing byte buffer for the request. */
struct buffer {
  unsigned char *data;
  size_t length, capacity;
};

static void put(struct buffer *b, const void *bytes, size_t length) {
  if (b->length + length > b->capacity) {
    size_t capacity = b->capacity ? b->capacity : 4096;
    while (capacity < b->length + length) capacity *= 2;
    unsigned char *data = realloc(b->data, capacity);
    if (!data) exit(2);
    b->data = data;
    b->capacity = capacity;
  }
  memcpy(b->data + b->length, bytes, length);
  b->length += length;
}

static void put_u32(struct buffer *b, uint32_t value) {
  unsigned char bytes[4] = {(unsigned char)(value >> 24), (unsigned char)(value >> 16), (unsigned char)(value >> 8), (unsigned char)value};
  put(b, bytes, 4);
}

static void put_text(struct buffer *b, const char *text) {
  size_t length = strlen(text);
  put_u32(b, (uint32_t)length);
  put(b, text, length);
}

static int write_all(int fd, const unsigned char *data, size_t length) {
  while (length > 0) {
    ssize_t n = write(fd, data, length);
    if (n < 0) {
      if (errno == EINTR) continue;
      return 0;
    }
    data += n;
    length -= (size_t)n;
  }
  return 1;
}

/* Reads exactly `length` bytes; 0 on EOF or error. */
static int read_all(int fd, unsigned char *data, size_t length) {
  while (length > 0) {
    ssize_t n = read(fd, data, length);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;
    data += n;
    length -= (size_t)n;
  }
  return 1;
}

int main(int argc, char **argv) {
  if (!find_package_dir()) {
    fprintf(stderr, "polywave: error[RESIDENT_NO_PACKAGE]: cannot find bin/polywave.js beside this executable\n");
    return 2;
  }
  const char *mode = getenv("POLYWAVE_RESIDENT");
  if ((mode && strcmp(mode, "0") == 0) || isatty(1) || isatty(2) || env_set("NODE_OPTIONS")) exec_node(argc, argv);

  char socket_file[sizeof(((struct sockaddr_un *)0)->sun_path)];
  if (!socket_path(socket_file, sizeof socket_file) || !safe_dir(socket_file)) exec_node(argc, argv);

  signal(SIGPIPE, SIG_IGN);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) exec_node(argc, argv);
  struct sockaddr_un address;
  memset(&address, 0, sizeof address);
  address.sun_family = AF_UNIX;
  memcpy(address.sun_path, socket_file, strlen(socket_file) + 1);
  if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
    close(fd);
    if (may_start_server(socket_file, argc, argv)) start_server(socket_file);
    exec_node(argc, argv);
  }

  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) exec_node(argc, argv);
  struct buffer request = {0};
  put(&request, "PWR1\0\0\0\0", 8);
  put(&request, "r", 1);
  put_u32(&request, (uint32_t)(argc - 1));
  for (int i = 1; i < argc; i++) put_text(&request, argv[i]);
  put_text(&request, cwd);
  uint32_t count = 0;
  for (char **entry = environ; *entry; entry++) count++;
  put_u32(&request, count);
  for (char **entry = environ; *entry; entry++) put_text(&request, *entry);
  mode_t mask = umask(0);
  umask(mask);
  put_u32(&request, FEATURE_STDIN);
  put_u32(&request, (uint32_t)mask);
  /* then (newer clients): u32 count + "name=value" texts; one today, the limits */
  char limits[256];
  limits_text(limits, sizeof limits);
  put_u32(&request, 1);
  put_text(&request, limits);
  uint32_t payload = (uint32_t)(request.length - 8);
  request.data[4] = (unsigned char)(payload >> 24);
  request.data[5] = (unsigned char)(payload >> 16);
  request.data[6] = (unsigned char)(payload >> 8);
  request.data[7] = (unsigned char)payload;
  /* A server that stops may close before reading it all: its answer, read below, says what to do. */
  write_all(fd, request.data, request.length);
  free(request.data);

  int wrote = 0;
  size_t capacity = 65536;
  unsigned char *body = malloc(capacity);
  if (!body) exec_node(argc, argv);
  for (;;) {
    unsigned char header[5];
    if (!read_all(fd, header, 5)) break;
    uint32_t length = ((uint32_t)header[1] << 24) | ((uint32_t)header[2] << 16) | ((uint32_t)header[3] << 8) | header[4];
    if (length > capacity) {
      unsigned char *grown = realloc(body, length);
      if (!grown) break;
      body = grown;
      capacity = length;
    }
    if (!read_all(fd, body, length)) break;
    switch (header[0]) {
      case 'o':
      case 'e':
        wrote = 1;
        if (!write_all(header[0] == 'o' ? 1 : 2, body, length)) {
          /* The reader went away (`| head`): stop quietly, like the Node CLI. */
          if (errno == EPIPE) _exit(0);
        }
        break;
      case 'x':
        return length > 0 ? body[0] : 2;
      case 'i': {
        /* The command reads stdin: all of it, at most MAX_STDIN bytes; from now on the call
           cannot be run again by node. */
        wrote = 1;
        struct buffer input = {0};
        put_u32(&input, 0);
        unsigned char chunk[65536];
        while (input.length - 4 < MAX_STDIN) {
          size_t want = MAX_STDIN - (input.length - 4);
          ssize_t n = read(0, chunk, want < sizeof chunk ? want : sizeof chunk);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) break;
          put(&input, chunk, (size_t)n);
        }
        uint32_t size = (uint32_t)(input.length - 4);
        input.data[0] = (unsigned char)(size >> 24);
        input.data[1] = (unsigned char)(size >> 16);
        input.data[2] = (unsigned char)(size >> 8);
        input.data[3] = (unsigned char)size;
        int sent = write_all(fd, input.data, input.length);
        free(input.data);
        if (!sent) goto lost;
        break;
      }
      case 'n':
        close(fd);
        /* A server was in use and is being replaced: start the next one (not in CI, where none is started). */
        if (length > 0 && body[0] == 1 && !wrote && (!in_ci() || (mode && strcmp(mode, "1") == 0))) start_server(socket_file);
        if (!wrote) exec_node(argc, argv);
        goto lost;
      default:
        goto lost;
    }
  }
  close(fd);
  if (!wrote) exec_node(argc, argv);
lost:
  fprintf(stderr, "polywave: error[RESIDENT_LOST]: the resident server went away during the call (POLYWAVE_RESIDENT=0 runs without it)\n");
  return 2;
}
