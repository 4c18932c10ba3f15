/* roundtrip.c — checks the C API against ground truth: writes .npy inputs with known contents
 * (features[v][j] = 64 v + j + 0.25, labels, splits, a known edge list), builds a dataset with
 * tfs_ingest, and compares what tfs_gather, tfs_labels, tfs_split and tfs_sample return with what
 * was written, through several store configurations.
 *
 *   roundtrip WORKDIR                       run the checks (inputs in WORKDIR/in, dataset WORKDIR/ds)
 *   roundtrip --ids N MAXID SEED RAW NPY    write N random ids in [0, MAXID) as raw int64 and .npy
 */
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "tap.h"

enum { N = 1000, D = 37 };

static uint64_t rng_state;
static uint64_t rnd(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* write_npy writes a C-order .npy (format 1.0) of the given shape. */
static int write_npy(const char *path, const char *descr, int ndim, const int64_t *shape, const void *data,
                     size_t bytes) {
  char dict[256], shp[96];
  if (ndim == 1) {
    snprintf(shp, sizeof shp, "(%" PRId64 ",)", shape[0]);
  } else {
    snprintf(shp, sizeof shp, "(%" PRId64 ", %" PRId64 ")", shape[0], shape[1]);
  }
  int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shp);
  int total = 10 + len + 1;
  int pad = (64 - total % 64) % 64;
  FILE *f = fopen(path, "wb");
  if (f == NULL) {
    perror(path);
    return -1;
  }
  unsigned hlen = (unsigned)(len + pad + 1);
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
  fwrite(pre, 1, 10, f);
  fwrite(dict, 1, (size_t)len, f);
  for (int i = 0; i < pad; i++) {
    fputc(' ', f);
  }
  fputc('\n', f);
  if (bytes > 0 && fwrite(data, 1, bytes, f) != bytes) {
    perror(path);
    fclose(f);
    return -1;
  }
  return fclose(f);
}

static int write_ids(int64_t n, int64_t maxid, uint64_t seed, const char *raw, const char *npy) {
  rng_state = seed;
  int64_t *ids = malloc((size_t)n * sizeof *ids);
  for (int64_t i = 0; i < n; i++) {
    ids[i] = (int64_t)(rnd() % (uint64_t)maxid);
  }
  if (n > 3) {
    ids[n - 1] = ids[0]; /* a repeat */
    ids[1] = maxid - 1;  /* the last node */
    ids[2] = 0;
  }
  FILE *f = fopen(raw, "wb");
  if (f == NULL || fwrite(ids, sizeof *ids, (size_t)n, f) != (size_t)n || fclose(f) != 0) {
    perror(raw);
    return 1;
  }
  int rc = write_npy(npy, "<i8", 1, &n, ids, (size_t)n * sizeof *ids) != 0;
  free(ids);
  return rc;
}

static float feature(int64_t v, int j) { return (float)(v * 64 + j) + 0.25f; }
static int64_t label(int64_t v) { return v % 11 == 0 ? -1 : v % 5; }

/* The edge list: v -> v+1, v -> 7v+3, and v -> v/2 for v divisible by 4 (all mod N). */
static int64_t edges_src[3 * N], edges_dst[3 * N];
static int64_t num_edges;
static int64_t indeg[N];

static void make_edges(void) {
  num_edges = 0;
  for (int64_t v = 0; v < N; v++) {
    edges_src[num_edges] = v, edges_dst[num_edges++] = (v + 1) % N;
    edges_src[num_edges] = v, edges_dst[num_edges++] = (7 * v + 3) % N;
    if (v % 4 == 0 && v > 0) {
      edges_src[num_edges] = v, edges_dst[num_edges++] = v / 2;
    }
  }
  for (int64_t e = 0; e < num_edges; e++) {
    indeg[edges_dst[e]]++;
  }
}

static int is_edge(int64_t src, int64_t dst) {
  return (src + 1) % N == dst || (7 * src + 3) % N == dst || (src % 4 == 0 && src > 0 && src / 2 == dst);
}

static int gather_matches(tfs_store *s, const int64_t *ids, int64_t n, const char *what) {
  float *rows = malloc((size_t)n * D * sizeof(float));
  tfs_status st = tfs_gather(s, NULL, NULL, ids, n, rows, n * D * (int64_t)sizeof(float));
  int64_t bad = -1;
  for (int64_t i = 0; st == TFS_OK && i < n && bad < 0; i++) {
    for (int j = 0; j < D; j++) {
      if (rows[i * D + j] != feature(ids[i], j)) {
        bad = i;
        break;
      }
    }
  }
  expect(st == TFS_OK && bad < 0, "%s: %" PRId64 " gathered rows equal the ingested features (status %s%s%s, first bad row %" PRId64 ")",
         what, n, status_name(st), st ? ": " : "", st ? tfs_last_error() : "", bad);
  /* The same rows by name (tfs_gather of feature "x", the one the store serves). */
  float *named = malloc((size_t)n * D * sizeof(float) + 1);
  tfs_status st2 = tfs_gather(s, NULL, "x", ids, n, named, n * D * (int64_t)sizeof(float));
  expect(st2 == TFS_OK && (n == 0 || memcmp(named, rows, (size_t)n * D * sizeof(float)) == 0),
         "%s: tfs_gather(\"x\") gives the same rows (status %s)", what, status_name(st2));
  expect_status(tfs_gather(s, NULL, "nope", ids, n, named, n * D * (int64_t)sizeof(float)), TFS_ENOENT, "nope",
                "tfs_gather of an unknown feature");
  free(named);
  free(rows);
  return st == TFS_OK && bad < 0;
}

/* sample_ok checks a sample's structure against the known graph; returns the nodes for reuse. */
static void check_sample(struct tfs_sample *smp, const int64_t *seeds, int64_t nseeds, const char *what) {
  int64_t nn = 0, ne = 0;
  int32_t nh = 0;
  int64_t nph[17], eph[16];
  expect_status(sample_sizes(smp, &nn, &ne, &nh, nph, eph), TFS_OK, NULL, "tfs_sample_json");
  int64_t *nodes = malloc((size_t)(nn + 1) * 8), *row = malloc((size_t)(ne + 1) * 8), *col = malloc((size_t)(ne + 1) * 8);
  expect_status(tfs_sample_nodes(smp, NULL, nodes), TFS_OK, NULL, "tfs_sample_nodes");
  expect_status(tfs_sample_edges(smp, NULL, row, col, NULL), TFS_OK, NULL, "tfs_sample_edges");
  int ok = nn >= nseeds && memcmp(nodes, seeds, (size_t)nseeds * 8) == 0;
  expect(ok, "%s: the sample's nodes start with the seeds", what);
  int64_t sn = 0, se = 0;
  for (int h = 0; h <= nh; h++) sn += nph[h];
  for (int h = 0; h < nh; h++) se += eph[h];
  expect(sn == nn && se == ne && nph[0] == nseeds, "%s: nodes_per_hop sums to %" PRId64 " nodes, edges_per_hop to %" PRId64 " edges", what, sn, se);
  int64_t bad = -1;
  for (int64_t e = 0; e < ne && bad < 0; e++) {
    if (row[e] < 0 || row[e] >= nn || col[e] < 0 || col[e] >= nn || !is_edge(nodes[row[e]], nodes[col[e]])) {
      bad = e;
    }
  }
  expect(bad < 0, "%s: every sampled edge (row, col) is an edge nodes[row] -> nodes[col] of the graph (first bad %" PRId64 ")", what, bad);
  /* Edge ids: one per sampled edge; two edges with one id are one graph edge (same ends). */
  int64_t *eid = malloc((size_t)(ne + 1) * 8);
  expect_status(tfs_sample_edges(smp, "", row, col, eid), TFS_OK, NULL, "tfs_sample_edges with edge ids");
  bad = -1;
  for (int64_t e = 0; e < ne && bad < 0; e++) {
    if (eid[e] < 0) bad = e;
    for (int64_t f = e + 1; f < ne && f < e + 64 && bad < 0; f++) {
      if (eid[f] == eid[e] && (nodes[row[f]] != nodes[row[e]] || nodes[col[f]] != nodes[col[e]])) bad = f;
    }
  }
  expect(bad < 0, "%s: edge ids are >= 0 and name one (src, dst) each (first bad %" PRId64 ")", what, bad);
  if (ne > 0) expect_status(tfs_sample_edges(smp, NULL, NULL, col, eid), TFS_EINVAL, "row", "tfs_sample_edges(row NULL)");
  free(eid);
  free(nodes), free(row), free(col);
}

static struct tfs_sample *draw(tfs_store *s, const int32_t *fanouts, int32_t hops, uint64_t seed, const int64_t *seeds,
                               int64_t n) {
  char so[256];
  int k = snprintf(so, sizeof so, "{\"seed\": %" PRIu64 ", \"fanouts\": [", seed);
  for (int32_t h = 0; h < hops; h++) {
    k += snprintf(so + k, sizeof so - (size_t)k, "%s%d", h ? ", " : "", (int)fanouts[h]);
  }
  snprintf(so + k, sizeof so - (size_t)k, "]}");
  tfs_sampler *sp = NULL;
  struct tfs_sample *smp = NULL;
  expect_status(tfs_sampler_create(s, so, &sp), TFS_OK, NULL, "tfs_sampler_create");
  expect_status(tfs_sample(sp, NULL, seeds, n, &smp), TFS_OK, NULL, "tfs_sample");
  tfs_sampler_free(sp);
  return smp;
}

/* same_sample compares two samples array by array. */
static int same_sample(struct tfs_sample *a, struct tfs_sample *b) {
  int64_t na, ea, nb, eb;
  int32_t ha, hb;
  if (sample_sizes(a, &na, &ea, &ha, NULL, NULL) || sample_sizes(b, &nb, &eb, &hb, NULL, NULL) || na != nb || ea != eb ||
      ha != hb) {
    return 0;
  }
  int64_t *x = malloc((size_t)(2 * na + 4 * ea + 1) * 8);
  int64_t *y = malloc((size_t)(2 * na + 4 * ea + 1) * 8);
  tfs_sample_nodes(a, NULL, x);
  tfs_sample_edges(a, NULL, x + na, x + na + ea, NULL);
  tfs_sample_nodes(b, NULL, y);
  tfs_sample_edges(b, NULL, y + na, y + na + ea, NULL);
  int same = memcmp(x, y, (size_t)(na + 2 * ea) * 8) == 0;
  free(x), free(y);
  return same;
}

int main(int argc, char **argv) {
  if (argc == 7 && strcmp(argv[1], "--ids") == 0) {
    return write_ids(strtoll(argv[2], NULL, 10), strtoll(argv[3], NULL, 10), strtoull(argv[4], NULL, 10), argv[5], argv[6]);
  }
  if (argc != 2) {
    fprintf(stderr, "usage: roundtrip WORKDIR | roundtrip --ids N MAXID SEED RAW NPY\n");
    return 2;
  }
  if (strlen(argv[1]) > 1000) {
    fprintf(stderr, "roundtrip: WORKDIR path too long\n");
    return 2;
  }
  char in[1100], path[1200], ds[1100], json[8192];
  snprintf(in, sizeof in, "%s/in", argv[1]);
  snprintf(ds, sizeof ds, "%s/ds", argv[1]);
  mkdir(argv[1], 0755);
  mkdir(in, 0755);
  snprintf(path, sizeof path, "%s/splits", in);
  mkdir(path, 0755);

  /* Inputs. */
  static float feats[N * D];
  static int64_t labels[N], train[N], pairs[2 * 3 * N];
  static unsigned char valmask[N];
  int64_t ntrain = 0;
  for (int64_t v = 0; v < N; v++) {
    for (int j = 0; j < D; j++) feats[v * D + j] = feature(v, j);
    labels[v] = label(v);
    if (v % 3 == 0) train[ntrain++] = v;
    valmask[v] = v % 3 == 1;
  }
  make_edges();
  memcpy(pairs, edges_src, (size_t)num_edges * 8);
  memcpy(pairs + num_edges, edges_dst, (size_t)num_edges * 8);
  int64_t fshape[2] = {N, D}, eshape[2] = {2, num_edges}, nshape = N;
  int werr = 0;
  snprintf(path, sizeof path, "%s/features.npy", in);
  werr |= write_npy(path, "<f4", 2, fshape, feats, sizeof feats);
  snprintf(path, sizeof path, "%s/edges.npy", in);
  werr |= write_npy(path, "<i8", 2, eshape, pairs, (size_t)(2 * num_edges) * 8);
  snprintf(path, sizeof path, "%s/labels.npy", in);
  werr |= write_npy(path, "<i8", 1, &nshape, labels, sizeof labels);
  snprintf(path, sizeof path, "%s/splits/train.npy", in);
  werr |= write_npy(path, "<i8", 1, &ntrain, train, (size_t)ntrain * 8);
  snprintf(path, sizeof path, "%s/splits/val.npy", in);
  werr |= write_npy(path, "|b1", 1, &nshape, valmask, sizeof valmask);
  if (werr) {
    fprintf(stderr, "roundtrip: could not write the inputs\n");
    return 1;
  }

  snprintf(json, sizeof json,
           "{\"edges\": \"%s/edges.npy\", \"features\": \"%s/features.npy\", \"labels\": \"%s/labels.npy\", "
           "\"splits\": \"%s/splits\", \"out\": \"%s\"}",
           in, in, in, in, ds);
  expect_status(tfs_ingest(json), TFS_OK, NULL, "tfs_ingest of known .npy inputs");

  tfs_store *s = NULL;
  expect_status(tfs_open(ds, NULL, &s), TFS_OK, NULL, "tfs_open of the ingested dataset (opts NULL)");
  if (s == NULL) return 1;
  tfs_store_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  expect_status(tfs_store_info_get(s, NULL, &info), TFS_OK, NULL, "tfs_store_info_get");
  expect(info.num_nodes == N && info.num_edges == num_edges && info.dim == D && info.row_bytes == D * 4 &&
             info.num_classes == 5 && strcmp(info.dtype, "float32") == 0,
         "store info: %" PRId64 " nodes, %" PRId64 " edges, dim %" PRId64 ", %" PRId64 " bytes/row, %" PRId64 " classes, %s",
         info.num_nodes, info.num_edges, info.dim, info.row_bytes, info.num_classes, info.dtype);

  /* Gathers: random ids with repeats, through several store configurations. */
  enum { M = 3000 };
  static int64_t ids[M];
  rng_state = 99;
  for (int i = 0; i < M; i++) ids[i] = (int64_t)(rnd() % N);
  ids[7] = ids[8] = N - 1;
  gather_matches(s, ids, M, "no host cache");
  gather_matches(s, ids, 1, "a single row");
  expect_status(tfs_gather(s, NULL, NULL, NULL, 0, NULL, 0), TFS_OK, NULL, "tfs_gather of 0 ids (NULL buffers)");

  /* Labels and splits. */
  static int64_t got[M];
  expect_status(tfs_labels(s, NULL, ids, M, got), TFS_OK, NULL, "tfs_labels");
  int lbad = -1;
  for (int i = 0; i < M && lbad < 0; i++) if (got[i] != label(ids[i])) lbad = i;
  expect(lbad < 0, "labels equal the ingested ones, -1 where unlabelled (first bad %d)", lbad);
  static int64_t split[N];
  int64_t count = -1;
  expect_status(tfs_split(s, NULL, "train", NULL, 0, &count), TFS_OK, NULL, "tfs_split size query");
  expect(count == ntrain, "train split has %" PRId64 " ids (want %" PRId64 ")", count, ntrain);
  expect_status(tfs_split(s, NULL, "train", split, N, &count), TFS_OK, NULL, "tfs_split train");
  expect(count == ntrain && memcmp(split, train, (size_t)ntrain * 8) == 0, "train ids equal the ingested ids");
  int64_t part[5] = {-7, -7, -7, -7, -7};
  expect_status(tfs_split(s, NULL, "train", part, 4, &count), TFS_OK, NULL, "tfs_split with cap 4 < count");
  expect(count == ntrain && memcmp(part, train, 32) == 0 && part[4] == -7, "cap 4 copies exactly the first 4 ids and reports the full count");
  expect_status(tfs_split(s, NULL, "val", split, N, &count), TFS_OK, NULL, "tfs_split val (ingested from a bool mask)");
  int vbad = count != (N + 1) / 3;
  for (int64_t i = 0; !vbad && i < count; i++) vbad = split[i] != 3 * i + 1;
  expect(!vbad, "val ids are the mask's true positions (%" PRId64 " ids)", count);
  expect_status(tfs_split(s, NULL, "test", split, N, &count), TFS_ENOENT, "test", "tfs_split of a split the dataset lacks");

  /* Sampling. */
  int32_t f32[2] = {3, 2};
  struct tfs_sample *a = draw(s, f32, 2, 5, train, 64);
  check_sample(a, train, 64, "fanouts 3,2");
  int32_t all[1] = {-1};
  struct tfs_sample *b = draw(s, all, 1, 5, train, 64);
  check_sample(b, train, 64, "fanout -1");
  int64_t nn, ne;
  int32_t nh;
  sample_sizes(b, &nn, &ne, &nh, NULL, NULL);
  int64_t *row = malloc((size_t)(ne + 1) * 8), *col = malloc((size_t)(ne + 1) * 8);
  tfs_sample_edges(b, NULL, row, col, NULL);
  int dbad = -1;
  for (int i = 0; i < 64 && dbad < 0; i++) {
    int64_t c = 0;
    for (int64_t e = 0; e < ne; e++) c += col[e] == i;
    if (c != indeg[train[i]]) dbad = i;
  }
  expect(dbad < 0, "fanout -1 takes every in-neighbor: each seed has in-degree many edges (first bad seed %d)", dbad);
  free(row), free(col);
  tfs_sample_free(b);

  /* The same draws with the topology on disk (read through the IO stacks) are identical. */
  tfs_open_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.topology_memory_bytes = -1;
  o.io_backend = "pread";
  tfs_store *disk = NULL;
  expect_status(tfs_open(ds, &o, &disk), TFS_OK, NULL, "tfs_open with the topology on disk, pread");
  struct tfs_sample *c = draw(disk, f32, 2, 5, train, 64);
  expect(same_sample(a, c), "a sample from the on-disk topology equals the in-memory one (same seed)");
  tfs_sample_free(c);
  tfs_sample_free(a);
  gather_matches(disk, ids, M, "pread backend");
  tfs_close(disk);

  /* Host tier: everything cached, then placements by hotness and by degree. */
  o.topology_memory_bytes = 0;
  o.io_backend = NULL;
  o.host_cache_bytes = 1 << 30;
  o.unverified_reads = 0; /* the default: blocks read from disk are checked */
  tfs_store *cached = NULL;
  expect_status(tfs_open(ds, &o, &cached), TFS_OK, NULL, "tfs_open with a host tier holding every row, verified reads");
  gather_matches(cached, ids, M, "full host tier");
  size_t needed = 0;
  char stats[8192];
  expect_status(tfs_stats_json(cached, stats, sizeof stats, &needed), TFS_OK, NULL, "tfs_stats_json");
  expect(needed <= sizeof stats && strstr(stats, "\"tier\":\"host\",\"rows_held\":1000") != NULL,
         "stats show the host tier holding all 1000 rows");
  tfs_close(cached);

  o.host_cache_bytes = 100 * 1024; /* some of the rows */
  o.unverified_reads = 1;
  expect_status(tfs_open(ds, &o, &cached), TFS_OK, NULL, "tfs_open with a partial host tier, unverified reads");
  gather_matches(cached, ids, M, "partial host tier (by in-degree)");
  static uint32_t hot[N];
  for (int v = 0; v < N; v++) hot[v] = (uint32_t)v;
  expect_status(tfs_place(cached, NULL, hot, N), TFS_OK, NULL, "tfs_place by hotness");
  gather_matches(cached, ids, M, "partial host tier (by hotness)");
  expect_status(tfs_place(cached, NULL, hot, N - 1), TFS_EINVAL, "hotness", "tfs_place with n != num_nodes");
  expect_status(tfs_place(cached, NULL, NULL, 0), TFS_OK, NULL, "tfs_place(NULL) ranks by in-degree");
  gather_matches(cached, ids, M, "after tfs_place(NULL)");
  static int64_t hottest[N];
  int64_t nhot = -1;
  expect_status(tfs_hottest(cached, NULL, hot, N, 5, hottest, &nhot), TFS_OK, NULL, "tfs_hottest by hotness");
  expect(nhot == 5 && hottest[0] == N - 1 && hottest[4] == N - 5, "tfs_hottest ranks the 5 hottest, hottest first");
  expect_status(tfs_hottest(cached, NULL, hot, N - 1, 5, hottest, &nhot), TFS_EINVAL, "hotness", "tfs_hottest with n != num_nodes");
  expect_status(tfs_hottest(cached, NULL, NULL, 0, -1, hottest, &nhot), TFS_EINVAL, "k = -1", "tfs_hottest with a negative k");
  expect_status(tfs_hottest(cached, NULL, NULL, 0, 3, hottest, &nhot), TFS_OK, NULL, "tfs_hottest(NULL) by in-degree");
  expect(nhot == 3, "tfs_hottest(NULL) gives k ids");
  int64_t own[3] = {7, 3, 11};
  expect_status(tfs_place_ids(cached, NULL, own, 3), TFS_OK, NULL, "tfs_place_ids");
  gather_matches(cached, ids, M, "after tfs_place_ids");
  int64_t twice[2] = {7, 7};
  expect_status(tfs_place_ids(cached, NULL, twice, 2), TFS_EINVAL, "appears twice", "tfs_place_ids with a repeated id");
  int64_t far[1] = {N};
  expect_status(tfs_place_ids(cached, NULL, far, 1), TFS_ERANGE, "out of range", "tfs_place_ids with an id out of range");
  tfs_close(cached);

  expect_status(tfs_close(s), TFS_OK, NULL, "tfs_close");
  printf("roundtrip: %d failed\n", tap_failed);
  return tap_failed != 0;
}
