/* errors.c — the error paths of the C API: statuses, messages, closed handles, option struct
 * sizes, and per-thread last errors.
 *
 *   errors DATASET NEWER_VERSION_DIR CORRUPT_DIR BAD_MANIFEST_DIR SCRATCH_DIR
 *
 * DATASET is a valid dataset with topology, labels and a train split; NEWER_VERSION_DIR its copy
 * with a manifest of version 99; CORRUPT_DIR its copy with a flipped byte in row 0's block;
 * BAD_MANIFEST_DIR a directory whose manifest.json is not JSON; SCRATCH_DIR an empty directory.
 */
#define _POSIX_C_SOURCE 200809L /* pthread barriers under -std=c11 */
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

static tfs_open_options default_opts(void) {
  tfs_open_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.device = -1;
  return o;
}

/* sampler_opts is a sampler's options_json: fanouts (hops of them) for the only edge type. */
static const char *sampler_opts(const int32_t *fanouts, int32_t hops, uint64_t seed, int replace) {
  static char json[256];
  int n = snprintf(json, sizeof json, "{\"fanouts\": [");
  for (int32_t h = 0; h < hops; h++) {
    n += snprintf(json + n, sizeof json - (size_t)n, "%s%d", h ? ", " : "", (int)fanouts[h]);
  }
  snprintf(json + n, sizeof json - (size_t)n, "], \"seed\": %" PRIu64 ", \"replace\": %s}", seed, replace ? "true" : "false");
  return json;
}

/* ---- two threads failing differently at the same time ---- */

enum { ROUNDS = 500 };
static pthread_barrier_t barrier;
static tfs_store *shared_store;
static int64_t shared_nodes, shared_row_bytes;

/* Thread A opens missing directories; its message must name its own path. */
static void *thread_open_missing(void *arg) {
  int *bad = arg;
  char path[64];
  for (int i = 0; i < ROUNDS; i++) {
    snprintf(path, sizeof path, "/nonexistent/thread-A-%d", i);
    tfs_store *s = NULL;
    pthread_barrier_wait(&barrier);
    tfs_status st = tfs_open(path, NULL, &s);
    pthread_barrier_wait(&barrier); /* the other thread's call has failed too by now */
    if (st != TFS_ENOENT || strstr(tfs_last_error(), path) == NULL) {
      (*bad)++;
    }
  }
  return NULL;
}

/* Thread B gathers out-of-range ids; its message must name its own id, never thread A's path. */
static void *thread_gather_range(void *arg) {
  int *bad = arg;
  char want[64];
  unsigned char *row = malloc((size_t)shared_row_bytes);
  for (int i = 0; i < ROUNDS; i++) {
    int64_t id = shared_nodes + i;
    snprintf(want, sizeof want, "= %" PRId64 " is out of range", id);
    pthread_barrier_wait(&barrier);
    tfs_status st = tfs_gather(shared_store, NULL, NULL, &id, 1, row, shared_row_bytes);
    pthread_barrier_wait(&barrier);
    if (st != TFS_ERANGE || strstr(tfs_last_error(), want) == NULL || strstr(tfs_last_error(), "thread-A") != NULL) {
      (*bad)++;
    }
  }
  free(row);
  return NULL;
}

static void *thread_fresh(void *arg) {
  *(const char **)arg = tfs_last_error();
  return NULL;
}

/* ---- concurrent gathers agree with a single-threaded one ---- */

struct gather_job {
  const int64_t *ids;
  int64_t n, row_bytes;
  unsigned char *out;
  tfs_status st;
};

static void *gather_worker(void *arg) {
  struct gather_job *j = arg;
  for (int k = 0; k < 20 && j->st == TFS_OK; k++) {
    j->st = tfs_gather(shared_store, NULL, NULL, j->ids, j->n, j->out, j->n * j->row_bytes);
  }
  return NULL;
}

static int same_first_sample(tfs_sampler *a, tfs_sampler *b, const int64_t *seeds, int64_t n) {
  struct tfs_sample *x = NULL, *y = NULL;
  if (tfs_sample(a, NULL, seeds, n, &x) != TFS_OK || tfs_sample(b, NULL, seeds, n, &y) != TFS_OK) {
    return -1;
  }
  int64_t nx, ex, ny, ey;
  int32_t hx, hy;
  sample_sizes(x, &nx, &ex, &hx, NULL, NULL);
  sample_sizes(y, &ny, &ey, &hy, NULL, NULL);
  int same = nx == ny && ex == ey;
  if (same) {
    int64_t *bx = malloc((size_t)(nx + 2 * ex + 1) * 8), *by = malloc((size_t)(ny + 2 * ey + 1) * 8);
    tfs_sample_nodes(x, NULL, bx);
    tfs_sample_edges(x, NULL, bx + nx, bx + nx + ex, NULL);
    tfs_sample_nodes(y, NULL, by);
    tfs_sample_edges(y, "", by + ny, by + ny + ey, NULL);
    same = memcmp(bx, by, (size_t)(nx + 2 * ex) * 8) == 0;
    free(bx), free(by);
  }
  tfs_sample_free(x);
  tfs_sample_free(y);
  return same;
}

struct progress_seen {
  int calls, commit_done, backwards;
  char stage[64];
  int64_t done;
};

static void on_progress(void *ctx, const char *stage, int64_t done, int64_t total) {
  struct progress_seen *p = ctx;
  p->calls++;
  if (strcmp(stage, p->stage) == 0 && done < p->done) {
    p->backwards++;
  }
  snprintf(p->stage, sizeof p->stage, "%s", stage);
  p->done = done;
  if (strcmp(stage, "commit") == 0 && total > 0 && done == total) {
    p->commit_done = 1;
  }
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: errors DATASET NEWER_VERSION_DIR CORRUPT_DIR BAD_MANIFEST_DIR SCRATCH_DIR\n");
    return 2;
  }
  const char *ds = argv[1], *v99 = argv[2], *corrupt = argv[3], *badman = argv[4], *scratch = argv[5];
  tfs_open_options o = default_opts();
  tfs_store *s = NULL;

  expect(tfs_abi_version() == TFS_ABI_VERSION, "tfs_abi_version() == TFS_ABI_VERSION (%d)", TFS_ABI_VERSION);
  const char *fresh = NULL;
  pthread_t t;
  pthread_create(&t, NULL, thread_fresh, &fresh);
  pthread_join(t, NULL);
  expect(fresh != NULL && fresh[0] == '\0', "tfs_last_error() is \"\" on a thread with no failed call");

  /* ---- tfs_open ---- */
  expect_status(tfs_open("/nonexistent/tierfs-missing-dir", &o, &s), TFS_ENOENT, "/nonexistent/tierfs-missing-dir",
                "open of a missing directory");
  expect(s == NULL, "a failed tfs_open leaves *out NULL");
  expect_status(tfs_open(scratch, &o, &s), TFS_ENOENT, scratch, "open of a directory that is no dataset");
  expect_status(tfs_open(v99, &o, &s), TFS_EVERSION, "version", "open of a manifest of format version 99");
  expect_status(tfs_open(badman, &o, &s), TFS_ECORRUPT, "manifest", "open of a manifest that is not JSON");
  expect_status(tfs_open(NULL, &o, &s), TFS_EINVAL, "path", "open with path NULL");
  expect_status(tfs_open(ds, &o, NULL), TFS_EINVAL, "out", "open with out NULL");
  o.struct_size = 0;
  expect_status(tfs_open(ds, &o, &s), TFS_EINVAL, "struct_size", "open with opts.struct_size 0");
  o.struct_size = sizeof o + 8;
  expect_status(tfs_open(ds, &o, &s), TFS_EINVAL, "struct_size", "open with opts.struct_size > sizeof");
  o = default_opts();
  o.io_backend = "carrier-pigeon";
  expect_status(tfs_open(ds, &o, &s), TFS_EINVAL, "carrier-pigeon", "open with an unknown io_backend");
  o = default_opts();
  o.feature = "no-such-feature";
  expect_status(tfs_open(ds, &o, &s), TFS_ENOENT, "no-such-feature", "open of a feature the dataset lacks");
  o = default_opts();
  o.host_cache_bytes = -1;
  expect_status(tfs_open(ds, &o, &s), TFS_EINVAL, "host_cache_bytes", "open with a negative host cache");
  o = default_opts();
  o.gpu_topology = "nvme";
  expect_status(tfs_open(ds, &o, &s), TFS_EINVAL, "gpu_topology", "open with an unknown gpu_topology");
  o = default_opts();
  o.gpu_cache_bytes = -1;
  expect_status(tfs_open(ds, &o, &s), TFS_EINVAL, "gpu_cache_bytes", "open with a negative GPU cache");

  /* An older caller's smaller struct: what lies past struct_size must be ignored. */
  o = default_opts();
  o.struct_size = offsetof(tfs_open_options, queue_depth);
  o.queue_depth = -5;
  o.max_concurrent_io = -5;
  o.device = -99;
  expect_status(tfs_open(ds, &o, &s), TFS_OK, NULL, "open with an older, smaller struct (fields past struct_size ignored)");
  if (s != NULL) tfs_close(s);
  s = NULL;

  o = default_opts();
  expect_status(tfs_open(ds, &o, &s), TFS_OK, NULL, "open of the dataset");
  if (s == NULL) return 1;
  tfs_store_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  expect_status(tfs_store_info_get(s, NULL, &info), TFS_OK, NULL, "tfs_store_info_get");
  int64_t rb = info.row_bytes, nodes = info.num_nodes;

  /* ---- store info sizes ---- */
  tfs_store_info small;
  memset(&small, 0x5a, sizeof small);
  small.struct_size = offsetof(tfs_store_info, dim);
  expect_status(tfs_store_info_get(s, NULL, &small), TFS_OK, NULL, "tfs_store_info_get with an older, smaller struct");
  expect(small.struct_size == offsetof(tfs_store_info, dim) && small.num_nodes == nodes && small.num_edges == info.num_edges &&
             small.dim == (int64_t)0x5a5a5a5a5a5a5a5aLL && small.io_backend[0] == 0x5a,
         "only the fields within struct_size are written");
  small.struct_size = 0;
  expect_status(tfs_store_info_get(s, NULL, &small), TFS_EINVAL, "struct_size", "tfs_store_info_get with struct_size 0");
  expect_status(tfs_store_info_get(s, NULL, NULL), TFS_EINVAL, "out", "tfs_store_info_get with out NULL");

  /* ---- gather ---- */
  unsigned char *row = malloc((size_t)rb * 4);
  int64_t id = nodes;
  expect_status(tfs_gather(s, NULL, NULL, &id, 1, row, rb), TFS_ERANGE, "out of range", "gather of id num_nodes");
  id = -1;
  expect_status(tfs_gather(s, NULL, NULL, &id, 1, row, rb), TFS_ERANGE, "-1", "gather of id -1");
  id = 0;
  expect_status(tfs_gather(s, NULL, NULL, &id, 1, NULL, rb), TFS_EINVAL, "dst", "gather into dst NULL");
  expect_status(tfs_gather(s, NULL, NULL, NULL, 1, row, rb), TFS_EINVAL, "ids", "gather of ids NULL");
  expect_status(tfs_gather(s, NULL, NULL, &id, 1, row, rb - 1), TFS_EINVAL, "dst_bytes", "gather with dst_bytes != n*row_bytes");
  expect_status(tfs_gather(s, NULL, NULL, &id, -1, row, rb), TFS_EINVAL, "negative", "gather of n = -1");
  expect_status(tfs_gather(NULL, NULL, NULL, &id, 1, row, rb), TFS_EINVAL, "NULL", "gather on store NULL");
  expect_status(tfs_gather((tfs_store *)(uintptr_t)0x7fffffff0000ULL, NULL, NULL, &id, 1, row, rb), TFS_EINVAL, "not a tierfs handle",
                "gather on a made-up handle");
  expect_status(tfs_gather_device(s, NULL, &id, 1, row, rb, NULL), TFS_ENOTSUP, "GPU path unavailable", "tfs_gather_device");

  /* ---- labels, split, stats, place ---- */
  int64_t lab = 0;
  id = nodes + 5;
  expect_status(tfs_labels(s, NULL, &id, 1, &lab), TFS_ERANGE, "out of range", "labels of an out-of-range id");
  id = 0;
  expect_status(tfs_labels(s, NULL, &id, 1, NULL), TFS_EINVAL, "out", "labels into out NULL");
  int64_t count = 0, some[4];
  expect_status(tfs_split(s, NULL, "no-such-split", some, 4, &count), TFS_ENOENT, "no-such-split", "split the dataset lacks");
  expect_status(tfs_split(s, NULL, "train", some, 4, NULL), TFS_EINVAL, "count", "split with count NULL");
  expect_status(tfs_split(s, NULL, "train", NULL, 4, &count), TFS_EINVAL, "out", "split with out NULL and cap 4");
  expect_status(tfs_split(s, NULL, NULL, some, 4, &count), TFS_EINVAL, "name", "split with name NULL");
  char tiny[5];
  size_t needed = 0;
  expect_status(tfs_stats_json(s, tiny, sizeof tiny, &needed), TFS_OK, NULL, "stats_json into a 5-byte buffer");
  expect(needed > sizeof tiny && tiny[0] == '{', "a short buffer gets the JSON's start and *needed its full size (%zu)", needed);
  expect_status(tfs_stats_json(s, NULL, 10, &needed), TFS_EINVAL, "buf", "stats_json with buf NULL and cap 10");
  expect_status(tfs_stats_json(s, tiny, sizeof tiny, NULL), TFS_EINVAL, "needed", "stats_json with needed NULL");
  uint32_t hot[3] = {1, 2, 3};
  expect_status(tfs_place(s, NULL, hot, 3), TFS_EINVAL, "hotness", "place with 3 counts for a larger dataset");

  /* ---- a JSON call's report that does not fit is kept on the handle for the retry ---- */
  const char *preq = "{\"fanouts\": [2], \"batch_size\": 256, \"batches\": 2, \"policy\": \"degree\"}";
  char two[2] = {'x', 'x'};
  size_t pneed = 0, pneed2 = 0;
  expect_status(tfs_place_json(s, preq, two, sizeof two, &pneed), TFS_OK, NULL, "place_json into a 2-byte buffer");
  expect(pneed > sizeof two && two[0] == '\0', "a short buffer gets \"\" and *needed the report's size (%zu)", pneed);
  char *report = malloc(pneed);
  expect_status(tfs_place_json(s, preq, report, pneed, &pneed2), TFS_OK, NULL, "place_json again with cap = *needed");
  expect(pneed2 == pneed && strlen(report) + 1 == pneed && strstr(report, "\"source\"") != NULL,
         "the retry gets the whole kept report (%zu bytes)", pneed2);
  free(report);
  expect_status(tfs_place_json(s, "{\"fanouts\": [2]", NULL, 0, &pneed), TFS_EINVAL, "request_json", "place_json with a bad request");

  /* ---- sampler ---- */
  int64_t train[64];
  expect_status(tfs_split(s, NULL, "train", train, 64, &count), TFS_OK, NULL, "split train");
  int64_t nseeds = count < 64 ? count : 64;
  int32_t fan[2] = {10, 5}, badfan[2] = {10, -2};
  tfs_sampler *sp = NULL, *sp2 = NULL, *sp3 = NULL;
  expect_status(tfs_sampler_create(s, "{\"fanout\": [2]}", &sp), TFS_EINVAL, "unknown field", "sampler with an unknown option");
  /* zero hops (PyG's num_neighbors=[]) sample the seeds alone */
  expect_status(tfs_sampler_create(s, sampler_opts(fan, 0, 9, 0), &sp), TFS_OK, NULL, "sampler with 0 hops");
  tfs_sampler_free(sp);
  sp = NULL;
  expect_status(tfs_sampler_create(s, "{\"fanouts\": [2], \"fanouts\": [3]}", &sp), TFS_EINVAL, "appears twice", "sampler with a key given twice");
  expect_status(tfs_sampler_create(s, sampler_opts(badfan, 2, 9, 0), &sp), TFS_EINVAL, "fanouts[1] = -2", "sampler with a fanout of -2");
  expect_status(tfs_sampler_create(s, "{\"seed\": 1}", &sp), TFS_EINVAL, "fanouts", "sampler without fanouts");
  expect_status(tfs_sampler_create(s, "{\"fanouts\": {\"a:b:c\": [2]}}", &sp), TFS_EINVAL, "a:b:c", "sampler with fanouts of an unknown edge type");
  expect_status(tfs_sampler_create(s, NULL, &sp), TFS_EINVAL, "options_json", "sampler with options_json NULL");
  const char *so = sampler_opts(fan, 2, 9, 0);
  expect_status(tfs_sampler_create(s, so, &sp), TFS_OK, NULL, "sampler create");
  expect_status(tfs_sampler_create(s, so, &sp2), TFS_OK, NULL, "a second sampler, same seed");
  expect_status(tfs_sampler_create(s, sampler_opts(fan, 2, 10, 0), &sp3), TFS_OK, NULL, "a third sampler, seed + 1");
  expect(same_first_sample(sp, sp2, train, nseeds) == 1, "two samplers with the same seed draw the same first sample");
  expect(same_first_sample(sp, sp2, train, nseeds) == 1, "... and the same second sample");
  tfs_sampler_free(sp2);
  so = sampler_opts(fan, 2, 9, 0);
  tfs_sampler_create(s, so, &sp2);
  expect(same_first_sample(sp2, sp2, train, nseeds) == 0, "one sampler's consecutive calls draw different samples");
  tfs_sampler_free(sp2);
  tfs_sampler_create(s, so, &sp2);
  struct tfs_sample *skip = NULL;
  tfs_sample(sp2, NULL, train, nseeds, &skip);
  tfs_sample_free(skip);
  expect(same_first_sample(sp2, sp3, train, nseeds) == 1, "call 1 of a seed-9 sampler equals call 0 of a seed-10 sampler (seed + call number)");
  tfs_sampler_free(sp2);
  tfs_sampler_free(sp3);
  struct tfs_sample *smp = NULL;
  id = nodes;
  expect_status(tfs_sample(sp, NULL, &id, 1, &smp), TFS_ERANGE, "out of range", "sample of an out-of-range seed");
  expect_status(tfs_sample(sp, NULL, NULL, 3, &smp), TFS_EINVAL, "seeds", "sample of seeds NULL");
  expect_status(tfs_sample(sp, "", train, nseeds, NULL), TFS_EINVAL, "out", "sample into out NULL");
  expect_status(tfs_sample(sp, "no_such_type", train, nseeds, &smp), TFS_ENOENT, "no_such_type", "sample of seeds of an unknown node type");
  expect_status(tfs_sample(sp, NULL, train, nseeds, &smp), TFS_OK, NULL, "sample");
  size_t sneed = 0;
  expect_status(tfs_sample_json(smp, NULL, 0, NULL), TFS_EINVAL, "needed", "sample_json with needed NULL");
  expect_status(tfs_sample_json(smp, NULL, 0, &sneed), TFS_OK, NULL, "sample_json (size)");
  expect_status(tfs_sample_nodes(smp, NULL, NULL), TFS_EINVAL, "out", "sample_nodes into out NULL");
  expect_status(tfs_sample_nodes(smp, "no_such_type", &id), TFS_ENOENT, "no_such_type", "sample_nodes of an unknown node type");
  expect_status(tfs_gather((tfs_store *)sp, NULL, NULL, &id, 1, row, rb), TFS_EINVAL, "sampler, not a store", "a sampler handle passed as a store");
  expect_status(tfs_sample_free(smp), TFS_OK, NULL, "sample free");
  expect_status(tfs_sample_free(smp), TFS_ECLOSED, "already", "sample freed twice");
  expect_status(tfs_sample_json(smp, NULL, 0, &sneed), TFS_ECLOSED, "already", "sample_json on a freed sample");

  /* ---- the sample-size bound (store option max_sample_edges): a sample past it is TFS_EINVAL
   * naming the seeds, fanouts and bound; a larger bound lets the same sample through ---- */
  {
    int32_t big[2] = {1000000, 1000000};
    tfs_store *bs = NULL;
    tfs_sampler *bsp = NULL;
    struct tfs_sample *bsmp = NULL;
    char msg[96];
    expect_status(tfs_open_json(ds, "{\"max_sample_edges\": -1}", &bs), TFS_EINVAL, "max_sample_edges",
                  "open_json with max_sample_edges -1");
    expect_status(tfs_open_json(ds, "{\"max_sample_edges\": 4}", &bs), TFS_OK, NULL, "open_json with max_sample_edges 4");
    expect_status(tfs_sampler_create(bs, sampler_opts(big, 2, 3, 1), &bsp), TFS_OK, NULL, "a sampler of fanouts [1000000, 1000000] with replacement");
    snprintf(msg, sizeof msg, "a sample of %" PRId64 " seeds with fanouts [1000000 1000000]", nseeds);
    expect_status(tfs_sample(bsp, NULL, train, nseeds, &bsmp), TFS_EINVAL, msg, "a sample past max_sample_edges 4 names the seeds and fanouts");
    expect(strstr(tfs_last_error(), "bound of 4 edges") != NULL && strstr(tfs_last_error(), "max_sample_edges") != NULL,
           "... and the bound and the option: %s", tfs_last_error());
    tfs_sampler_free(bsp);
    tfs_close(bs);
    int32_t small[2] = {3, 2};
    const char *bo = sampler_opts(small, 2, 3, 1);
    expect_status(tfs_open_json(ds, "{\"max_sample_edges\": 4}", &bs), TFS_OK, NULL, "open_json with max_sample_edges 4 again");
    tfs_sampler_create(bs, bo, &bsp);
    expect_status(tfs_sample(bsp, NULL, train, nseeds, &bsmp), TFS_EINVAL, "bound of 4 edges", "fanouts [3, 2] past a bound of 4");
    tfs_sampler_free(bsp);
    tfs_close(bs);
    expect_status(tfs_open_json(ds, "{\"max_sample_edges\": 1000000}", &bs), TFS_OK, NULL, "open_json with max_sample_edges 1000000");
    tfs_sampler_create(bs, bo, &bsp);
    expect_status(tfs_sample(bsp, NULL, train, nseeds, &bsmp), TFS_OK, NULL, "fanouts [3, 2] within a bound of 1000000");
    tfs_sample_free(bsmp);
    tfs_sampler_free(bsp);
    tfs_close(bs);
  }

  /* ---- tfs_upgrade: a current dataset has nothing to upgrade ---- */
  {
    int32_t from = 0;
    expect_status(tfs_upgrade(NULL, NULL, NULL, &from), TFS_EINVAL, "path", "upgrade with path NULL");
    expect_status(tfs_upgrade(scratch, NULL, NULL, &from), TFS_ENOENT, scratch, "upgrade of a directory that is no dataset");
    expect_status(tfs_upgrade(v99, NULL, NULL, &from), TFS_EVERSION, "version", "upgrade of a manifest of format version 99");
    expect_status(tfs_upgrade(ds, NULL, NULL, &from), TFS_OK, NULL, "upgrade of a current dataset");
    expect(from == 9, "... reports the version it had, 9 (got %d)", (int)from);
    expect_status(tfs_upgrade(ds, NULL, NULL, NULL), TFS_OK, NULL, "upgrade with from_version NULL");
  }

  /* ---- synth and ingest options ---- */
  expect_status(tfs_synth(NULL), TFS_EINVAL, "options_json", "synth with options NULL");
  expect_status(tfs_synth("{\"out\": \"/tmp/x\", \"nodez\": 10}"), TFS_EINVAL, "nodez", "synth with an unknown key");
  expect_status(tfs_synth("{\"out\": \"/tmp/x\", \"nodes\": \"ten\"}"), TFS_EINVAL, "nodes", "synth with a string for nodes");
  expect_status(tfs_synth("[1, 2]"), TFS_EINVAL, "JSON object", "synth with a JSON array");
  expect_status(tfs_ingest("{\"edgez\": \"e.npy\"}"), TFS_EINVAL, "edgez", "ingest with an unknown key");
  char json[2048];
  snprintf(json, sizeof json, "{\"edges\": \"/nonexistent/edges.npy\", \"out\": \"%s/out\"}", scratch);
  expect_status(tfs_ingest(json), TFS_ENOENT, "/nonexistent/edges.npy", "ingest of a missing edges file");

  /* Progress: reported per stage, each stage's completion among the reports. */
  struct progress_seen seen = {0};
  snprintf(json, sizeof json, "{\"out\": \"%s/progress\", \"nodes\": 50000, \"avg_degree\": 4, \"dim\": 8}", scratch);
  expect_status(tfs_synth_progress(json, on_progress, &seen), TFS_OK, NULL, "synth with progress");
  expect(seen.calls > 0 && seen.commit_done && seen.backwards == 0,
         "tfs_synth_progress reported %d times, the commit stage completed (%d), never backwards within a stage (%d)",
         seen.calls, seen.commit_done, seen.backwards);
  expect_status(tfs_synth_progress(json, on_progress, &seen), TFS_EINVAL, "already holds a dataset", "synth over a dataset without force");

  /* ---- mount (a FUSE view; where FUSE is missing, TFS_ENOTSUP) ---- */
  char mnt[2048], probe[2200];
  snprintf(mnt, sizeof mnt, "%s/mnt", scratch);
  snprintf(probe, sizeof probe, "%s/stats.json", mnt);
  mkdir(mnt, 0755);
  expect_status(tfs_mount(s, NULL), TFS_EINVAL, "dir", "mount with dir NULL");
  expect_status(tfs_unmount(s), TFS_EINVAL, "not mounted", "unmount of a store that is not mounted");
  tfs_status mst = tfs_mount(s, mnt);
  expect(mst == TFS_OK || mst == TFS_ENOTSUP, "mount answers TFS_OK, or TFS_ENOTSUP where FUSE is missing (got %s%s%s)",
         status_name(mst), mst ? ": " : "", mst ? tfs_last_error() : "");
  if (mst == TFS_OK) {
    expect(access(probe, R_OK) == 0, "the mount shows stats.json");
    expect_status(tfs_mount(s, mnt), TFS_EINVAL, "already mounted", "mount of a store already mounted");
    expect_status(tfs_unmount(s), TFS_OK, NULL, "unmount");
    expect(access(probe, F_OK) != 0, "after tfs_unmount the mount is gone");
  }
  expect_status(tfs_unmount(s), TFS_EINVAL, "not mounted", "unmount twice");

  /* ---- threads ---- */
  shared_store = s;
  shared_nodes = nodes;
  shared_row_bytes = rb;
  int bad_a = 0, bad_b = 0;
  pthread_barrier_init(&barrier, NULL, 2);
  id = -3;
  tfs_gather(s, NULL, NULL, &id, 1, row, rb); /* the main thread's own last error */
  pthread_t ta, tb;
  pthread_create(&ta, NULL, thread_open_missing, &bad_a);
  pthread_create(&tb, NULL, thread_gather_range, &bad_b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_barrier_destroy(&barrier);
  expect(bad_a == 0 && bad_b == 0,
         "two threads failing at once, %d rounds: each sees its own tfs_last_error() (mismatches: %d and %d)", ROUNDS, bad_a,
         bad_b);
  expect(strstr(tfs_last_error(), "= -3 is out of range") != NULL, "the main thread's last error is still its own (%s)",
         tfs_last_error());

  enum { G = 4, NG = 2000 };
  int64_t *gids = malloc(NG * sizeof *gids);
  for (int i = 0; i < NG; i++) gids[i] = (int64_t)(((uint64_t)i * 2654435761u) % (uint64_t)nodes);
  unsigned char *ref = malloc((size_t)(NG * rb));
  expect_status(tfs_gather(s, NULL, NULL, gids, NG, ref, NG * rb), TFS_OK, NULL, "a reference gather");
  struct gather_job jobs[G];
  pthread_t tg[G];
  for (int k = 0; k < G; k++) {
    jobs[k] = (struct gather_job){gids, NG, rb, malloc((size_t)(NG * rb)), TFS_OK};
    pthread_create(&tg[k], NULL, gather_worker, &jobs[k]);
  }
  int gbad = 0;
  for (int k = 0; k < G; k++) {
    pthread_join(tg[k], NULL);
    gbad += jobs[k].st != TFS_OK || memcmp(jobs[k].out, ref, (size_t)(NG * rb)) != 0;
    free(jobs[k].out);
  }
  expect(gbad == 0, "%d threads gathering from one store at once get the reference bytes", G);

  /* ---- tfs_close unmounts ---- */
  if (mst == TFS_OK) {
    tfs_store *m = NULL;
    o = default_opts();
    expect_status(tfs_open(ds, &o, &m), TFS_OK, NULL, "open a second store to mount");
    expect_status(tfs_mount(m, mnt), TFS_OK, NULL, "mount it");
    expect_status(tfs_close(m), TFS_OK, NULL, "close the mounted store");
    expect(access(probe, F_OK) != 0, "tfs_close unmounted it");
  }

  /* ---- closed handles ---- */
  expect_status(tfs_close(s), TFS_OK, NULL, "close");
  id = 0;
  expect_status(tfs_gather(s, NULL, NULL, &id, 1, row, rb), TFS_ECLOSED, "closed", "gather after close");
  expect_status(tfs_store_info_get(s, NULL, &info), TFS_ECLOSED, "closed", "store_info after close");
  expect_status(tfs_split(s, NULL, "train", NULL, 0, &count), TFS_ECLOSED, "closed", "split after close");
  expect_status(tfs_sample(sp, NULL, train, nseeds, &smp), TFS_ECLOSED, "closed", "sample with a sampler of a closed store");
  expect_status(tfs_close(s), TFS_ECLOSED, "closed", "close twice");
  expect_status(tfs_sampler_free(sp), TFS_OK, NULL, "sampler free after its store closed");
  expect_status(tfs_sampler_free(sp), TFS_ECLOSED, "already", "sampler freed twice");

  /* ---- corrupt data ---- */
  o = default_opts();
  tfs_store *c = NULL;
  expect_status(tfs_open(corrupt, &o, &c), TFS_OK, NULL, "open of a dataset with a flipped byte (reads verified by default)");
  if (c != NULL) {
    id = 0;
    expect_status(tfs_gather(c, NULL, NULL, &id, 1, row, rb), TFS_ECORRUPT, "checksum", "gather of the corrupted row");
    tfs_close(c);
  }

  /* ---- a forked child: every call that would enter Go refuses, none hangs ---- */
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    tfs_store *child = NULL;
    tfs_status st = tfs_open(ds, &o, &child);
    int ok = st == TFS_ENOTSUP && child == NULL && strstr(tfs_last_error(), "fork") != NULL &&
             tfs_close((tfs_store *)(uintptr_t)1) == TFS_ENOTSUP;
    _exit(ok ? 0 : 1);
  }
  int wstatus = 0;
  expect(pid > 0 && waitpid(pid, &wstatus, 0) == pid && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0,
         "a forked child's tfs_open and tfs_close return TFS_ENOTSUP naming fork, without entering Go");

  free(row);
  free(gids);
  free(ref);
  printf("errors: %d failed\n", tap_failed);
  return tap_failed != 0;
}
