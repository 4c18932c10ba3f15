/* example.c — the tierfs C API end to end: open a dataset, read the train split, sample a 2-hop
 * neighborhood of a batch of seeds, gather the features of every sampled node, fetch the seeds'
 * labels.
 *
 *   example [--host-cache BYTES] [--unverified] [--pread] [DATASET [IDS OUT]]
 *       IDS: a file of raw int64 node ids; the feature rows of those ids are written to OUT, raw.
 *       Without DATASET: a small synthetic dataset, written once to ./tierfs-examples/c-synth.
 *   example --synth DIR NODES DIM [DTYPE]
 *       writes a small synthetic dataset to DIR with tfs_synth.
 *
 * Build, after `make install` (or with `python -m tierfs --cflags --libs` for the wheel's copies):
 *   cc -Wall -O2 example.c $(pkg-config --cflags --libs tierfs) -o example
 * or against a checkout's `make lib`: cc -Wall -O2 -I build example.c -L build -ltierfs -Wl,-rpath,build
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierfs.h"

#define DEFAULT_DATASET "tierfs-examples/c-synth"

/* check exits with the library's message when a call fails. */
static void check(tfs_status st, const char *what) {
  if (st != TFS_OK) {
    fprintf(stderr, "example: %s failed (status %d): %s\n", what, (int)st, tfs_last_error());
    exit(1);
  }
}

/* per_hop reads the counts of the first list after key in a sample's tfs_sample_json (a graph of
 * one type: its one node type's or edge type's) into out, at most cap; returns how many. */
static int per_hop(const char *json, const char *key, int64_t *out, int cap) {
  const char *p = strstr(json, key);
  p = p ? strchr(p, '[') : NULL;
  int n = 0;
  while (p != NULL && *p != ']' && n < cap) {
    char *end;
    long long v = strtoll(p + 1, &end, 10);
    if (end == p + 1) break;
    out[n++] = v;
    p = end;
  }
  return n;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n > 0 ? n : 1);
  if (p == NULL) {
    fprintf(stderr, "example: out of memory (%zu bytes)\n", n);
    exit(1);
  }
  return p;
}

static int synth(const char *dir, const char *nodes, const char *dim, const char *dtype) {
  char json[4096];
  int n = snprintf(json, sizeof json,
                   "{\"out\": \"%s\", \"nodes\": %s, \"avg_degree\": 8, \"dim\": %s, \"dtype\": \"%s\", "
                   "\"classes\": 10, \"seed\": 7}",
                   dir, nodes, dim, dtype);
  if (n < 0 || (size_t)n >= sizeof json) {
    fprintf(stderr, "example: options too long\n");
    return 1;
  }
  check(tfs_synth(json), "tfs_synth");
  printf("synthesized %s nodes of dim %s (%s) into %s\n", nodes, dim, dtype, dir);
  return 0;
}

/* gather_file gathers the rows of the ids in ids_path and writes them to out_path. */
static void gather_file(tfs_store *store, int64_t row_bytes, const char *ids_path, const char *out_path) {
  FILE *f = fopen(ids_path, "rb");
  if (f == NULL) {
    perror(ids_path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  int64_t n = size / (long)sizeof(int64_t);
  int64_t *ids = xmalloc((size_t)n * sizeof *ids);
  if (fread(ids, sizeof *ids, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "example: short read of %s\n", ids_path);
    exit(1);
  }
  fclose(f);
  void *rows = xmalloc((size_t)(n * row_bytes));
  check(tfs_gather(store, NULL, NULL, ids, n, rows, n * row_bytes), "tfs_gather of the ids file");
  FILE *out = fopen(out_path, "wb");
  if (out == NULL || fwrite(rows, (size_t)row_bytes, (size_t)n, out) != (size_t)n || fclose(out) != 0) {
    perror(out_path);
    exit(1);
  }
  printf("gathered %" PRId64 " rows of %s into %s\n", n, ids_path, out_path);
  free(ids);
  free(rows);
}

int main(int argc, char **argv) {
  if (argc >= 5 && strcmp(argv[1], "--synth") == 0) {
    return synth(argv[2], argv[3], argv[4], argc >= 6 ? argv[5] : "float32");
  }
  tfs_open_options opts;
  memset(&opts, 0, sizeof opts);
  opts.struct_size = sizeof opts;
  opts.device = -1;
  int i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    if (strcmp(argv[i], "--host-cache") == 0 && i + 1 < argc) {
      opts.host_cache_bytes = strtoll(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--unverified") == 0) {
      opts.unverified_reads = 1;
    } else if (strcmp(argv[i], "--pread") == 0) {
      opts.io_backend = "pread";
    } else {
      fprintf(stderr, "example: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  const char *dataset = DEFAULT_DATASET;
  if (argc - i == 0) {
    /* No dataset named: a small synthetic one under the working directory, written once. */
    FILE *manifest = fopen(DEFAULT_DATASET "/manifest.json", "r");
    if (manifest != NULL) {
      fclose(manifest);
    } else if (synth(DEFAULT_DATASET, "5000", "64", "float32") != 0) {
      return 1;
    }
  } else if (argc - i != 1 && argc - i != 3) {
    fprintf(stderr, "usage: example [--host-cache BYTES] [--unverified] [--pread] [DATASET [IDS OUT]]\n"
                    "       example --synth DIR NODES DIM [DTYPE]\n"
                    "Without DATASET: " DEFAULT_DATASET " (a synthetic graph, written once)\n");
    return 2;
  } else {
    dataset = argv[i];
  }
  if (tfs_abi_version() != TFS_ABI_VERSION) {
    fprintf(stderr, "example: built for ABI %d, library has %d\n", TFS_ABI_VERSION, tfs_abi_version());
    return 1;
  }

  tfs_store *store = NULL;
  check(tfs_open(dataset, &opts, &store), "tfs_open");
  tfs_store_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  check(tfs_store_info_get(store, NULL, &info), "tfs_store_info_get");
  printf("dataset %s: %" PRId64 " nodes, %" PRId64 " edges, features %" PRId64 " x %s (%" PRId64
         " bytes/row), %" PRId64 " classes, io %s\n",
         dataset, info.num_nodes, info.num_edges, info.dim, info.dtype, info.row_bytes, info.num_classes,
         info.io_backend);

  if (argc - i == 3) {
    gather_file(store, info.row_bytes, argv[i + 1], argv[i + 2]);
    check(tfs_close(store), "tfs_close");
    return 0;
  }

  /* The train split: ask its size, then copy it. */
  int64_t ntrain = 0;
  check(tfs_split(store, NULL, "train", NULL, 0, &ntrain), "tfs_split (size)");
  int64_t *train = xmalloc((size_t)ntrain * sizeof *train);
  check(tfs_split(store, NULL, "train", train, ntrain, &ntrain), "tfs_split");
  int64_t nseeds = ntrain < 64 ? ntrain : 64;
  printf("train split: %" PRId64 " nodes; seeding with the first %" PRId64 "\n", ntrain, nseeds);

  /* Two hops, 10 then 5 neighbors (a list: the graph's one edge type). */
  tfs_sampler *sampler = NULL;
  check(tfs_sampler_create(store, "{\"fanouts\": [10, 5], \"seed\": 42}", &sampler), "tfs_sampler_create");
  struct tfs_sample *sample = NULL;
  check(tfs_sample(sampler, NULL, train, nseeds, &sample), "tfs_sample"); /* NULL: the only node type */
  /* The sizes per type and hop, as JSON; one type here. */
  char sizes[1024];
  size_t sneed = 0;
  check(tfs_sample_json(sample, sizes, sizeof sizes, &sneed), "tfs_sample_json");
  int64_t nodes_per_hop[8] = {0}, edges_per_hop[8] = {0}, nnodes = 0, nedges = 0;
  int nhops = per_hop(sizes, "\"nodes_per_hop\"", nodes_per_hop, 8) - 1;
  per_hop(sizes, "\"edges_per_hop\"", edges_per_hop, 8);
  for (int h = 0; h <= nhops; h++) {
    nnodes += nodes_per_hop[h];
    nedges += h < nhops ? edges_per_hop[h] : 0;
  }
  int64_t *nodes = xmalloc((size_t)nnodes * sizeof *nodes);
  check(tfs_sample_nodes(sample, NULL, nodes), "tfs_sample_nodes");
  printf("sample: %" PRId64 " nodes, %" PRId64 " edges over %d hops; nodes per hop:", nnodes, nedges, nhops);
  for (int h = 0; h <= nhops; h++) {
    printf(" %" PRId64, nodes_per_hop[h]);
  }
  printf("\n");

  /* Features of every sampled node, straight into our buffer. */
  size_t bytes = (size_t)(nnodes * info.row_bytes);
  unsigned char *feats = xmalloc(bytes);
  check(tfs_gather(store, NULL, NULL, nodes, nnodes, feats, (int64_t)bytes), "tfs_gather");
  uint64_t sum = 0;
  for (size_t b = 0; b < bytes; b++) {
    sum = sum * 31 + feats[b];
  }
  printf("gathered %" PRId64 " rows (%zu bytes), byte hash %016" PRIx64 "\n", nnodes, bytes, sum);

  /* Labels of the seeds. */
  if (info.num_classes > 0) {
    int64_t *labels = xmalloc((size_t)nseeds * sizeof *labels);
    check(tfs_labels(store, NULL, nodes, nseeds, labels), "tfs_labels");
    printf("labels of the first seeds:");
    for (int64_t s = 0; s < nseeds && s < 8; s++) {
      printf(" %" PRId64, labels[s]);
    }
    printf("\n");
    free(labels);
  }

  size_t needed = 0;
  check(tfs_stats_json(store, NULL, 0, &needed), "tfs_stats_json (size)");
  char *stats = xmalloc(needed);
  check(tfs_stats_json(store, stats, needed, &needed), "tfs_stats_json");
  printf("stats: %.160s%s\n", stats, strlen(stats) > 160 ? "..." : "");

  free(stats);
  free(feats);
  free(nodes);
  free(train);
  check(tfs_sample_free(sample), "tfs_sample_free");
  check(tfs_sampler_free(sampler), "tfs_sampler_free");
  check(tfs_close(store), "tfs_close");
  return 0;
}
