/*
 * polywave-executor: the per-agent tool executor in C — the same program as toolExecutorMain
 * (src/agents/sandbox/tool-executor-main.ts), the same protocol, the same answers; started by
 * src/agents/sandbox/tool-executor.ts inside the agent's OS sandbox instead of `node -e` when it
 * was built (scripts/build-native-client.mjs → dist/native/polywave-executor). This program starts
 * in ~1 ms and ~1.5 MB (node's executor: ~43 MB); a whole sandboxed executor start (bubblewrap,
 * the seccomp helpers, the shells, the executor) measured ~65–75 ms of CPU with it against
 * ~125–150 ms with node's — one per agent, 16 per wave in bench:sandbox.
 *
 * Protocol: JSON lines over stdio. Request `{id, op, path, …}`, answer `{id, ok: true, …}` or
 * `{id, ok: false, code, message}` (code: the errno name, message: node's form, e.g.
 * "EROFS: read-only file system, open '/path'"). The first line is `{id: 0, ok: true, ready: pid,
 * env: {…}, sweep: bool}`.
 * - write {path, data (base64)} → {existed, bytes}: parents created (mkdir -p), the last component
 *   opened with O_NOFOLLOW|O_NONBLOCK (an existing file without O_CREAT, a new one with O_EXCL),
 *   a regular file only (EINVAL), and on Linux its real path (/proc/self/fd) must be `path` itself
 *   before anything is written (EXDEV; a file the call created elsewhere is removed again).
 * - read {path, limit} → {kind, size, data (base64)}: O_NOFOLLOW; a non-file answers data "".
 * - list {path} → {entries: [{name, kind, target?}]}; stat {path} → {kind, size} (lstat).
 * - run {command, cwd, env} → chunks {id, chunk (base64)}, then {exitCode, signal} or {spawnError}:
 *   `bash -c command` (bash found on the PATH of `env`), a session of its own, stdin /dev/null.
 *   When bash exits its process group is killed, then — inside sandbox-runtime as the child of
 *   the PID namespace's init (SANDBOX_RUNTIME=1, parent PID 1) — every other process of the
 *   namespace (kill(-1, SIGKILL), three times); the answer comes once both output pipes closed or
 *   one second passed.
 * - signal {target, signal} → {}: SIGTERM to the run's process group, or SIGKILL to it and the sweep.
 * A line that is not a JSON object is ignored; a request without what its op needs answers EINVAL.
 *
 * C99 + POSIX, libc only; Linux and macOS (where the /proc check and the sweep do nothing).
 */
#define _DEFAULT_SOURCE
#define _DARWIN_C_SOURCE
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ------------------------------------------------------------------ growable byte buffer */

typedef struct {
  char *data;
  size_t len;
  size_t cap;
} buf_t;

static void buf_reserve(buf_t *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  char *grown = realloc(b->data, cap);
  if (!grown) {
    /* Out of memory: nothing sensible is left to do. */
    _exit(70);
  }
  b->data = grown;
  b->cap = cap;
}

static void buf_put(buf_t *b, const void *bytes, size_t n) {
  buf_reserve(b, n);
  memcpy(b->data + b->len, bytes, n);
  b->len += n;
  b->data[b->len] = '\0';
}

static void buf_str(buf_t *b, const char *s) { buf_put(b, s, strlen(s)); }

static void buf_printf(buf_t *b, const char *format, ...) {
  char small[128];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(small, sizeof small, format, args);
  va_end(args);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    buf_put(b, small, (size_t)n);
    return;
  }
  buf_reserve(b, (size_t)n);
  va_start(args, format);
  vsnprintf(b->data + b->len, (size_t)n + 1, format, args);
  va_end(args);
  b->len += (size_t)n;
}

static void buf_free(buf_t *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

/* ------------------------------------------------------------------ output */

/* Writes all of `data` to stdout; the host gone (EPIPE) ends the executor. */
static void write_all_stdout(const char *data, size_t len) {
  while (len > 0) {
    ssize_t n = write(STDOUT_FILENO, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        struct pollfd p = {STDOUT_FILENO, POLLOUT, 0};
        poll(&p, 1, -1);
        continue;
      }
      _exit(0);
    }
    data += n;
    len -= (size_t)n;
  }
}

static void send_line(buf_t *b) {
  buf_put(b, "\n", 1);
  write_all_stdout(b->data, b->len);
}

/* ------------------------------------------------------------------ JSON output */

/*
 * A byte string as a JSON string, the way node's JSON.stringify writes the string node decoded
 * from those bytes as UTF-8: valid UTF-8 as it is, each maximal invalid subpart as U+FFFD,
 * `"` `\` and control characters escaped (\b \f \n \r \t, else \u00XX).
 */
static void json_string(buf_t *b, const char *s, size_t len) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s;
  buf_put(b, "\"", 1);
  size_t i = 0;
  while (i < len) {
    unsigned char c = p[i];
    if (c < 0x80) {
      switch (c) {
        case '"': buf_put(b, "\\\"", 2); break;
        case '\\': buf_put(b, "\\\\", 2); break;
        case '\b': buf_put(b, "\\b", 2); break;
        case '\f': buf_put(b, "\\f", 2); break;
        case '\n': buf_put(b, "\\n", 2); break;
        case '\r': buf_put(b, "\\r", 2); break;
        case '\t': buf_put(b, "\\t", 2); break;
        default:
          if (c < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            buf_put(b, esc, 6);
          } else {
            buf_put(b, (const char *)&c, 1);
          }
      }
      i += 1;
      continue;
    }
    size_t need;
    unsigned char low = 0x80, high = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      if (c == 0xE0) low = 0xA0;
      if (c == 0xED) high = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      if (c == 0xF0) low = 0x90;
      if (c == 0xF4) high = 0x8F;
    } else {
      buf_str(b, "\xEF\xBF\xBD");
      i += 1;
      continue;
    }
    size_t k = 1;
    for (; k <= need && i + k < len; k++) {
      unsigned char next = p[i + k];
      if (next < low || next > high) break;
      low = 0x80;
      high = 0xBF;
    }
    if (k == need + 1) {
      buf_put(b, s + i, need + 1);
      i += need + 1;
    } else {
      buf_str(b, "\xEF\xBF\xBD");
      i += k;
    }
  }
  buf_put(b, "\"", 1);
}

static void json_cstring(buf_t *b, const char *s) { json_string(b, s, strlen(s)); }

static void json_number(buf_t *b, double value) {
  if (value == (double)(long long)value && value > -9007199254740992.0 && value < 9007199254740992.0) buf_printf(b, "%lld", (long long)value);
  else buf_printf(b, "%.17g", value);
}

/* ------------------------------------------------------------------ base64 */

static void base64_encode(buf_t *b, const unsigned char *p, size_t len) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  buf_reserve(b, (len + 2) / 3 * 4);
  char *out = b->data + b->len;
  size_t i = 0;
  for (; i + 2 < len; i += 3) {
    uint32_t v = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8) | p[i + 2];
    *out++ = alphabet[v >> 18];
    *out++ = alphabet[(v >> 12) & 63];
    *out++ = alphabet[(v >> 6) & 63];
    *out++ = alphabet[v & 63];
  }
  if (i < len) {
    uint32_t v = (uint32_t)p[i] << 16;
    if (i + 1 < len) v |= (uint32_t)p[i + 1] << 8;
    *out++ = alphabet[v >> 18];
    *out++ = alphabet[(v >> 12) & 63];
    *out++ = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
    *out++ = '=';
  }
  b->len = (size_t)(out - b->data);
  b->data[b->len] = '\0';
}

/* Node's lenient decoder: base64 and base64url letters, anything else skipped, `=` ends it. */
static size_t base64_decode(const char *s, size_t len, unsigned char *out) {
  uint32_t acc = 0;
  int bits = 0;
  size_t n = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+' || c == '-') v = 62;
    else if (c == '/' || c == '_') v = 63;
    else if (c == '=') break;
    else continue;
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = (unsigned char)((acc >> bits) & 0xFF);
    }
  }
  return n;
}

/* ------------------------------------------------------------------ JSON input */

enum { T_NONE, T_STRING, T_NUMBER, T_OTHER };

typedef struct {
  int type;
  char *str; /* T_STRING: decoded UTF-8, NUL-terminated (may contain NULs: see len) */
  size_t len;
  double num;
} value_t;

typedef struct {
  value_t id, op, path, data, limit, command, cwd, target, signal;
  int env_given;  /* the key was there */
  int env_object; /* …and an object */
  char **env;     /* "NAME=VALUE" */
  size_t env_count;
  int env_nul; /* a name or value held a NUL byte */
} request_t;

typedef struct {
  const char *p;
  const char *end;
} cursor_t;

static void skip_ws(cursor_t *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int hex4(const char *p, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char h = p[i];
    v <<= 4;
    if (h >= '0' && h <= '9') v |= (unsigned)(h - '0');
    else if (h >= 'a' && h <= 'f') v |= (unsigned)(h - 'a' + 10);
    else if (h >= 'A' && h <= 'F') v |= (unsigned)(h - 'A' + 10);
    else return -1;
  }
  *out = v;
  return 0;
}

static void put_utf8(buf_t *b, unsigned cp) {
  char o[4];
  if (cp < 0x80) {
    o[0] = (char)cp;
    buf_put(b, o, 1);
  } else if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 63));
    buf_put(b, o, 2);
  } else if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 63));
    o[2] = (char)(0x80 | (cp & 63));
    buf_put(b, o, 3);
  } else {
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63));
    o[3] = (char)(0x80 | (cp & 63));
    buf_put(b, o, 4);
  }
}

/*
 * A JSON string at the cursor (on its opening quote), decoded to UTF-8 into `out` (when not NULL;
 * a lone surrogate becomes U+FFFD, as node's UTF-8 encoding of it). -1: not a valid string.
 */
static int parse_string(cursor_t *c, buf_t *out) {
  if (c->p >= c->end || *c->p != '"') return -1;
  c->p++;
  for (;;) {
    const char *start = c->p;
    while (c->p < c->end && *c->p != '"' && *c->p != '\\' && (unsigned char)*c->p >= 0x20) c->p++;
    if (out && c->p > start) buf_put(out, start, (size_t)(c->p - start));
    if (c->p >= c->end || (unsigned char)*c->p < 0x20) return -1;
    if (*c->p == '"') {
      c->p++;
      if (out) buf_reserve(out, 0);
      return 0;
    }
    c->p++; /* backslash */
    if (c->p >= c->end) return -1;
    char e = *c->p++;
    char single = 0;
    switch (e) {
      case '"': single = '"'; break;
      case '\\': single = '\\'; break;
      case '/': single = '/'; break;
      case 'b': single = '\b'; break;
      case 'f': single = '\f'; break;
      case 'n': single = '\n'; break;
      case 'r': single = '\r'; break;
      case 't': single = '\t'; break;
      case 'u': {
        unsigned cp;
        if (c->end - c->p < 4 || hex4(c->p, &cp) < 0) return -1;
        c->p += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          unsigned low;
          if (c->end - c->p >= 6 && c->p[0] == '\\' && c->p[1] == 'u' && hex4(c->p + 2, &low) == 0 && low >= 0xDC00 && low <= 0xDFFF) {
            c->p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else {
            cp = 0xFFFD;
          }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          cp = 0xFFFD;
        }
        if (out) put_utf8(out, cp);
        continue;
      }
      default: return -1;
    }
    if (out) buf_put(out, &single, 1);
  }
}

static int parse_number(cursor_t *c, double *out) {
  const char *start = c->p;
  if (c->p < c->end && *c->p == '-') c->p++;
  if (c->p >= c->end || *c->p < '0' || *c->p > '9') return -1;
  while (c->p < c->end && ((*c->p >= '0' && *c->p <= '9') || *c->p == '.' || *c->p == 'e' || *c->p == 'E' || *c->p == '+' || *c->p == '-')) c->p++;
  size_t n = (size_t)(c->p - start);
  if (n > 64) return -1;
  char text[72];
  memcpy(text, start, n);
  text[n] = '\0';
  char *stop;
  *out = strtod(text, &stop);
  return *stop == '\0' ? 0 : -1;
}

static int skip_value(cursor_t *c, int depth);

static int parse_literal(cursor_t *c, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return -1;
  c->p += n;
  return 0;
}

/* Any JSON value (nesting bounded: a hostile line cannot exhaust the stack). */
static int skip_value(cursor_t *c, int depth) {
  if (depth > 64) return -1;
  skip_ws(c);
  if (c->p >= c->end) return -1;
  char ch = *c->p;
  if (ch == '"') return parse_string(c, NULL);
  if (ch == '{' || ch == '[') {
    char close = ch == '{' ? '}' : ']';
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == close) {
      c->p++;
      return 0;
    }
    for (;;) {
      if (ch == '{') {
        skip_ws(c);
        if (parse_string(c, NULL) < 0) return -1;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':') return -1;
        c->p++;
      }
      if (skip_value(c, depth + 1) < 0) return -1;
      skip_ws(c);
      if (c->p >= c->end) return -1;
      if (*c->p == ',') {
        c->p++;
        continue;
      }
      if (*c->p == close) {
        c->p++;
        return 0;
      }
      return -1;
    }
  }
  if (ch == 't') return parse_literal(c, "true");
  if (ch == 'f') return parse_literal(c, "false");
  if (ch == 'n') return parse_literal(c, "null");
  double ignored;
  return parse_number(c, &ignored);
}

/* A value of a known key: strings and numbers kept, anything else only its type. */
static int parse_field(cursor_t *c, value_t *v) {
  skip_ws(c);
  free(v->str);
  memset(v, 0, sizeof *v);
  if (c->p < c->end && *c->p == '"') {
    buf_t s = {0};
    if (parse_string(c, &s) < 0) {
      buf_free(&s);
      return -1;
    }
    buf_reserve(&s, 0);
    v->type = T_STRING;
    v->str = s.data;
    v->len = s.len;
    return 0;
  }
  if (c->p < c->end && (*c->p == '-' || (*c->p >= '0' && *c->p <= '9'))) {
    v->type = T_NUMBER;
    return parse_number(c, &v->num);
  }
  v->type = T_OTHER;
  return skip_value(c, 1);
}

static void free_env(request_t *r) {
  for (size_t i = 0; i < r->env_count; i++) free(r->env[i]);
  free(r->env);
  r->env = NULL;
  r->env_count = 0;
}

/* `env`: an object of strings (numbers and literals as their text, like node's spawn; others left out). */
static int parse_env(cursor_t *c, request_t *r) {
  free_env(r);
  r->env_given = 1;
  r->env_object = 0;
  r->env_nul = 0;
  skip_ws(c);
  if (c->p >= c->end || *c->p != '{') return skip_value(c, 1);
  r->env_object = 1;
  c->p++;
  skip_ws(c);
  if (c->p < c->end && *c->p == '}') {
    c->p++;
    return 0;
  }
  size_t cap = 0;
  for (;;) {
    skip_ws(c);
    buf_t pair = {0};
    if (parse_string(c, &pair) < 0) {
      buf_free(&pair);
      return -1;
    }
    if (memchr(pair.data, '\0', pair.len)) r->env_nul = 1;
    skip_ws(c);
    if (c->p >= c->end || *c->p != ':') {
      buf_free(&pair);
      return -1;
    }
    c->p++;
    skip_ws(c);
    int keep = 1;
    buf_put(&pair, "=", 1);
    if (c->p < c->end && *c->p == '"') {
      size_t before = pair.len;
      if (parse_string(c, &pair) < 0) {
        buf_free(&pair);
        return -1;
      }
      if (memchr(pair.data + before, '\0', pair.len - before)) r->env_nul = 1;
    } else {
      const char *start = c->p;
      if (skip_value(c, 1) < 0) {
        buf_free(&pair);
        return -1;
      }
      if (*start == '{' || *start == '[') keep = 0;
      else buf_put(&pair, start, (size_t)(c->p - start));
    }
    if (keep) {
      if (r->env_count + 1 >= cap) {
        cap = cap ? cap * 2 : 64;
        char **grown = realloc(r->env, cap * sizeof *grown);
        if (!grown) _exit(70);
        r->env = grown;
      }
      r->env[r->env_count++] = pair.data;
    } else {
      buf_free(&pair);
    }
    skip_ws(c);
    if (c->p >= c->end) return -1;
    if (*c->p == ',') {
      c->p++;
      continue;
    }
    if (*c->p == '}') {
      c->p++;
      return 0;
    }
    return -1;
  }
}

static void free_request(request_t *r) {
  value_t *values[] = {&r->id, &r->op, &r->path, &r->data, &r->limit, &r->command, &r->cwd, &r->target, &r->signal};
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) free(values[i]->str);
  free_env(r);
}

/* A request line; -1 when it is not one JSON object (the line is then ignored, as by the node executor). */
static int parse_request(const char *line, size_t len, request_t *r) {
  memset(r, 0, sizeof *r);
  cursor_t c = {line, line + len};
  skip_ws(&c);
  if (c.p >= c.end || *c.p != '{') return -1;
  c.p++;
  skip_ws(&c);
  if (c.p < c.end && *c.p == '}') {
    c.p++;
  } else {
    for (;;) {
      skip_ws(&c);
      buf_t key = {0};
      if (parse_string(&c, &key) < 0) {
        buf_free(&key);
        return -1;
      }
      buf_reserve(&key, 0);
      skip_ws(&c);
      if (c.p >= c.end || *c.p != ':') {
        buf_free(&key);
        return -1;
      }
      c.p++;
      struct {
        const char *name;
        value_t *value;
      } fields[] = {{"id", &r->id}, {"op", &r->op}, {"path", &r->path}, {"data", &r->data}, {"limit", &r->limit}, {"command", &r->command}, {"cwd", &r->cwd}, {"target", &r->target}, {"signal", &r->signal}};
      int status = 1;
      for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (key.len == strlen(fields[i].name) && memcmp(key.data, fields[i].name, key.len) == 0) {
          status = parse_field(&c, fields[i].value);
          break;
        }
      }
      if (status == 1) status = key.len == 3 && memcmp(key.data, "env", 3) == 0 ? parse_env(&c, r) : skip_value(&c, 1);
      buf_free(&key);
      if (status < 0) return -1;
      skip_ws(&c);
      if (c.p >= c.end) return -1;
      if (*c.p == ',') {
        c.p++;
        continue;
      }
      if (*c.p == '}') {
        c.p++;
        break;
      }
      return -1;
    }
  }
  skip_ws(&c);
  return c.p == c.end ? 0 : -1;
}

/* ------------------------------------------------------------------ errors */

static const struct {
  int number;
  const char *name;
  const char *description; /* libuv's, as node's messages have them */
} errno_table[] = {
  {EPERM, "EPERM", "operation not permitted"},
  {ENOENT, "ENOENT", "no such file or directory"},
  {ESRCH, "ESRCH", "no such process"},
  {EINTR, "EINTR", "interrupted system call"},
  {EIO, "EIO", "i/o error"},
  {ENXIO, "ENXIO", "no such device or address"},
  {E2BIG, "E2BIG", "argument list too long"},
  {ENOEXEC, "ENOEXEC", "exec format error"},
  {EBADF, "EBADF", "bad file descriptor"},
  {ECHILD, "ECHILD", "no child processes"},
  {EAGAIN, "EAGAIN", "resource temporarily unavailable"},
  {ENOMEM, "ENOMEM", "not enough memory"},
  {EACCES, "EACCES", "permission denied"},
  {EFAULT, "EFAULT", "bad address in system call argument"},
  {EBUSY, "EBUSY", "resource busy or locked"},
  {EEXIST, "EEXIST", "file already exists"},
  {EXDEV, "EXDEV", "cross-device link not permitted"},
  {ENODEV, "ENODEV", "no such device"},
  {ENOTDIR, "ENOTDIR", "not a directory"},
  {EISDIR, "EISDIR", "illegal operation on a directory"},
  {EINVAL, "EINVAL", "invalid argument"},
  {ENFILE, "ENFILE", "file table overflow"},
  {EMFILE, "EMFILE", "too many open files"},
  {ENOTTY, "ENOTTY", "inappropriate ioctl for device"},
  {ETXTBSY, "ETXTBSY", "text file is busy"},
  {EFBIG, "EFBIG", "file too large"},
  {ENOSPC, "ENOSPC", "no space left on device"},
  {ESPIPE, "ESPIPE", "invalid seek"},
  {EROFS, "EROFS", "read-only file system"},
  {EMLINK, "EMLINK", "too many links"},
  {EPIPE, "EPIPE", "broken pipe"},
  {ERANGE, "ERANGE", "result too large"},
  {ENAMETOOLONG, "ENAMETOOLONG", "name too long"},
  {ENOSYS, "ENOSYS", "function not implemented"},
  {ENOTEMPTY, "ENOTEMPTY", "directory not empty"},
  {ELOOP, "ELOOP", "too many symbolic links encountered"},
  {EOVERFLOW, "EOVERFLOW", "value too large for defined data type"},
  {EILSEQ, "EILSEQ", "illegal byte sequence"},
  {ECANCELED, "ECANCELED", "operation canceled"},
  {ENOTSUP, "ENOTSUP", "operation not supported on socket"},
#ifdef EDQUOT
  {EDQUOT, "EDQUOT", "disk quota exceeded"},
#endif
#ifdef ESTALE
  {ESTALE, "ESTALE", "stale file handle"},
#endif
};

static const char *errno_name(int number) {
  for (size_t i = 0; i < sizeof errno_table / sizeof errno_table[0]; i++)
    if (errno_table[i].number == number) return errno_table[i].name;
  return "EIO";
}

static const char *errno_description(int number) {
  for (size_t i = 0; i < sizeof errno_table / sizeof errno_table[0]; i++)
    if (errno_table[i].number == number) return errno_table[i].description;
  return strerror(number);
}

typedef struct {
  const char *code; /* NULL: none */
  buf_t message;
} failure_t;

/* node's form: "EROFS: read-only file system, open '/path'" (`path` NULL: no path). */
static void fail_errno(failure_t *f, int number, const char *syscall, const char *path) {
  f->code = errno_name(number);
  buf_printf(&f->message, "%s: %s, %s", f->code, errno_description(number), syscall);
  if (path) {
    buf_str(&f->message, " '");
    buf_str(&f->message, path);
    buf_str(&f->message, "'");
  }
}

/* ------------------------------------------------------------------ file operations */

static const char *kind_of(mode_t mode) {
  return S_ISREG(mode) ? "file" : S_ISDIR(mode) ? "directory" : S_ISLNK(mode) ? "symlink" : "other";
}

/* node's path.dirname (POSIX). */
static char *dirname_of(const char *path) {
  size_t len = strlen(path);
  if (len == 0) return strdup(".");
  int has_root = path[0] == '/';
  long end = -1;
  int matched_slash = 1;
  for (long i = (long)len - 1; i >= 1; i--) {
    if (path[i] == '/') {
      if (!matched_slash) {
        end = i;
        break;
      }
    } else {
      matched_slash = 0;
    }
  }
  if (end == -1) return strdup(has_root ? "/" : ".");
  if (has_root && end == 1) return strdup("//");
  char *out = malloc((size_t)end + 1);
  if (!out) _exit(70);
  memcpy(out, path, (size_t)end);
  out[end] = '\0';
  return out;
}

/* node's recursive mkdir (MKDirpSync): 0, or an errno. `first`: the directory asked for. */
static int mkdirp(const char *dir, int first) {
  if (mkdir(dir, 0777) == 0) return 0;
  int error = errno;
  struct stat st;
  if (error == ENOENT) {
    char *parent = dirname_of(dir);
    int same = strcmp(parent, dir) == 0;
    int status = same ? ENOENT : mkdirp(parent, 0);
    free(parent);
    if (status != 0) return status;
    if (mkdir(dir, 0777) == 0) return 0;
    error = errno;
  }
  if (stat(dir, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return 0;
    return error == EEXIST && !first ? ENOTDIR : EEXIST;
  }
  return error;
}

/* The opened file must be `expected` itself (Linux); a file this call created elsewhere is removed. */
static int verify_opened(int fd, const char *expected, int created, failure_t *f) {
#ifdef __linux__
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  size_t cap = PATH_MAX + 1;
  char *actual = malloc(cap);
  if (!actual) _exit(70);
  ssize_t n = readlink(link, actual, cap - 1);
  if (n < 0) {
    free(actual);
    return 0;
  }
  actual[n] = '\0';
  if (strcmp(actual, expected) != 0) {
    if (created) unlink(actual);
    f->code = "EXDEV";
    buf_printf(&f->message, "%s resolved to %s when it was opened (a path component was swapped)", expected, actual);
    free(actual);
    return -1;
  }
  free(actual);
#else
  (void)fd;
  (void)expected;
  (void)created;
  (void)f;
#endif
  return 0;
}

static int op_write(const request_t *r, buf_t *answer, failure_t *f) {
  const char *target = r->path.str;
  char *dir = dirname_of(target);
  int status = mkdirp(dir, 1);
  if (status != 0) {
    fail_errno(f, status, "mkdir", dir);
    free(dir);
    return -1;
  }
  free(dir);
  int existed = 1;
  int fd = open(target, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) {
      fail_errno(f, errno, "open", target);
      return -1;
    }
    existed = 0;
    fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0) {
      fail_errno(f, errno, "open", target);
      return -1;
    }
  }
  int result = -1;
  unsigned char *bytes = NULL;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    fail_errno(f, errno, "fstat", NULL);
    goto done;
  }
  if (!S_ISREG(st.st_mode)) {
    f->code = "EINVAL";
    buf_printf(&f->message, "%s is not a regular file", target);
    goto done;
  }
  if (verify_opened(fd, target, !existed, f) < 0) goto done;
  size_t data_len = r->data.type == T_STRING ? r->data.len : 0;
  bytes = malloc(data_len / 4 * 3 + 3);
  if (!bytes) _exit(70);
  size_t length = r->data.type == T_STRING ? base64_decode(r->data.str, r->data.len, bytes) : 0;
  if (ftruncate(fd, 0) != 0) {
    fail_errno(f, errno, "ftruncate", NULL);
    goto done;
  }
  size_t offset = 0;
  while (offset < length) {
    ssize_t n = pwrite(fd, bytes + offset, length - offset, (off_t)offset);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      fail_errno(f, errno, "write", NULL);
      goto done;
    }
    offset += (size_t)n;
  }
  buf_printf(answer, ",\"existed\":%s,\"bytes\":%zu", existed ? "true" : "false", length);
  result = 0;
done:
  free(bytes);
  close(fd);
  return result;
}

static int op_read(const request_t *r, buf_t *answer, failure_t *f) {
  int fd = open(r->path.str, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    fail_errno(f, errno, "open", r->path.str);
    return -1;
  }
  int result = -1;
  struct stat st;
  unsigned char *bytes = NULL;
  if (fstat(fd, &st) != 0) {
    fail_errno(f, errno, "fstat", NULL);
    goto done;
  }
  if (!S_ISREG(st.st_mode)) {
    buf_printf(answer, ",\"kind\":\"%s\",\"size\":%lld,\"data\":\"\"", kind_of(st.st_mode), (long long)st.st_size);
    result = 0;
    goto done;
  }
  double limit = r->limit.type == T_NUMBER ? r->limit.num : (double)st.st_size;
  if (!(limit > 0)) limit = 0;
  size_t length = limit < (double)st.st_size ? (size_t)limit : (size_t)st.st_size;
  bytes = malloc(length ? length : 1);
  if (!bytes) {
    fail_errno(f, ENOMEM, "read", NULL);
    goto done;
  }
  size_t offset = 0;
  while (offset < length) {
    ssize_t n = pread(fd, bytes + offset, length - offset, (off_t)offset);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      fail_errno(f, errno, "read", NULL);
      goto done;
    }
    if (n == 0) break;
    offset += (size_t)n;
  }
  buf_printf(answer, ",\"kind\":\"file\",\"size\":%lld,\"data\":\"", (long long)st.st_size);
  base64_encode(answer, bytes, offset);
  buf_str(answer, "\"");
  result = 0;
done:
  free(bytes);
  close(fd);
  return result;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int op_list(const request_t *r, buf_t *answer, failure_t *f) {
  DIR *dir = opendir(r->path.str);
  if (!dir) {
    fail_errno(f, errno, "scandir", r->path.str);
    return -1;
  }
  char **names = NULL;
  size_t count = 0, cap = 0;
  struct dirent *entry;
  errno = 0;
  while ((entry = readdir(dir)) != NULL) {
    if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
    if (count == cap) {
      cap = cap ? cap * 2 : 64;
      char **grown = realloc(names, cap * sizeof *grown);
      if (!grown) _exit(70);
      names = grown;
    }
    /* the type travels behind the name's NUL: one allocation per entry */
    size_t len = strlen(entry->d_name);
    char *copy = malloc(len + 2);
    if (!copy) _exit(70);
    memcpy(copy, entry->d_name, len + 1);
    char type = '?';
#ifdef DT_REG
    type = entry->d_type == DT_REG ? 'f' : entry->d_type == DT_DIR ? 'd' : entry->d_type == DT_LNK ? 'l' : entry->d_type == DT_UNKNOWN ? '?' : 'o';
#endif
    copy[len + 1] = type;
    names[count++] = copy;
  }
  int read_error = errno;
  closedir(dir);
  if (read_error != 0) {
    for (size_t i = 0; i < count; i++) free(names[i]);
    free(names);
    fail_errno(f, read_error, "scandir", r->path.str);
    return -1;
  }
  if (count > 1) qsort(names, count, sizeof *names, compare_names);
  buf_str(answer, ",\"entries\":[");
  buf_t full = {0};
  char *target = malloc(PATH_MAX + 1);
  if (!target) _exit(70);
  for (size_t i = 0; i < count; i++) {
    const char *name = names[i];
    size_t len = strlen(name);
    char type = name[len + 1];
    full.len = 0;
    buf_str(&full, r->path.str);
    if (full.len == 0 || full.data[full.len - 1] != '/') buf_put(&full, "/", 1);
    buf_put(&full, name, len);
    if (type == '?') {
      struct stat st;
      type = lstat(full.data, &st) != 0 ? 'o' : S_ISREG(st.st_mode) ? 'f' : S_ISDIR(st.st_mode) ? 'd' : S_ISLNK(st.st_mode) ? 'l' : 'o';
    }
    const char *kind = type == 'f' ? "file" : type == 'd' ? "directory" : type == 'l' ? "symlink" : "other";
    if (i > 0) buf_put(answer, ",", 1);
    buf_str(answer, "{\"name\":");
    json_string(answer, name, len);
    buf_printf(answer, ",\"kind\":\"%s\"", kind);
    if (type == 'l') {
      ssize_t n = readlink(full.data, target, PATH_MAX);
      if (n >= 0) {
        buf_str(answer, ",\"target\":");
        json_string(answer, target, (size_t)n);
      }
    }
    buf_put(answer, "}", 1);
  }
  buf_put(answer, "]", 1);
  buf_free(&full);
  free(target);
  for (size_t i = 0; i < count; i++) free(names[i]);
  free(names);
  return 0;
}

static int op_stat(const request_t *r, buf_t *answer, failure_t *f) {
  struct stat st;
  if (lstat(r->path.str, &st) != 0) {
    fail_errno(f, errno, "lstat", r->path.str);
    return -1;
  }
  buf_printf(answer, ",\"kind\":\"%s\",\"size\":%lld", kind_of(st.st_mode), (long long)st.st_size);
  return 0;
}

/* ------------------------------------------------------------------ runs */

typedef struct {
  double id;
  pid_t pid;
  int out_fd; /* -1: closed */
  int err_fd;
  int exited;
  int status;
  long long deadline_ms; /* after the exit: the answer comes by then at the latest */
} run_t;

static run_t *runs = NULL;
static size_t run_count = 0, run_cap = 0;
static int can_sweep = 0;
static int sigchld_pipe[2] = {-1, -1};

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void on_sigchld(int signo) {
  (void)signo;
  int saved = errno;
  char byte = 0;
  ssize_t ignored = write(sigchld_pipe[1], &byte, 1);
  (void)ignored;
  errno = saved;
}

static int set_cloexec_nonblock(int fd, int nonblock) {
  if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) return -1;
  if (nonblock) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return -1;
  }
  return 0;
}

static int make_pipe(int fds[2]) {
  if (pipe(fds) < 0) return -1;
  if (set_cloexec_nonblock(fds[0], 0) < 0 || set_cloexec_nonblock(fds[1], 0) < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  return 0;
}

static void kill_group(pid_t pid, int signo) {
  if (pid > 0) kill(-pid, signo);
}

/* SIGKILL to every process of the namespace but init and this one (repeated: a fork in flight). */
static void sweep(void) {
  if (!can_sweep) return;
  for (int round = 0; round < 3; round++)
    if (kill(-1, SIGKILL) != 0) return;
}

static const char *signal_name(int signo) {
  static const struct {
    int number;
    const char *name;
  } names[] = {
    {SIGHUP, "SIGHUP"}, {SIGINT, "SIGINT"}, {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"}, {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},
    {SIGBUS, "SIGBUS"}, {SIGFPE, "SIGFPE"}, {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
    {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGCHLD, "SIGCHLD"}, {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"},
    {SIGTSTP, "SIGTSTP"}, {SIGTTIN, "SIGTTIN"}, {SIGTTOU, "SIGTTOU"}, {SIGURG, "SIGURG"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
    {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGSYS, "SIGSYS"},
#ifdef SIGSTKFLT
    {SIGSTKFLT, "SIGSTKFLT"},
#endif
#ifdef SIGWINCH
    {SIGWINCH, "SIGWINCH"},
#endif
#ifdef SIGIO
    {SIGIO, "SIGIO"},
#endif
#ifdef SIGPWR
    {SIGPWR, "SIGPWR"},
#endif
#ifdef SIGINFO
    {SIGINFO, "SIGINFO"},
#endif
#ifdef SIGEMT
    {SIGEMT, "SIGEMT"},
#endif
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].number == signo) return names[i].name;
  return NULL;
}

static void send_ok_prefix(buf_t *b, const value_t *id) {
  buf_str(b, "{");
  if (id->type == T_NUMBER) {
    buf_str(b, "\"id\":");
    json_number(b, id->num);
    buf_put(b, ",", 1);
  } else if (id->type == T_STRING) {
    buf_str(b, "\"id\":");
    json_string(b, id->str, id->len);
    buf_put(b, ",", 1);
  }
}

static void send_failure(const value_t *id, const char *code, const char *message) {
  buf_t b = {0};
  send_ok_prefix(&b, id);
  buf_str(&b, "\"ok\":false,\"code\":");
  json_cstring(&b, code);
  buf_str(&b, ",\"message\":");
  json_cstring(&b, message);
  buf_str(&b, "}");
  send_line(&b);
  buf_free(&b);
}

static void send_run_answer(double id, const char *body) {
  buf_t b = {0};
  buf_str(&b, "{\"id\":");
  json_number(&b, id);
  buf_str(&b, ",\"ok\":true");
  buf_str(&b, body);
  buf_str(&b, "}");
  send_line(&b);
  buf_free(&b);
}

static void send_spawn_error(double id, const char *message) {
  buf_t body = {0};
  buf_str(&body, ",\"spawnError\":");
  json_cstring(&body, message);
  send_run_answer(id, body.data);
  buf_free(&body);
}

/* The command has ended and its output is in (or one second has passed): its answer. */
static void finish_run(size_t index) {
  run_t *run = &runs[index];
  if (run->out_fd >= 0) close(run->out_fd);
  if (run->err_fd >= 0) close(run->err_fd);
  buf_t body = {0};
  if (WIFEXITED(run->status)) {
    buf_printf(&body, ",\"exitCode\":%d,\"signal\":null", WEXITSTATUS(run->status));
  } else if (WIFSIGNALED(run->status)) {
    const char *name = signal_name(WTERMSIG(run->status));
    buf_str(&body, ",\"exitCode\":null,\"signal\":");
    if (name) json_cstring(&body, name);
    else buf_str(&body, "null");
  } else {
    buf_str(&body, ",\"exitCode\":null,\"signal\":null");
  }
  send_run_answer(run->id, body.data);
  buf_free(&body);
  runs[index] = runs[--run_count];
}

static int has_nul(const value_t *v) { return v->type == T_STRING && memchr(v->str, '\0', v->len) != NULL; }

/* execvp's search, on the PATH of the command's own environment (as libuv does). Returns on failure only. */
static void exec_bash(char *const argv[], char *const envp[]) {
  const char *path = NULL;
  for (char *const *e = envp; *e; e++)
    if (strncmp(*e, "PATH=", 5) == 0) {
      path = *e + 5;
      break;
    }
  if (!path) path = "/usr/bin:/bin";
  int saw_eacces = 0;
  char candidate[PATH_MAX];
  const char *p = path;
  for (;;) {
    const char *colon = strchr(p, ':');
    size_t n = colon ? (size_t)(colon - p) : strlen(p);
    if (n + sizeof "/bash" < sizeof candidate) {
      if (n == 0) {
        memcpy(candidate, "bash", sizeof "bash");
      } else {
        memcpy(candidate, p, n);
        memcpy(candidate + n, "/bash", sizeof "/bash");
      }
      execve(candidate, argv, envp);
      if (errno == EACCES) saw_eacces = 1;
      else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE && errno != ENODEV && errno != ETIMEDOUT) return;
    }
    if (!colon) break;
    p = colon + 1;
  }
  if (saw_eacces) errno = EACCES;
}

static void start_run(const request_t *r) {
  double id = r->id.type == T_NUMBER ? r->id.num : 0;
  /* node's spawn refuses NUL bytes before starting anything (a TypeError: its message is the answer) */
  if (has_nul(&r->command)) {
    send_spawn_error(id, "The argument 'args[2]' must be a string without null bytes.");
    return;
  }
  if (has_nul(&r->cwd)) {
    send_spawn_error(id, "The argument 'options.cwd' must be a string without null bytes.");
    return;
  }
  if (r->env_nul) {
    send_spawn_error(id, "The argument 'options.env' must be a string without null bytes.");
    return;
  }
  int out[2], err[2], status_pipe[2];
  if (make_pipe(out) < 0) {
    send_spawn_error(id, "spawn EMFILE");
    return;
  }
  if (make_pipe(err) < 0) {
    close(out[0]);
    close(out[1]);
    send_spawn_error(id, "spawn EMFILE");
    return;
  }
  if (make_pipe(status_pipe) < 0) {
    close(out[0]);
    close(out[1]);
    close(err[0]);
    close(err[1]);
    send_spawn_error(id, "spawn EMFILE");
    return;
  }
  char *empty_env[] = {NULL};
  char **envp = empty_env;
  char **owned_env = NULL;
  if (r->env_object) {
    owned_env = malloc((r->env_count + 1) * sizeof *owned_env);
    if (!owned_env) _exit(70);
    if (r->env_count) memcpy(owned_env, r->env, r->env_count * sizeof *owned_env);
    owned_env[r->env_count] = NULL;
    envp = owned_env;
  }
  char *argv[] = {"bash", "-c", r->command.str, NULL};
  pid_t pid = fork();
  if (pid == 0) {
    /* the child: a session of its own, stdin /dev/null, stdout and stderr the pipes, default signals */
    int failure = 0;
    setsid();
    for (int signo = 1; signo < NSIG; signo++)
      if (signo != SIGKILL && signo != SIGSTOP) signal(signo, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0) failure = errno;
    if (!failure && chdir(r->cwd.str) != 0) failure = errno;
    if (!failure) {
      exec_bash(argv, envp);
      failure = errno;
    }
    ssize_t ignored = write(status_pipe[1], &failure, sizeof failure);
    (void)ignored;
    _exit(127);
  }
  int fork_error = errno;
  free(owned_env);
  close(out[1]);
  close(err[1]);
  close(status_pipe[1]);
  if (pid < 0) {
    close(out[0]);
    close(err[0]);
    close(status_pipe[0]);
    char message[64];
    snprintf(message, sizeof message, "spawn %s", errno_name(fork_error));
    send_spawn_error(id, message);
    return;
  }
  int child_error = 0;
  ssize_t got;
  do got = read(status_pipe[0], &child_error, sizeof child_error);
  while (got < 0 && errno == EINTR);
  close(status_pipe[0]);
  if (got == (ssize_t)sizeof child_error) {
    /* it could not start: node's words ("spawn bash ENOENT" for a missing cwd or bash) */
    int ignored_status;
    while (waitpid(pid, &ignored_status, 0) < 0 && errno == EINTR) {
    }
    close(out[0]);
    close(err[0]);
    char message[96];
    int emitted = child_error == EACCES || child_error == EAGAIN || child_error == EMFILE || child_error == ENFILE || child_error == ENOENT;
    snprintf(message, sizeof message, emitted ? "spawn bash %s" : "spawn %s", errno_name(child_error));
    send_spawn_error(id, message);
    return;
  }
  set_cloexec_nonblock(out[0], 1);
  set_cloexec_nonblock(err[0], 1);
  if (run_count == run_cap) {
    run_cap = run_cap ? run_cap * 2 : 8;
    run_t *grown = realloc(runs, run_cap * sizeof *grown);
    if (!grown) _exit(70);
    runs = grown;
  }
  run_t *run = &runs[run_count++];
  memset(run, 0, sizeof *run);
  run->id = id;
  run->pid = pid;
  run->out_fd = out[0];
  run->err_fd = err[0];
}

static void reap_children(void) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      if (pid < 0 && errno == EINTR) continue;
      return;
    }
    for (size_t i = 0; i < run_count; i++) {
      run_t *run = &runs[i];
      if (run->pid != pid || run->exited) continue;
      run->exited = 1;
      run->status = status;
      /* The call is over: nothing it started may go on. */
      kill_group(pid, SIGKILL);
      sweep();
      /* A process that escaped both (outside this namespace it can) must not hold the answer. */
      run->deadline_ms = now_ms() + 1000;
      break;
    }
  }
}

/* Forwards what one output pipe has as a chunk; closes it at its end. */
static void forward_output(run_t *run, int *fd) {
  static unsigned char chunk[65536];
  ssize_t n = read(*fd, chunk, sizeof chunk);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
  if (n <= 0) {
    close(*fd);
    *fd = -1;
    return;
  }
  buf_t b = {0};
  buf_str(&b, "{\"id\":");
  json_number(&b, run->id);
  buf_str(&b, ",\"chunk\":\"");
  base64_encode(&b, chunk, (size_t)n);
  buf_str(&b, "\"}");
  send_line(&b);
  buf_free(&b);
}

static void signal_run(const request_t *r) {
  if (r->target.type != T_NUMBER) return;
  for (size_t i = 0; i < run_count; i++) {
    if (runs[i].id != r->target.num) continue;
    int kill_all = r->signal.type == T_STRING && strcmp(r->signal.str, "SIGKILL") == 0;
    kill_group(runs[i].pid, kill_all ? SIGKILL : SIGTERM);
    if (kill_all) sweep();
    return;
  }
}

/* ------------------------------------------------------------------ requests */

static void handle_line(const char *line, size_t len) {
  request_t r;
  if (parse_request(line, len, &r) < 0) {
    free_request(&r);
    return;
  }
  const char *op = r.op.type == T_STRING ? r.op.str : NULL;
  if (op && strcmp(op, "run") == 0) {
    if (r.command.type == T_STRING && r.cwd.type == T_STRING && r.cwd.str[0] == '/' && r.id.type == T_NUMBER) start_run(&r);
    else send_failure(&r.id, "EINVAL", "bad request run");
    free_request(&r);
    return;
  }
  if (op && strcmp(op, "signal") == 0) {
    signal_run(&r);
    buf_t b = {0};
    send_ok_prefix(&b, &r.id);
    buf_str(&b, "\"ok\":true}");
    send_line(&b);
    buf_free(&b);
    free_request(&r);
    return;
  }
  int (*operation)(const request_t *, buf_t *, failure_t *) = NULL;
  if (op && strcmp(op, "write") == 0) operation = op_write;
  else if (op && strcmp(op, "read") == 0) operation = op_read;
  else if (op && strcmp(op, "list") == 0) operation = op_list;
  else if (op && strcmp(op, "stat") == 0) operation = op_stat;
  failure_t f = {NULL, {0}};
  buf_t answer = {0};
  if (!operation || r.path.type != T_STRING || r.path.str[0] != '/') {
    f.code = "EINVAL";
    buf_printf(&f.message, "bad request %s", op ? op : "undefined");
  } else if (has_nul(&r.path)) {
    f.code = "ERR_INVALID_ARG_VALUE";
    buf_str(&f.message, "The argument 'path' must be a string, Uint8Array, or URL without null bytes.");
  } else {
    operation(&r, &answer, &f);
  }
  if (f.code) {
    send_failure(&r.id, f.code, f.message.data ? f.message.data : "");
  } else {
    buf_t b = {0};
    send_ok_prefix(&b, &r.id);
    buf_str(&b, "\"ok\":true");
    if (answer.len) buf_put(&b, answer.data, answer.len);
    buf_str(&b, "}");
    send_line(&b);
    buf_free(&b);
  }
  buf_free(&answer);
  buf_free(&f.message);
  free_request(&r);
}

static void send_ready(void) {
  buf_t b = {0};
  buf_printf(&b, "{\"id\":0,\"ok\":true,\"ready\":%ld,\"env\":{", (long)getpid());
  int first = 1;
  for (char **e = environ; e && *e; e++) {
    const char *equals = strchr(*e, '=');
    if (!equals || equals == *e) continue;
    if (!first) buf_put(&b, ",", 1);
    first = 0;
    json_string(&b, *e, (size_t)(equals - *e));
    buf_put(&b, ":", 1);
    json_cstring(&b, equals + 1);
  }
  buf_printf(&b, "},\"sweep\":%s}", can_sweep ? "true" : "false");
  send_line(&b);
  buf_free(&b);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  if (make_pipe(sigchld_pipe) < 0 || set_cloexec_nonblock(sigchld_pipe[0], 1) < 0 || set_cloexec_nonblock(sigchld_pipe[1], 1) < 0) return 71;
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_sigchld;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &action, NULL);
#ifdef __linux__
  const char *runtime = getenv("SANDBOX_RUNTIME");
  can_sweep = runtime && strcmp(runtime, "1") == 0 && getppid() == 1;
#endif
  send_ready();

  buf_t input = {0};
  int stdin_open = 1;
  struct pollfd *fds = NULL;
  size_t fds_cap = 0;
  for (;;) {
    if (!stdin_open && run_count == 0) break;
    size_t want = 2 + run_count * 2;
    if (want > fds_cap) {
      fds_cap = want * 2;
      struct pollfd *grown = realloc(fds, fds_cap * sizeof *grown);
      if (!grown) _exit(70);
      fds = grown;
    }
    size_t n = 0;
    fds[n++] = (struct pollfd){sigchld_pipe[0], POLLIN, 0};
    fds[n++] = (struct pollfd){stdin_open ? STDIN_FILENO : -1, POLLIN, 0};
    long long now = now_ms();
    int timeout = -1;
    for (size_t i = 0; i < run_count; i++) {
      fds[n++] = (struct pollfd){runs[i].out_fd, POLLIN, 0};
      fds[n++] = (struct pollfd){runs[i].err_fd, POLLIN, 0};
      if (runs[i].exited) {
        long long left = runs[i].deadline_ms - now;
        if (left < 0) left = 0;
        if (timeout < 0 || left < timeout) timeout = (int)left;
      }
    }
    int ready = poll(fds, (nfds_t)n, timeout);
    if (ready < 0 && errno != EINTR) return 72;
    if (ready > 0 && fds[0].revents) {
      char drain[64];
      while (read(sigchld_pipe[0], drain, sizeof drain) > 0) {
      }
    }
    reap_children();
    /* output before requests: a signal request cannot overtake what was already written */
    size_t served = run_count;
    for (size_t i = 0; ready > 0 && i < served && i < run_count; i++) {
      run_t *run = &runs[i];
      if (fds[2 + i * 2].revents && run->out_fd >= 0 && run->out_fd == fds[2 + i * 2].fd) forward_output(run, &run->out_fd);
      if (fds[3 + i * 2].revents && run->err_fd >= 0 && run->err_fd == fds[3 + i * 2].fd) forward_output(run, &run->err_fd);
    }
    if (ready > 0 && stdin_open && fds[1].revents) {
      buf_reserve(&input, 65536);
      ssize_t got = read(STDIN_FILENO, input.data + input.len, 65536);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) got = -2;
      if (got == 0 || got == -1) {
        stdin_open = 0;
        if (input.len) handle_line(input.data, input.len);
        input.len = 0;
      } else if (got > 0) {
        size_t scanned = input.len;
        input.len += (size_t)got;
        size_t start = 0;
        for (size_t i = scanned; i < input.len; i++) {
          if (input.data[i] != '\n' && input.data[i] != '\r') continue;
          if (i > start) handle_line(input.data + start, i - start);
          start = i + 1;
        }
        memmove(input.data, input.data + start, input.len - start);
        input.len -= start;
      }
    }
    now = now_ms();
    for (size_t i = 0; i < run_count;) {
      run_t *run = &runs[i];
      if (run->exited && ((run->out_fd < 0 && run->err_fd < 0) || now >= run->deadline_ms)) finish_run(i);
      else i++;
    }
  }
  buf_free(&input);
  free(fds);
  free(runs);
  return 0;
}
