/* embedding.c — the embedding tables of tierfs_embedding.h from C: SGD steps on random batches
 * with repeated ids checked bit for bit against a plain reference (fmaf: torch's axpy), with a
 * cache of two pages so rows are evicted between steps; checkpoint, close, reopen; whole slots;
 * the error paths.
 *
 *   embedding WORK_DIR [SEED]
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <time.h>

#include "tap.h"

enum { ROWS = 3000, DIM = 12, STEPS = 25, BATCH = 64 };

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static float unit(uint64_t *s) { return (float)((double)(splitmix(s) >> 11) / 9007199254740992.0 * 2 - 1); }

static float ref[ROWS * DIM], got[ROWS * DIM];
static int64_t all[ROWS];

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s WORK_DIR [SEED]\n", argv[0]);
    return 2;
  }
  uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : (uint64_t)time(NULL);
  printf("# seed %" PRIu64 "\n", seed);
  char path[4096], other[4096];
  snprintf(path, sizeof path, "%s/table", argv[1]);
  snprintf(other, sizeof other, "%s/other", argv[1]);
  const float lr = 0.37f;

  expect_status(tfs_table_create(NULL, "user", path,
                                 "{\"rows\": 3000, \"dim\": 12, \"optimizer\": {\"name\": \"sgd\", \"lr\": 0.37},"
                                 " \"init\": {\"kind\": \"uniform\", \"a\": -1, \"b\": 1, \"seed\": 5}}"),
                TFS_OK, NULL, "tfs_table_create an sgd table of 3000 x 12");
  tfs_table *t = NULL;
  expect_status(tfs_table_open(path, "{\"host_cache_bytes\": 8192}", &t), TFS_OK, NULL, "tfs_table_open, a cache of 2 pages");
  if (t == NULL) {
    return 1;
  }
  for (int64_t i = 0; i < ROWS; i++) {
    all[i] = i;
  }
  expect_status(tfs_table_gather(t, all, ROWS, ref, ROWS * DIM), TFS_OK, NULL, "gather every row");

  uint64_t s = seed;
  int64_t ids[BATCH];
  float grads[BATCH * DIM];
  tfs_status st = TFS_OK;
  for (int step = 0; step < STEPS && st == TFS_OK; step++) {
    for (int i = 0; i < BATCH; i++) {
      ids[i] = (int64_t)(splitmix(&s) % 200) * 15; /* repeats, spread over pages */
      for (int j = 0; j < DIM; j++) {
        grads[i * DIM + j] = unit(&s);
      }
    }
    st = tfs_table_apply(t, ids, BATCH, grads, BATCH * DIM);
    for (int i = 0; i < BATCH; i++) { /* in input order: torch's SGD on an uncoalesced gradient */
      for (int j = 0; j < DIM; j++) {
        float *w = &ref[ids[i] * DIM + j];
        *w = fmaf(-lr, grads[i * DIM + j], *w);
      }
    }
    if (step == STEPS / 2 && st == TFS_OK) {
      st = tfs_table_checkpoint(t);
      if (st == TFS_OK) {
        st = tfs_table_close(t);
      }
      if (st == TFS_OK) {
        st = tfs_table_open(path, "{\"host_cache_bytes\": 8192}", &t);
      }
    }
  }
  expect_status(st, TFS_OK, NULL, "25 sgd steps with a checkpoint and reopen half way");
  expect_status(tfs_table_gather(t, all, ROWS, got, ROWS * DIM), TFS_OK, NULL, "gather every row after");
  expect(memcmp(got, ref, sizeof ref) == 0, "every row equals the fmaf reference bit for bit");

  char json[2048];
  size_t needed = 0;
  expect_status(tfs_table_info_json(t, json, sizeof json, &needed), TFS_OK, NULL, "tfs_table_info_json");
  expect(strstr(json, "\"step\":25") != NULL && strstr(json, "\"generation\":2") != NULL &&
             strstr(json, "\"node_type\":\"user\"") != NULL,
         "info: step 25, generation 2, node type user (%s)", json);
  expect_status(tfs_table_stats_json(t, json, sizeof json, &needed), TFS_OK, NULL, "tfs_table_stats_json");
  expect(strstr(json, "\"cache_pages\":2") != NULL && strstr(json, "\"evictions\":0") == NULL,
         "stats: 2 cache pages, rows evicted (%s)", json);

  expect_status(tfs_table_checkpoint(t), TFS_OK, NULL, "a second checkpoint");

  /* Whole slots of an sgd table are its rows. */
  float slot[DIM];
  int64_t one = 15;
  expect_status(tfs_table_read_slots(t, &one, 1, slot, DIM), TFS_OK, NULL, "tfs_table_read_slots");
  expect(memcmp(slot, &ref[15 * DIM], sizeof slot) == 0, "the slot of row 15 is its row");
  slot[0] = 42;
  expect_status(tfs_table_write_slots(t, &one, 1, slot, DIM, 25), TFS_OK, NULL, "tfs_table_write_slots");
  expect_status(tfs_table_write(t, &one, 1, slot, DIM), TFS_OK, NULL, "tfs_table_write");

  /* Errors. */
  int64_t bad[2] = {1, ROWS};
  expect_status(tfs_table_gather(t, bad, 2, got, 2 * DIM), TFS_ERANGE, "ids[1] = 3000 is out of range", "gather of an id out of range");
  expect_status(tfs_table_apply(t, bad, 1, grads, DIM - 1), TFS_EINVAL, "want 1 ids", "apply with grads of the wrong length");
  expect_status(tfs_table_gather(t, bad, 1, NULL, DIM), TFS_EINVAL, "NULL", "gather into NULL");
  tfs_table *t2 = NULL;
  expect_status(tfs_table_open(path, NULL, &t2), TFS_EINVAL, "open elsewhere", "a second open of a table");
  expect_status(tfs_table_open(path, "{\"host_cache\": 1}", &t2), TFS_EINVAL, "host_cache", "an unknown option");
  expect_status(tfs_table_create(NULL, NULL, other, "{\"rows\": 5, \"dim\": 4, \"dtype\": \"float16\", \"optimizer\": {\"name\": \"sgd\"}}"),
                TFS_EINVAL, "float16", "a dtype other than float32");
  expect_status(tfs_table_create(NULL, NULL, other, "{\"rows\": 5, \"dim\": 4, \"optimizer\": {\"name\": \"adam\", \"momentum\": 1}}"),
                TFS_EINVAL, "momentum", "an unknown hyper-parameter");
  expect_status(tfs_table_create(NULL, NULL, other, "{\"rows\": 5, \"dim\": 4, \"optimizer\": {\"name\": \"adam\"}}"), TFS_OK, NULL,
                "an adam table");
  tfs_table *ta = NULL;
  expect_status(tfs_table_open(other, NULL, &ta), TFS_OK, NULL, "open it");
  int64_t dup[3] = {2, 0, 2};
  expect_status(tfs_table_apply(ta, dup, 3, grads, 3 * 4), TFS_EINVAL, "are both 2", "adam refuses a repeated id (coalesce first)");
  expect_status(tfs_table_close(ta), TFS_OK, NULL, "close the adam table");

  expect_status(tfs_table_close(t), TFS_OK, NULL, "tfs_table_close");
  expect_status(tfs_table_close(t), TFS_ECLOSED, NULL, "a second close");
  expect_status(tfs_table_open(path, NULL, &t), TFS_OK, NULL, "reopen");
  expect_status(tfs_table_read_slots(t, &one, 1, slot, DIM), TFS_OK, NULL, "read row 15");
  expect(slot[0] == ref[15 * DIM], "close without a checkpoint dropped the writes");
  expect_status(tfs_table_close(t), TFS_OK, NULL, "close");
  return tap_failed;
}
