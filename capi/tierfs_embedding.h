/* tierfs_embedding.h — trainable node embeddings out of core (issue 45): a table of float32 rows
 * per node type, trained with a sparse optimizer (SGD, Adagrad, SparseAdam as torch's), kept in
 * checksummed pages on disk behind a bounded write-back cache in host memory, checkpointed
 * crash-safely, apart from the dataset (which stays immutable).
 * Part of the C ABI of tierfs: include tierfs.h (which includes this header and its siblings),
 * whose Conventions block holds for every call here. */
#ifndef TIERFS_EMBEDDING_H
#define TIERFS_EMBEDDING_H

#include "tierfs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An open table (tfs_table_open); close it with tfs_table_close. Its calls run one at a time
 * (from any thread): a gather after an apply sees it. */
typedef struct tfs_table tfs_table;

/* Creates a table directory at path (which must not exist) as its first checkpoint. spec_json:
 *   {"dim": 64,
 *    "optimizer": {"name": "sgd" | "adagrad" | "adam", "lr", "beta1", "beta2", "eps",
 *                  "lr_decay", "initial_accumulator_value"},
 *    "init": {"kind": "zeros" | "normal" | "uniform", "std", "a", "b", "seed"},
 *    "rows", "dtype": "float32", "node_type", "dataset_id"}
 * Hyper-parameters left out take torch's defaults (lr: sgd 0.01, adagrad 0.01, adam 0.001; betas
 * 0.9, 0.999; eps: adam 1e-8, adagrad 1e-10); init "normal" has std 1 (nn.Embedding's). With a
 * store, rows, node_type and dataset_id are the store's node type's (node_type NULL: the only
 * one; a "rows" given must equal its count); with store NULL, spec_json gives rows. An unknown
 * key, a dtype other than float32 or a bad hyper-parameter is TFS_EINVAL naming it. */
tfs_status tfs_table_create(tfs_store *store, const char *node_type, const char *path, const char *spec_json);

/* Opens the table at path to train from its last checkpoint (its page map read and checked; each
 * page is checked as it is read: damage is TFS_ECORRUPT; a version 1 table is converted once).
 * options_json (NULL: defaults): {"host_cache_bytes": N}, the
 * bound of the page cache in host memory (default 64 MiB, at least two pages). One process opens
 * a table at a time: another opener gets TFS_EINVAL. */
tfs_status tfs_table_open(const char *path, const char *options_json, tfs_table **out);

/* Copies the parameter rows of ids[0..n) into out (out_len = n × dim floats). An id out of
 * range is TFS_ERANGE, a length that is not n × dim TFS_EINVAL. */
tfs_status tfs_table_gather(tfs_table *table, const int64_t *ids, int64_t n, float *out, int64_t out_len);

/* One optimizer step over the batch: grads (n × dim floats) is the gradient of ids' rows — for
 * sgd uncoalesced (repeated ids applied in order, as torch's SGD applies a sparse gradient), for
 * adagrad and adam coalesced (each id once, duplicates summed by the caller as torch's
 * coalesce() does; a repeated id is TFS_EINVAL). The step count goes up by one. */
tfs_status tfs_table_apply(tfs_table *table, const int64_t *ids, int64_t n, const float *grads, int64_t grads_len);

/* Sets the parameter rows of ids from rows (n × dim floats; a later repeat wins); the optimizer
 * state is kept. */
tfs_status tfs_table_write(tfs_table *table, const int64_t *ids, int64_t n, const float *rows, int64_t rows_len);

/* Whole slots — the parameter row, then the optimizer state (adagrad: state_sum; adam:
 * exp_avg, exp_avg_sq), slot_floats (tfs_table_info_json) floats each — for a caller that steps
 * the optimizer itself: read them, and write them back (each id once) with the step count the
 * table is at afterwards (at least its current one). */
tfs_status tfs_table_read_slots(tfs_table *table, const int64_t *ids, int64_t n, float *out, int64_t out_len);
tfs_status tfs_table_write_slots(tfs_table *table, const int64_t *ids, int64_t n, const float *slots, int64_t slots_len,
                                 int64_t step);

/* Makes the table's state its new last checkpoint, writing only the pages changed since the last
 * one and the page map (a table unchanged since its last one is left as it is): a kill at any point leaves the old checkpoint or the new one. A failed checkpoint keeps the old one; the table must then be reopened (every
 * call answers TFS_EIO saying so), as after any failed write. */
tfs_status tfs_table_checkpoint(tfs_table *table);

/* JSON, as tfs_stats_json: info {"rows", "dim", "dtype", "optimizer", "init", "node_type",
 * "dataset_id", "table_id", "generation", "step", "slot_floats", "page_bytes", "rows_per_page",
 * "pages", "direct_io", "host_cache_bytes"}; stats {"pages_read", "pages_written", "hits",
 * "misses", "evictions", "dirty", "cache_pages", "checkpoints"} since open. */
tfs_status tfs_table_info_json(tfs_table *table, char *buf, size_t cap, size_t *needed);
tfs_status tfs_table_stats_json(tfs_table *table, char *buf, size_t cap, size_t *needed);

/* Closes the table without a checkpoint: what changed since the last one is dropped. */
tfs_status tfs_table_close(tfs_table *table);

#ifdef __cplusplus
}
#endif

#endif /* TIERFS_EMBEDDING_H */
