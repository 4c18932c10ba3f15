// The public symbols of libtierfs: thin C wrappers around the Go exports (tfsgo_*), plus the
// thread-local last error.
//
// Why wrappers: handles are runtime/cgo.Handle integers, and a small integer must never sit in a
// Go pointer-typed variable (the Go stack copier rejects pointer values below 4096). So the Go side
// sees handles only as uintptr_t, and the cast to and from the opaque tfs_* pointer types happens
// here, in C. The wrappers also carry the const qualifiers of tierfs.h, which cgo's generated
// prototypes cannot express.
//
// The error message lives in C thread-local storage: a goroutine may move between OS threads, but
// a Go export runs on the calling C thread for its whole call, so the tfs_set_error it calls writes
// the caller's slot. A pthread key with a destructor frees a thread's message when it exits.

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierfs.h"
#include "_cgo_export.h"

static __thread char *tfs_err;

// Out-of-memory fallback: a static message, never freed.
static char tfs_err_nomem[] = "tierfs: out of memory while recording an error message";

static pthread_key_t tfs_err_key;
static pthread_once_t tfs_err_once = PTHREAD_ONCE_INIT;
static int tfs_err_key_ok;

static void tfs_err_free(void *m) {
  if (m != NULL && m != tfs_err_nomem) {
    free(m);
  }
}

// Runs on the exiting thread itself, so it can clear that thread's slot too.
static void tfs_err_at_exit(void *m) {
  tfs_err_free(m);
  tfs_err = NULL;
}

static void tfs_err_key_init(void) { tfs_err_key_ok = pthread_key_create(&tfs_err_key, tfs_err_at_exit) == 0; }

__attribute__((visibility("hidden"))) void tfs_set_error(const char *msg, size_t n) {
  char *m = malloc(n + 1);
  tfs_err_free(tfs_err);
  tfs_err = m != NULL ? m : tfs_err_nomem;
  if (m != NULL) {
    if (n > 0) {
      memcpy(m, msg, n);
    }
    m[n] = '\0';
  }
  pthread_once(&tfs_err_once, tfs_err_key_init);
  if (tfs_err_key_ok) {
    pthread_setspecific(tfs_err_key, tfs_err); // freed when the thread exits
  }
}

// Fork guard: the Go runtime does not survive fork(), so a call in a child process made after the
// library was loaded would hang or crash inside Go. A pthread_atfork handler marks the child, and
// every call that would enter Go returns TFS_ENOTSUP with a message instead.
static volatile int tfs_forked;

static void tfs_mark_child(void) { tfs_forked = 1; }

__attribute__((constructor)) static void tfs_fork_guard_init(void) { pthread_atfork(NULL, NULL, tfs_mark_child); }

static tfs_status tfs_forked_error(void) {
  static const char msg[] =
      "tierfs: this process was forked after libtierfs (a Go runtime) was loaded; the runtime does "
      "not survive fork(). Load the library in the child (exec, or Python's 'spawn' start method)";
  tfs_set_error(msg, sizeof msg - 1);
  return TFS_ENOTSUP;
}

#define FORK_GUARD()                \
  do {                              \
    if (tfs_forked) {               \
      return tfs_forked_error();    \
    }                               \
  } while (0)

const char *tfs_last_error(void) { return tfs_err != NULL ? tfs_err : ""; }

int tfs_abi_version(void) { return TFS_ABI_VERSION; }

#define H(p) ((uintptr_t)(p))

/* NEW_HANDLE(type, call) is the body of a call that makes a handle into *out: *out is NULL
 * unless call, which gets the new handle's address as &h, succeeds; then *out is the handle. */
#define NEW_HANDLE(type, call)          \
  do {                                  \
    uintptr_t h = 0;                    \
    if (out != NULL) {                  \
      *out = NULL;                      \
    }                                   \
    FORK_GUARD();                       \
    tfs_status st = (tfs_status)(call); \
    if (st == TFS_OK) {                 \
      *out = (type *)h;                 \
    }                                   \
    return st;                          \
  } while (0)

tfs_status tfs_open(const char *path, const tfs_open_options *opts, tfs_store **out) {
  NEW_HANDLE(tfs_store, tfsgo_open((char *)path, (tfs_open_options *)opts, (void *)out, &h));
}

tfs_status tfs_open_json(const char *path, const char *options_json, tfs_store **out) {
  NEW_HANDLE(tfs_store, tfsgo_open_json((char *)path, (char *)options_json, (void *)out, &h));
}

tfs_status tfs_options_json(const char *family, char *buf, size_t cap, size_t *needed) {
  FORK_GUARD();
  return (tfs_status)tfsgo_options_json((char *)family, buf, cap, needed);
}

tfs_status tfs_close(tfs_store *store) { FORK_GUARD(); return (tfs_status)tfsgo_close(H(store)); }

tfs_status tfs_store_info_get(tfs_store *store, const char *node_type, tfs_store_info *out) {
  FORK_GUARD();
  return (tfs_status)tfsgo_store_info_get(H(store), (char *)node_type, out);
}

tfs_status tfs_gather(tfs_store *store, const char *node_type, const char *feature, const int64_t *ids, int64_t n,
                      void *dst, int64_t dst_bytes) {
  FORK_GUARD();
  return (tfs_status)tfsgo_gather(H(store), (char *)node_type, (char *)feature, (int64_t *)ids, n, dst, dst_bytes);
}

tfs_status tfs_gather_device(tfs_store *store, const char *node_type, const int64_t *ids, int64_t n, void *dst_device,
                             int64_t dst_bytes, void *cuda_stream) {
  FORK_GUARD();
  return (tfs_status)tfsgo_gather_device(H(store), (char *)node_type, (int64_t *)ids, n, dst_device, dst_bytes, cuda_stream);
}

tfs_status tfs_gather_device_ids(tfs_store *store, const char *node_type, const int64_t *ids_device, int64_t n,
                                 void *dst_device, int64_t dst_bytes, void *cuda_stream) {
  FORK_GUARD();
  return (tfs_status)tfsgo_gather_device_ids(H(store), (char *)node_type, (int64_t *)ids_device, n, dst_device, dst_bytes,
                                             cuda_stream);
}

tfs_status tfs_labels(tfs_store *store, const char *node_type, const int64_t *ids, int64_t n, int64_t *out) {
  FORK_GUARD();
  return (tfs_status)tfsgo_labels(H(store), (char *)node_type, (int64_t *)ids, n, out);
}

tfs_status tfs_split(tfs_store *store, const char *node_type, const char *name, int64_t *out, int64_t cap,
                     int64_t *count) {
  FORK_GUARD();
  return (tfs_status)tfsgo_split(H(store), (char *)node_type, (char *)name, out, cap, count);
}

tfs_status tfs_place(tfs_store *store, const char *node_type, const uint32_t *hotness, int64_t n) {
  FORK_GUARD();
  return (tfs_status)tfsgo_place(H(store), (char *)node_type, (uint32_t *)hotness, n);
}

tfs_status tfs_hottest(tfs_store *store, const char *node_type, const uint32_t *hotness, int64_t n, int64_t k,
                       int64_t *out, int64_t *count) {
  FORK_GUARD();
  return (tfs_status)tfsgo_hottest(H(store), (char *)node_type, (uint32_t *)hotness, n, k, out, count);
}

tfs_status tfs_place_ids(tfs_store *store, const char *node_type, const int64_t *ids, int64_t n) {
  FORK_GUARD();
  return (tfs_status)tfsgo_place_ids(H(store), (char *)node_type, (int64_t *)ids, n);
}

tfs_status tfs_profile_reads(tfs_store *store, const int64_t *seeds, int64_t n_seeds, const char *request_json,
                             uint32_t *const *counts, const int64_t *counts_n, int64_t n_types) {
  FORK_GUARD();
  return (tfs_status)tfsgo_profile_reads(H(store), (int64_t *)seeds, n_seeds, (char *)request_json, (uint32_t **)counts,
                                         (int64_t *)counts_n, n_types);
}

tfs_status tfs_stats_json(tfs_store *store, char *buf, size_t cap, size_t *needed) {
  FORK_GUARD();
  return (tfs_status)tfsgo_stats_json(H(store), buf, cap, needed);
}

tfs_status tfs_advise_json(tfs_store *store, const char *request_json, char *buf, size_t cap, size_t *needed) {
  FORK_GUARD();
  return (tfs_status)tfsgo_advise_json(H(store), (char *)request_json, buf, cap, needed);
}

tfs_status tfs_place_json(tfs_store *store, const char *request_json, char *buf, size_t cap, size_t *needed) {
  FORK_GUARD();
  return (tfs_status)tfsgo_place_json(H(store), (char *)request_json, buf, cap, needed);
}

tfs_status tfs_sampler_create(tfs_store *store, const char *options_json, tfs_sampler **out) {
  NEW_HANDLE(tfs_sampler, tfsgo_sampler_create(H(store), (char *)options_json, out == NULL ? NULL : &h));
}

tfs_status tfs_sampler_free(tfs_sampler *sampler) { FORK_GUARD(); return (tfs_status)tfsgo_sampler_free(H(sampler)); }

tfs_status tfs_sample(tfs_sampler *sampler, const char *seed_type, const int64_t *seeds, int64_t n,
                      struct tfs_sample **out) {
  NEW_HANDLE(struct tfs_sample,
             tfsgo_sample(H(sampler), (char *)seed_type, (int64_t *)seeds, n, out == NULL ? NULL : &h));
}

tfs_status tfs_sample_at(tfs_sampler *sampler, const char *seed_type, const int64_t *seeds, const int64_t *seed_times,
                         int64_t n, struct tfs_sample **out) {
  NEW_HANDLE(struct tfs_sample, tfsgo_sample_at(H(sampler), (char *)seed_type, (int64_t *)seeds, (int64_t *)seed_times, n,
                                                out == NULL ? NULL : &h));
}

tfs_status tfs_sample_json(struct tfs_sample *sample, char *buf, size_t cap, size_t *needed) {
  FORK_GUARD();
  return (tfs_status)tfsgo_sample_json(H(sample), buf, cap, needed);
}

tfs_status tfs_sample_nodes(struct tfs_sample *sample, const char *node_type, int64_t *out) {
  FORK_GUARD();
  return (tfs_status)tfsgo_sample_nodes(H(sample), (char *)node_type, out);
}

tfs_status tfs_sample_batch(struct tfs_sample *sample, const char *node_type, int64_t *out) {
  FORK_GUARD();
  return (tfs_status)tfsgo_sample_batch(H(sample), (char *)node_type, out);
}

tfs_status tfs_sample_edges(struct tfs_sample *sample, const char *edge_type, int64_t *row, int64_t *col,
                            int64_t *edge_ids) {
  FORK_GUARD();
  return (tfs_status)tfsgo_sample_edges(H(sample), (char *)edge_type, row, col, edge_ids);
}

tfs_status tfs_sample_free(struct tfs_sample *sample) { FORK_GUARD(); return (tfs_status)tfsgo_sample_free(H(sample)); }

tfs_status tfs_sample_from_edges(tfs_sampler *sampler, const char *edge_type, const int64_t *src, const int64_t *dst,
                                 const int64_t *labels, int64_t n, const char *link_options_json,
                                 struct tfs_sample **out) {
  NEW_HANDLE(struct tfs_sample, tfsgo_sample_from_edges(H(sampler), (char *)edge_type, (int64_t *)src, (int64_t *)dst,
                                                        (int64_t *)labels, n, (char *)link_options_json,
                                                        out == NULL ? NULL : &h));
}

tfs_status tfs_sample_from_edges_at(tfs_sampler *sampler, const char *edge_type, const int64_t *src, const int64_t *dst,
                                    const int64_t *labels, const int64_t *edge_label_time, int64_t n,
                                    const char *link_options_json, struct tfs_sample **out) {
  NEW_HANDLE(struct tfs_sample, tfsgo_sample_from_edges_at(H(sampler), (char *)edge_type, (int64_t *)src, (int64_t *)dst,
                                                           (int64_t *)labels, (int64_t *)edge_label_time, n,
                                                           (char *)link_options_json, out == NULL ? NULL : &h));
}

tfs_status tfs_sample_link_json(struct tfs_sample *sample, char *buf, size_t cap, size_t *needed) {
  FORK_GUARD();
  return (tfs_status)tfsgo_sample_link_json(H(sample), buf, cap, needed);
}

tfs_status tfs_sample_link_copy(struct tfs_sample *sample, int64_t *edge_label_index, int64_t *edge_label,
                                int64_t *src_index, int64_t *dst_pos_index, int64_t *dst_neg_index) {
  FORK_GUARD();
  return (tfs_status)tfsgo_sample_link_copy(H(sample), edge_label_index, edge_label, src_index, dst_pos_index,
                                            dst_neg_index);
}

tfs_status tfs_epochs_open(tfs_store *store, const char *options_json, const int64_t *seeds, int64_t n,
                           tfs_epochs **out) {
  NEW_HANDLE(tfs_epochs,
             tfsgo_epochs_open(H(store), (char *)options_json, (int64_t *)seeds, n, NULL, 0, (void *)out, &h));
}

tfs_status tfs_epochs_open_elsewhere(tfs_store *store, const char *options_json, const int64_t *seeds, int64_t n,
                                     const int64_t *elsewhere, int64_t n_elsewhere, tfs_epochs **out) {
  NEW_HANDLE(tfs_epochs, tfsgo_epochs_open(H(store), (char *)options_json, (int64_t *)seeds, n, (int64_t *)elsewhere,
                                           n_elsewhere, (void *)out, &h));
}

tfs_status tfs_epochs_cancel(const char *plan_dir, int *canceled) {
  FORK_GUARD();
  return (tfs_status)tfsgo_epochs_cancel((char *)plan_dir, canceled);
}

tfs_status tfs_epochs_close(tfs_epochs *epochs) { FORK_GUARD(); return (tfs_status)tfsgo_epochs_close(H(epochs)); }

tfs_status tfs_epochs_info_json(tfs_epochs *epochs, char *buf, size_t cap, size_t *needed) {
  FORK_GUARD();
  return (tfs_status)tfsgo_epochs_info_json(H(epochs), buf, cap, needed);
}

tfs_status tfs_epochs_sample(tfs_epochs *epochs, int64_t epoch, int64_t batch, struct tfs_sample **out) {
  NEW_HANDLE(struct tfs_sample, tfsgo_epochs_sample(H(epochs), epoch, batch, out == NULL ? NULL : &h));
}

tfs_status tfs_epochs_gather(tfs_epochs *epochs, int64_t epoch, int64_t batch, const char *node_type,
                             const int64_t *nodes, int64_t n, void *dst, int64_t dst_bytes) {
  FORK_GUARD();
  return (tfs_status)tfsgo_epochs_gather(H(epochs), epoch, batch, (char *)node_type, (int64_t *)nodes, n, dst, dst_bytes);
}

tfs_status tfs_epochs_seeds(tfs_epochs *epochs, int64_t epoch, int64_t batch, int64_t *out, int64_t cap, int64_t *n) {
  FORK_GUARD();
  return (tfs_status)tfsgo_epochs_seeds(H(epochs), epoch, batch, out, cap, n);
}

tfs_status tfs_synth(const char *options_json) { FORK_GUARD(); return (tfs_status)tfsgo_synth((char *)options_json, NULL, NULL); }

tfs_status tfs_synth_progress(const char *options_json, tfs_progress_fn fn, void *ctx) {
  FORK_GUARD();
  return (tfs_status)tfsgo_synth((char *)options_json, fn, ctx);
}

tfs_status tfs_ingest_progress(const char *options_json, tfs_progress_fn fn, void *ctx) {
  FORK_GUARD();
  return (tfs_status)tfsgo_ingest((char *)options_json, fn, ctx);
}

/* Calls a caller's progress function for the Go side (capi/progress.go); not exported. */
__attribute__((visibility("hidden"))) void tfs_call_progress(tfs_progress_fn fn, void *ctx, const char *stage, int64_t done,
                                                            int64_t total) {
  fn(ctx, stage, done, total);
}

tfs_status tfs_ingest(const char *options_json) { FORK_GUARD(); return (tfs_status)tfsgo_ingest((char *)options_json, NULL, NULL); }

tfs_status tfs_mount(tfs_store *store, const char *dir) { FORK_GUARD(); return (tfs_status)tfsgo_mount(H(store), (char *)dir); }

tfs_status tfs_unmount(tfs_store *store) { FORK_GUARD(); return (tfs_status)tfsgo_unmount(H(store)); }

tfs_status tfs_io_open(const char *const *paths, int32_t n_paths, const tfs_io_options *opts, tfs_io **out) {
  NEW_HANDLE(tfs_io, tfsgo_io_open((char **)paths, n_paths, (tfs_io_options *)opts, (void *)out, &h));
}

tfs_status tfs_io_submit(tfs_io *io, const tfs_io_request *reqs, int64_t n) {
  FORK_GUARD();
  return (tfs_status)tfsgo_io_submit(H(io), (tfs_io_request *)reqs, n);
}

tfs_status tfs_io_complete(tfs_io *io, void *cuda_stream) { FORK_GUARD(); return (tfs_status)tfsgo_io_complete(H(io), cuda_stream); }

tfs_status tfs_io_stats_json(tfs_io *io, char *buf, size_t cap, size_t *needed) {
  FORK_GUARD();
  return (tfs_status)tfsgo_io_stats_json(H(io), buf, cap, needed);
}

tfs_status tfs_io_close(tfs_io *io) { FORK_GUARD(); return (tfs_status)tfsgo_io_close(H(io)); }

tfs_status tfs_place_json_progress(tfs_store *store, const char *request_json, tfs_progress_fn fn, void *ctx, char *buf,
                                   size_t cap, size_t *needed) {
  FORK_GUARD();
  return (tfs_status)tfsgo_place_json_progress(H(store), (char *)request_json, fn, ctx, buf, cap, needed);
}

tfs_status tfs_verify_json(const char *path, const char *request_json, tfs_progress_fn fn, void *ctx, char *buf,
                           size_t cap, size_t *needed) {
  FORK_GUARD();
  return (tfs_status)tfsgo_verify_json((char *)path, (char *)request_json, fn, ctx, buf, cap, needed);
}

tfs_status tfs_upgrade(const char *path, tfs_progress_fn fn, void *ctx, int32_t *from_version) {
  FORK_GUARD();
  return (tfs_status)tfsgo_upgrade((char *)path, fn, ctx, from_version);
}

tfs_status tfs_types_json(tfs_store *store, char *buf, size_t cap, size_t *needed) {
  FORK_GUARD();
  return (tfs_status)tfsgo_types_json(H(store), buf, cap, needed);
}

tfs_status tfs_gather_edge_feature(tfs_store *store, const char *edge_type, const char *feature,
                                   const int64_t *ids, int64_t n, void *dst, int64_t dst_bytes) {
  FORK_GUARD();
  return (tfs_status)tfsgo_gather_edge_feature(H(store), (char *)edge_type, (char *)feature, (int64_t *)ids, n, dst,
                                               dst_bytes);
}

tfs_status tfs_edge_splits_json(tfs_store *store, const char *edge_type, char *buf, size_t cap, size_t *needed) {
  FORK_GUARD();
  return (tfs_status)tfsgo_edge_splits_json(H(store), (char *)edge_type, buf, cap, needed);
}

tfs_status tfs_edge_split_copy(tfs_store *store, const char *edge_type, const char *split, int64_t count,
                               int64_t *edge_label_index, void *labels, int64_t *neg_dst) {
  FORK_GUARD();
  return (tfs_status)tfsgo_edge_split_copy(H(store), (char *)edge_type, (char *)split, count, edge_label_index, labels,
                                           neg_dst);
}

tfs_status tfs_share_host_tier(tfs_store *store, const char *node_type, const char *path, const int64_t *ids, int64_t n) {
  FORK_GUARD();
  return (tfs_status)tfsgo_share_host_tier(H(store), (char *)node_type, (char *)path, (int64_t *)ids, n);
}

tfs_status tfs_map_host_tier(tfs_store *store, const char *node_type, const char *path) {
  FORK_GUARD();
  return (tfs_status)tfsgo_map_host_tier(H(store), (char *)node_type, (char *)path);
}

tfs_status tfs_epochs_gather_device(tfs_epochs *epochs, int64_t epoch, int64_t batch, const char *node_type,
                                    const int64_t *nodes, int64_t n, void *dst_device, int64_t dst_bytes,
                                    void *cuda_stream) {
  FORK_GUARD();
  return (tfs_status)tfsgo_epochs_gather_device(H(epochs), epoch, batch, (char *)node_type, (int64_t *)nodes, n,
                                                dst_device, dst_bytes, cuda_stream);
}

/* ---- Embedding tables (tierfs_embedding.h) ---- */
tfs_status tfs_table_create(tfs_store *store, const char *node_type, const char *path, const char *spec_json) {
  FORK_GUARD();
  return (tfs_status)tfsgo_table_create(H(store), (char *)node_type, (char *)path, (char *)spec_json);
}
tfs_status tfs_table_open(const char *path, const char *options_json, tfs_table **out) {
  NEW_HANDLE(tfs_table, tfsgo_table_open((char *)path, (char *)options_json, &h));
}
tfs_status tfs_table_gather(tfs_table *table, const int64_t *ids, int64_t n, float *out, int64_t out_len) {
  FORK_GUARD();
  return (tfs_status)tfsgo_table_gather(H(table), (int64_t *)ids, n, out, out_len);
}
tfs_status tfs_table_apply(tfs_table *table, const int64_t *ids, int64_t n, const float *grads, int64_t grads_len) {
  FORK_GUARD();
  return (tfs_status)tfsgo_table_apply(H(table), (int64_t *)ids, n, (void *)grads, grads_len);
}
tfs_status tfs_table_write(tfs_table *table, const int64_t *ids, int64_t n, const float *rows, int64_t rows_len) {
  FORK_GUARD();
  return (tfs_status)tfsgo_table_write(H(table), (int64_t *)ids, n, (void *)rows, rows_len);
}
tfs_status tfs_table_read_slots(tfs_table *table, const int64_t *ids, int64_t n, float *out, int64_t out_len) {
  FORK_GUARD();
  return (tfs_status)tfsgo_table_read_slots(H(table), (int64_t *)ids, n, out, out_len);
}
tfs_status tfs_table_write_slots(tfs_table *table, const int64_t *ids, int64_t n, const float *slots, int64_t slots_len,
                                 int64_t step) {
  FORK_GUARD();
  return (tfs_status)tfsgo_table_write_slots(H(table), (int64_t *)ids, n, (void *)slots, slots_len, step);
}
tfs_status tfs_table_checkpoint(tfs_table *table) { FORK_GUARD(); return (tfs_status)tfsgo_table_checkpoint(H(table)); }
tfs_status tfs_table_info_json(tfs_table *table, char *buf, size_t cap, size_t *needed) {
  FORK_GUARD();
  return (tfs_status)tfsgo_table_info_json(H(table), buf, cap, needed);
}
tfs_status tfs_table_stats_json(tfs_table *table, char *buf, size_t cap, size_t *needed) {
  FORK_GUARD();
  return (tfs_status)tfsgo_table_stats_json(H(table), buf, cap, needed);
}
tfs_status tfs_table_close(tfs_table *table) { FORK_GUARD(); return (tfs_status)tfsgo_table_close(H(table)); }
