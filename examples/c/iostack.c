/* iostack.c — the asynchronous IO stack on its own (tfs_io_*): random unaligned reads of files of
 * known random bytes, checked byte for byte against pread(2), plus the error paths.
 *
 *   iostack WORK_DIR [SEED]
 *
 * WORK_DIR is an empty directory for the test files; SEED (default: the time) drives the file
 * contents and the requests, and is printed so a failure can be repeated.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

enum { NFILES = 5, GUARD = 16 };
static const int64_t file_sizes[NFILES] = {(1 << 20) + 123, 300001, 7 * 4096, 1, 65536};
static char paths[NFILES][4096];
static const char *path_ptrs[NFILES];
static unsigned char *ref[NFILES]; /* each file's contents, read back with pread */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static int64_t below(uint64_t *s, int64_t n) { return (int64_t)(splitmix(s) % (uint64_t)n); }

static int write_files(const char *dir, uint64_t seed) {
  uint64_t s = seed;
  for (int f = 0; f < NFILES; f++) {
    snprintf(paths[f], sizeof paths[f], "%s/file%d.bin", dir, f);
    path_ptrs[f] = paths[f];
    unsigned char *data = malloc((size_t)file_sizes[f]);
    for (int64_t i = 0; i < file_sizes[f]; i++) {
      data[i] = (unsigned char)splitmix(&s);
    }
    int fd = open(paths[f], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, data, (size_t)file_sizes[f]) != file_sizes[f] || close(fd) != 0) {
      fprintf(stderr, "write %s: %s\n", paths[f], strerror(errno));
      return -1;
    }
    /* The reference: pread of the file as written (and it must be what was generated). */
    ref[f] = malloc((size_t)file_sizes[f]);
    fd = open(paths[f], O_RDONLY);
    int64_t got = 0;
    while (fd >= 0 && got < file_sizes[f]) {
      ssize_t n = pread(fd, ref[f] + got, (size_t)(file_sizes[f] - got), got);
      if (n <= 0) {
        break;
      }
      got += n;
    }
    if (fd >= 0) {
      close(fd);
    }
    if (got != file_sizes[f] || memcmp(ref[f], data, (size_t)got) != 0) {
      fprintf(stderr, "pread of %s does not give back what was written\n", paths[f]);
      return -1;
    }
    free(data);
  }
  return 0;
}

static tfs_io_options io_opts(void) {
  tfs_io_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.device = -1;
  return o;
}

/* A batch of requests into one arena, each dst followed by GUARD untouched bytes. */
struct batch {
  tfs_io_request *reqs;
  int64_t n;
  unsigned char *arena;
  int64_t arena_bytes;
};

/* random_request picks one request of a mix of kinds; max_io is the tfs_io's max_io_bytes. */
static tfs_io_request random_request(uint64_t *s, int64_t max_io) {
  tfs_io_request r;
  memset(&r, 0, sizeof r);
  r.file = (int32_t)below(s, NFILES);
  int64_t size = file_sizes[r.file];
  switch (below(s, 7)) {
  case 0: /* one byte */
    r.offset = below(s, size);
    r.length = 1;
    break;
  case 1: { /* straddling a block boundary */
    int64_t blocks = size / 4096;
    if (blocks >= 1) {
      int64_t b = 1 + below(s, blocks), before = 1 + below(s, 100), after = 1 + below(s, 5000);
      r.offset = b * 4096 - before;
      r.length = before + after;
      if (r.offset + r.length > size) {
        r.length = size - r.offset;
      }
      break;
    }
  }
  /* fallthrough */
  case 2: /* larger than max_io_bytes, where the file allows */
    if (size > max_io + 2) {
      r.length = max_io + 1 + below(s, size - max_io - 1);
      r.offset = below(s, size - r.length + 1);
      break;
    }
    /* fallthrough */
  case 3: /* the file's tail */
    r.length = 1 + below(s, size < 9000 ? size : 9000);
    r.offset = size - r.length;
    break;
  default: /* anywhere, up to 20000 bytes */
    r.offset = below(s, size);
    r.length = 1 + below(s, (size - r.offset) < 20000 ? size - r.offset : 20000);
    break;
  }
  return r;
}

static void batch_make(struct batch *b, uint64_t *s, int64_t n, int64_t max_io) {
  b->n = n;
  b->reqs = malloc((size_t)n * sizeof *b->reqs);
  b->arena_bytes = 0;
  for (int64_t i = 0; i < n; i++) {
    if (i > 0 && below(s, 5) == 0) { /* overlapping: a range inside or across the previous one */
      tfs_io_request p = b->reqs[i - 1];
      tfs_io_request r = p;
      r.offset = p.offset + below(s, p.length);
      r.length = 1 + below(s, file_sizes[r.file] - r.offset);
      if (r.length > 3 * p.length + 10) {
        r.length = 3 * p.length + 10 < file_sizes[r.file] - r.offset ? 3 * p.length + 10 : file_sizes[r.file] - r.offset;
      }
      b->reqs[i] = r;
    } else {
      b->reqs[i] = random_request(s, max_io);
    }
    /* odd dst alignments too: a pad of 0-6 bytes after each guard */
    b->arena_bytes += b->reqs[i].length + GUARD + (int64_t)(((uintptr_t)b->reqs[i].offset * 7 + (uintptr_t)i) % 7);
  }
  b->arena = malloc((size_t)b->arena_bytes);
  memset(b->arena, 0x5a, (size_t)b->arena_bytes);
  int64_t at = 0;
  for (int64_t i = 0; i < n; i++) {
    b->reqs[i].dst = b->arena + at;
    at += b->reqs[i].length + GUARD + (int64_t)(((uintptr_t)b->reqs[i].offset * 7 + (uintptr_t)i) % 7);
  }
}

/* batch_check counts the requests whose bytes differ from the reference or whose guard changed. */
static int64_t batch_check(const struct batch *b, char *why, size_t why_cap) {
  int64_t bad = 0;
  for (int64_t i = 0; i < b->n; i++) {
    const tfs_io_request *r = &b->reqs[i];
    const unsigned char *d = r->dst;
    int wrong = memcmp(d, ref[r->file] + r->offset, (size_t)r->length) != 0;
    for (int g = 0; g < GUARD && !wrong; g++) {
      wrong = d[r->length + g] != 0x5a;
    }
    if (wrong && bad++ == 0) {
      snprintf(why, why_cap, "first bad: reqs[%" PRId64 "] file %d offset %" PRId64 " length %" PRId64, i, r->file,
               r->offset, r->length);
    }
  }
  return bad;
}

static void batch_free(struct batch *b) {
  free(b->reqs);
  free(b->arena);
}

/* json_u64 reads the number after "key": in json (-1 when missing). */
static int64_t json_u64(const char *json, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(json, pat);
  return p == NULL ? -1 : strtoll(p + strlen(pat), NULL, 10);
}

static char *stats_of(tfs_io *io) {
  size_t need = 0;
  if (tfs_io_stats_json(io, NULL, 0, &need) != TFS_OK) {
    return NULL;
  }
  char *buf = malloc(need);
  if (tfs_io_stats_json(io, buf, need, &need) != TFS_OK) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* run_config reads rounds of several batches per complete through one tfs_io and checks them. */
static void run_config(const char *name, tfs_io_options o, uint64_t seed, int rounds) {
  tfs_io *io = NULL;
  tfs_status st = tfs_io_open(path_ptrs, NFILES, &o, &io);
  if (st != TFS_OK) {
    expect(0, "%s: tfs_io_open (%s)", name, tfs_last_error());
    return;
  }
  uint64_t s = seed;
  int64_t max_io = o.max_io_bytes > 0 ? o.max_io_bytes : 128 << 10;
  int64_t total_reqs = 0, total_bytes = 0, bad = 0, submit_fail = 0, checked = 0;
  char why[256] = "";
  for (int round = 0; round < rounds; round++) {
    struct batch batches[4];
    int nb = 1 + (int)below(&s, 4);
    for (int k = 0; k < nb; k++) {
      batch_make(&batches[k], &s, 1 + below(&s, 150), max_io);
      if (tfs_io_submit(io, batches[k].reqs, batches[k].n) != TFS_OK && submit_fail++ == 0) {
        snprintf(why, sizeof why, "submit: %s", tfs_last_error());
      }
      total_reqs += batches[k].n;
      for (int64_t i = 0; i < batches[k].n; i++) {
        total_bytes += batches[k].reqs[i].length;
      }
    }
    st = tfs_io_complete(io, NULL);
    if (st != TFS_OK && submit_fail++ == 0) {
      snprintf(why, sizeof why, "complete: %s", tfs_last_error());
    }
    for (int k = 0; k < nb; k++) {
      bad += batch_check(&batches[k], why + strlen(why), sizeof why - strlen(why));
      checked += batches[k].n;
      batch_free(&batches[k]);
    }
  }
  expect(submit_fail == 0 && bad == 0, "%s: %d rounds of 1-4 submits before each complete, %" PRId64 " requests (%" PRId64
         " bytes) equal pread byte for byte, guards untouched (%" PRId64 " bad%s%s)",
         name, rounds, checked, total_bytes, bad + submit_fail, why[0] ? "; " : "", why);
  char *js = stats_of(io);
  expect(js != NULL && json_u64(js, "requests") == total_reqs && json_u64(js, "bytes_requested") == total_bytes &&
             json_u64(js, "pending_requests") == 0 && json_u64(js, "bytes_read") >= total_bytes / 4,
         "%s: stats count %" PRId64 " requests, %" PRId64 " bytes (%s)", name, total_reqs, total_bytes, js ? js : "no stats");
  /* Bridged gaps only where coalesce_gap allows them; hundreds of requests over the 1 MiB file
     leave gaps under 64 KiB for certain. */
  uint64_t gap = js ? json_u64(js, "gap_bytes") : 0;
  expect(js != NULL && (o.coalesce_gap > 0 ? gap > 0 : gap == 0), "%s: %" PRIu64 " gap bytes read with coalesce_gap %d", name, gap,
         (int)o.coalesce_gap);
  free(js);
  expect_status(tfs_io_close(io), TFS_OK, NULL, "tfs_io_close");
}

/* ---- one handle shared by two threads: calls are serialized, every thread's bytes are right ---- */

struct shared_job {
  tfs_io *io;
  uint64_t seed;
  int64_t bad;
  char why[256];
};

static void *shared_worker(void *arg) {
  struct shared_job *j = arg;
  uint64_t s = j->seed;
  for (int round = 0; round < 40; round++) {
    struct batch b;
    batch_make(&b, &s, 1 + below(&s, 40), 128 << 10);
    tfs_status st = tfs_io_submit(j->io, b.reqs, b.n);
    if (st == TFS_OK) {
      st = tfs_io_complete(j->io, NULL);
    }
    if (st != TFS_OK) {
      if (j->bad++ == 0) {
        snprintf(j->why, sizeof j->why, "%s", tfs_last_error());
      }
    } else {
      j->bad += batch_check(&b, j->why, sizeof j->why);
    }
    batch_free(&b);
  }
  return NULL;
}

static void error_paths(const char *dir) {
  tfs_io_options o = io_opts();
  tfs_io *io = NULL;
  char missing[4200];
  snprintf(missing, sizeof missing, "%s/no-such-file", dir);

  expect_status(tfs_io_open(NULL, 1, &o, &io), TFS_EINVAL, "paths", "tfs_io_open with paths NULL");
  expect(io == NULL, "a failed tfs_io_open leaves *out NULL");
  expect_status(tfs_io_open(path_ptrs, 0, &o, &io), TFS_EINVAL, "n_paths", "tfs_io_open with n_paths 0");
  expect_status(tfs_io_open(path_ptrs, NFILES, &o, NULL), TFS_EINVAL, "out", "tfs_io_open with out NULL");
  const char *with_missing[2] = {paths[0], missing};
  expect_status(tfs_io_open(with_missing, 2, &o, &io), TFS_ENOENT, missing, "tfs_io_open of a missing file");
  const char *with_null[2] = {paths[0], NULL};
  expect_status(tfs_io_open(with_null, 2, &o, &io), TFS_EINVAL, "paths[1]", "tfs_io_open with paths[1] NULL");
  const char *with_dir[1] = {dir};
  expect_status(tfs_io_open(with_dir, 1, &o, &io), TFS_EINVAL, "directory", "tfs_io_open of a directory");
  o.coalesce_gap = -1;
  expect_status(tfs_io_open(path_ptrs, NFILES, &o, &io), TFS_EINVAL, "coalesce_gap", "tfs_io_open with coalesce_gap -1");
  o.coalesce_gap = 0;
  o.struct_size = 0;
  expect_status(tfs_io_open(path_ptrs, NFILES, &o, &io), TFS_EINVAL, "struct_size", "tfs_io_open with struct_size 0");
  o = io_opts();
  o.backend = "spdk";
  expect_status(tfs_io_open(path_ptrs, NFILES, &o, &io), TFS_EINVAL, "backend", "tfs_io_open with backend \"spdk\"");
  o = io_opts();
  o.block_size = 3000;
  expect_status(tfs_io_open(path_ptrs, NFILES, &o, &io), TFS_EINVAL, "block_size", "tfs_io_open with block_size 3000");
  o = io_opts();
  o.queue_depth = -1;
  expect_status(tfs_io_open(path_ptrs, NFILES, &o, &io), TFS_EINVAL, "queue_depth", "tfs_io_open with queue_depth -1");
  o = io_opts();
  o.staging_bytes = -5;
  expect_status(tfs_io_open(path_ptrs, NFILES, &o, &io), TFS_EINVAL, "staging_bytes", "tfs_io_open with staging_bytes -5");
  o = io_opts();
  o.device = -2;
  expect_status(tfs_io_open(path_ptrs, NFILES, &o, &io), TFS_EINVAL, "device", "tfs_io_open with device -2");

  /* Device destinations: TFS_ENOTSUP on a machine without CUDA (this test cannot check GPU copies). */
  o = io_opts();
  o.device = 0;
  tfs_status st = tfs_io_open(path_ptrs, NFILES, &o, &io);
  if (st == TFS_OK) {
    expect(1, "tfs_io_open with device 0 succeeded: CUDA is available (device destinations are not checked here)");
    tfs_io_close(io);
    io = NULL;
  } else {
    expect_status(st, TFS_ENOTSUP, "CUDA", "tfs_io_open with device 0 on a machine without CUDA");
  }

  /* A good handle, then bad submits: nothing of a rejected batch is queued. */
  o = io_opts();
  expect_status(tfs_io_open(path_ptrs, NFILES, &o, &io), TFS_OK, NULL, "tfs_io_open (default options)");
  if (io == NULL) {
    return;
  }
  unsigned char buf[64];
  tfs_io_request r[2];
  memset(r, 0, sizeof r);
  r[0].file = 1, r[0].offset = 10, r[0].length = 8, r[0].dst = buf;
  r[1] = r[0];
  r[1].dst = buf + 32;
  expect_status(tfs_io_submit(NULL, r, 1), TFS_EINVAL, "NULL", "tfs_io_submit with io NULL");
  expect_status(tfs_io_submit(io, NULL, 1), TFS_EINVAL, "reqs", "tfs_io_submit with reqs NULL and n 1");
  expect_status(tfs_io_submit(io, r, -1), TFS_EINVAL, "n = -1", "tfs_io_submit with n -1");
  expect_status(tfs_io_submit(io, NULL, 0), TFS_OK, NULL, "tfs_io_submit of nothing (reqs NULL, n 0)");
  r[1].file = NFILES;
  expect_status(tfs_io_submit(io, r, 2), TFS_EINVAL, "reqs[1].file", "tfs_io_submit with a file index out of range");
  r[1].file = -1;
  expect_status(tfs_io_submit(io, r, 2), TFS_EINVAL, "reqs[1].file", "tfs_io_submit with file -1");
  r[1].file = 1, r[1].length = 0;
  expect_status(tfs_io_submit(io, r, 2), TFS_EINVAL, "reqs[1].length", "tfs_io_submit with length 0");
  r[1].length = -4;
  expect_status(tfs_io_submit(io, r, 2), TFS_EINVAL, "reqs[1].length", "tfs_io_submit with a negative length");
  r[1].length = 8, r[1].offset = -1;
  expect_status(tfs_io_submit(io, r, 2), TFS_EINVAL, "reqs[1].offset", "tfs_io_submit with a negative offset");
  r[1].offset = 10, r[1].dst = NULL;
  expect_status(tfs_io_submit(io, r, 2), TFS_EINVAL, "reqs[1].dst", "tfs_io_submit with dst NULL");
  r[1].dst = buf + 32, r[1].dst_is_device = 1;
  expect_status(tfs_io_submit(io, r, 2), TFS_EINVAL, "dst_is_device",
                "tfs_io_submit of a device destination on a host-only tfs_io");
  r[1].dst_is_device = 0, r[1].offset = file_sizes[1] - 4;
  expect_status(tfs_io_submit(io, r, 2), TFS_EINVAL, "past the end", "tfs_io_submit of a range past the end of the file");
  r[1].offset = INT64_MAX - 4;
  expect_status(tfs_io_submit(io, r, 2), TFS_EINVAL, "reqs[1]", "tfs_io_submit of an offset near INT64_MAX");
  char *js = stats_of(io);
  expect(js != NULL && json_u64(js, "requests") == 0 && json_u64(js, "pending_requests") == 0,
         "rejected submits queued nothing (%s)", js ? js : "no stats");
  free(js);
  expect_status(tfs_io_complete(io, NULL), TFS_OK, NULL, "tfs_io_complete with nothing submitted");

  /* The last byte of a file, and a 1-byte file: reads cut short by the end of the file. */
  r[1].offset = file_sizes[1] - 8;
  r[0].file = 3, r[0].offset = 0, r[0].length = 1;
  memset(buf, 0, sizeof buf);
  st = tfs_io_submit(io, r, 2);
  if (st == TFS_OK) {
    st = tfs_io_complete(io, NULL);
  }
  expect(st == TFS_OK && buf[0] == ref[3][0] && memcmp(buf + 32, ref[1] + file_sizes[1] - 8, 8) == 0,
         "the 1-byte file and the last 8 bytes of a file of 300001 bytes read back right (%s)",
         st == TFS_OK ? "ok" : tfs_last_error());

  /* Stats JSON buffer handling, as tfs_stats_json. */
  size_t need = 0;
  expect_status(tfs_io_stats_json(io, NULL, 0, &need), TFS_OK, NULL, "tfs_io_stats_json size query (buf NULL, cap 0)");
  expect(need > 1, "tfs_io_stats_json sets *needed (%zu)", need);
  expect_status(tfs_io_stats_json(io, NULL, 0, NULL), TFS_EINVAL, "needed", "tfs_io_stats_json with needed NULL");
  expect_status(tfs_io_stats_json(io, NULL, 8, &need), TFS_EINVAL, "buf", "tfs_io_stats_json with buf NULL and cap 8");
  char small[8];
  memset(small, 'x', sizeof small);
  expect_status(tfs_io_stats_json(io, small, sizeof small, &need), TFS_OK, NULL, "tfs_io_stats_json into 8 bytes");
  expect(memcmp(small, "{\"backen", 8) == 0, "a short buffer gets the first cap bytes of the JSON");
  js = stats_of(io);
  expect(js != NULL && js[0] == '{' && js[strlen(js) - 1] == '}' && strstr(js, "\"requests\":2") != NULL &&
             strstr(js, "\"backend\":\"") != NULL && strstr(js, "\"files\":5") != NULL && strlen(js) + 1 == need,
         "tfs_io_stats_json is one JSON object with \"requests\", \"backend\", \"files\" (%s)", js ? js : "none");
  free(js);

  /* Closed handles. */
  expect_status(tfs_io_close(io), TFS_OK, NULL, "tfs_io_close");
  expect_status(tfs_io_submit(io, r, 1), TFS_ECLOSED, "closed", "tfs_io_submit on a closed tfs_io");
  expect_status(tfs_io_complete(io, NULL), TFS_ECLOSED, "closed", "tfs_io_complete on a closed tfs_io");
  expect_status(tfs_io_stats_json(io, NULL, 0, &need), TFS_ECLOSED, "closed", "tfs_io_stats_json on a closed tfs_io");
  expect_status(tfs_io_close(io), TFS_ECLOSED, "closed", "tfs_io_close twice");
  expect_status(tfs_io_close(NULL), TFS_EINVAL, "NULL", "tfs_io_close(NULL)");
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: iostack WORK_DIR [SEED]\n");
    return 2;
  }
  const char *dir = argv[1];
  uint64_t seed = argc == 3 ? strtoull(argv[2], NULL, 10) : (uint64_t)time(NULL);
  printf("# seed %" PRIu64 " (rerun with: iostack DIR %" PRIu64 ")\n", seed, seed);
  mkdir(dir, 0700);
  if (write_files(dir, seed) != 0) {
    expect(0, "write the test files to %s", dir);
    return 1;
  }
  expect(1, "wrote %d files of random bytes (sizes 1 MiB + 123, 300001, 28672, 1, 65536) to %s", NFILES, dir);

  tfs_io_options o = io_opts();
  run_config("default options", o, seed + 1, 12);
  o.backend = "pread";
  run_config("backend pread", o, seed + 2, 8);
  o = io_opts();
  o.queue_depth = 4;
  o.max_io_bytes = 8192;
  o.staging_bytes = 16384; /* 2 slots: most reads wait for staging */
  run_config("queue_depth 4, max_io_bytes 8192, staging 16 KiB", o, seed + 3, 6);
  o.no_coalesce = 1;
  o.backend = "pread";
  run_config("no_coalesce, pread, small staging", o, seed + 4, 4);
  o = io_opts();
  o.no_coalesce = 1;
  o.block_size = 512;
  run_config("no_coalesce, block_size 512", o, seed + 5, 4);
  o = io_opts();
  o.coalesce_gap = 64 << 10;
  run_config("coalesce_gap 64 KiB", o, seed + 6, 6);

  /* Two threads on one handle. */
  o = io_opts();
  tfs_io *io = NULL;
  if (tfs_io_open(path_ptrs, NFILES, &o, &io) == TFS_OK) {
    struct shared_job jobs[2] = {{io, seed + 10, 0, ""}, {io, seed + 11, 0, ""}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
      pthread_create(&t[i], NULL, shared_worker, &jobs[i]);
    }
    for (int i = 0; i < 2; i++) {
      pthread_join(t[i], NULL);
    }
    expect(jobs[0].bad == 0 && jobs[1].bad == 0, "two threads submitting and completing on one tfs_io get their bytes (%s%s)",
           jobs[0].why, jobs[1].why);
    tfs_io_close(io);
  } else {
    expect(0, "tfs_io_open for the two-thread check: %s", tfs_last_error());
  }

  error_paths(dir);
  for (int f = 0; f < NFILES; f++) {
    free(ref[f]);
  }
  return tap_failed;
}
