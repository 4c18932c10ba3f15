/* tierfs_store.h — a store: open, close, info, gathers, features, labels, splits, stats, node and
 * edge types, placement.
 * Part of the C ABI of tierfs: include tierfs.h (which includes this header and its
 * siblings), whose Conventions block holds for every call here. */
#ifndef TIERFS_STORE_H
#define TIERFS_STORE_H

#include "tierfs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The store options of ABI version 2, frozen: options added since (copy_workers, ...) are taken
 * only by tfs_open_json, by name. Version 2 turned verify_reads into unverified_reads: blocks read
 * from disk are checked against their checksums unless it is nonzero. */
typedef struct tfs_open_options {
  size_t struct_size;
  const char *feature;           /* NULL: the dataset's first feature */
  int64_t host_cache_bytes;      /* host tier budget; 0: no host tier */
  int64_t topology_memory_bytes; /* topology in memory when it fits; 0: 1 GiB; <0: keep on disk */
  const char *io_backend;        /* NULL/"": io_uring, else pread; "io_uring" or "pread" to force */
  int32_t queue_depth;           /* disk reads in flight, all IO stacks together; 0: 128 */
  int32_t max_concurrent_io;     /* IO stacks; 0: number of CPUs */
  int32_t unverified_reads;      /* nonzero: skip checking blocks read from disk against their
                                    checksums (checked by default) */
  int32_t device;                /* CUDA ordinal of the GPU path; -1: the default, 0 */
  int64_t gpu_cache_bytes;       /* GPU tier budget; the store runs on the host where no GPU path
                                    can start (tfs_stats_json says why) */
  const char *gpu_topology;      /* NULL/"": sample on the host; "device": topology in GPU memory;
                                    "pinned": in pinned host memory read over PCIe */
  const char *host_policy;       /* NULL/"" or "static": host tier placed once (tfs_place refills);
                                    "sieve": a cache admitting rows read from disk, SIEVE eviction */
  int32_t coalesce_gap;          /* disk reads of a file at most this many bytes apart become one;
                                    0: only touching blocks; -1: probe the disk at open */
  int32_t read_align;            /* alignment of disk reads; 0: the dataset's block size; -1: the
                                    smallest the files' direct IO allows (both need unverified_reads) */
} tfs_open_options;

/* Opens the dataset directory path. opts may be NULL. */
tfs_status tfs_open(const char *path, const tfs_open_options *opts, tfs_store **out);
/* tfs_open with the options as a JSON object (NULL or "": none), keyed by the names of
 * tfs_options_json("store"), e.g. {"host_cache": 536870912, "copy_workers": 4}: every store option,
 * those tfs_open_options has no field for included. An unknown name or a value of the wrong JSON
 * type is TFS_EINVAL naming it. */
tfs_status tfs_open_json(const char *path, const char *options_json, tfs_store **out);
/* The options of a family as JSON, as tfs_stats_json: a list of {"name", "kind" ("size": bytes,
 * "int", "uint": 64 bits, "float", "bool", "string" or "map": an object of strings), "help", and
 * where they apply "default" (the value a key left out takes), "choices" (a string option's
 * values) and "flag" (the tierfs command's flag, where it is not the name with '-' for '_')}.
 * family is "store" (the keys of tfs_open_json), "epochs" (the options of tfs_epochs_open's
 * options_json; its other keys are data: fanouts, seed_edges, seed_orders, elsewhere) or "link"
 * (the keys of link_options_json, and of a plan's seed_edges beside edge_type, split and labels);
 * another is TFS_EINVAL naming them. Python's keywords and the tierfs command's flags are made
 * from these tables. (ABI 3: replaces tfs_store_options_json, which is tfs_options_json("store").) */
tfs_status tfs_options_json(const char *family, char *buf, size_t cap, size_t *needed);
/* Closes the store (unmounting it if mounted); waits for calls in flight. */
tfs_status tfs_close(tfs_store *store);

/* ---- Node types ----
 * Every call of a node type's rows takes its node_type: NULL or "" is the store's only node
 * type, and TFS_EINVAL naming the types when it has several; an unknown name is TFS_ENOENT
 * listing them. A homogeneous store is a one-type store (its node type is "node"), so NULL
 * serves it. Ids are local to their type. */

/* A node type's sizes: num_nodes of the type, num_edges of the edge types into it (the in-edges
 * its CSC holds; 0 without topology), and the dim, row_bytes and dtype of the feature its tier
 * stack serves (0, 0 and "" for a type without features). */
typedef struct tfs_store_info {
  size_t struct_size;
  int64_t num_nodes;
  int64_t num_edges;   /* 0 without topology */
  int64_t dim;         /* feature elements per row */
  int64_t row_bytes;   /* bytes per feature row */
  int64_t num_classes; /* 0 without labels */
  char dtype[16];      /* "float32", "float16", "bfloat16", "int8", ... */
  char io_backend[16]; /* "io_uring" or "pread" */
} tfs_store_info;

tfs_status tfs_store_info_get(tfs_store *store, const char *node_type, tfs_store_info *out);

/* Writes the rows of ids (of node_type) of its feature `feature` to dst + i*row_bytes; dst_bytes
 * must be n * the feature's row_bytes. feature NULL or "" is the feature the type's tier stack
 * serves (tfs_types_json's "default"), through its memory tiers; another is read from disk
 * (verified unless unverified_reads), uncached. TFS_ENOENT for a feature the type lacks,
 * TFS_ERANGE for an id outside the type's rows. */
tfs_status tfs_gather(tfs_store *store, const char *node_type, const char *feature, const int64_t *ids, int64_t n,
                      void *dst, int64_t dst_bytes);
/* The rows of node_type's served feature into device memory of the store's CUDA device, ordered
 * on cuda_stream (a cudaStream_t, NULL for the legacy default stream): work queued on the stream
 * afterwards sees every row, and the call returns without waiting for the kernels. ids are host
 * memory. Starts the GPU path on first use; TFS_ENOTSUP where it cannot (no libtierfs_cuda.so or
 * no GPU). */
tfs_status tfs_gather_device(tfs_store *store, const char *node_type, const int64_t *ids, int64_t n, void *dst_device,
                             int64_t dst_bytes, void *cuda_stream);
/* tfs_gather_device with the ids in device memory of the store's CUDA device (e.g. a CUDA tensor's
 * data): they are split on the GPU against its copies of the memory tiers' indexes, and only ids
 * no memory tier holds cross to the host. When the memory tiers hold every row the call does not
 * wait for the GPU; an id out of range then gets a row of zeros and TFS_ERANGE comes back from a
 * later device gather on the store. */
tfs_status tfs_gather_device_ids(tfs_store *store, const char *node_type, const int64_t *ids_device, int64_t n,
                                 void *dst_device, int64_t dst_bytes, void *cuda_stream);

/* out[i] = label of ids[i] (of node_type; -1 unlabelled). */
tfs_status tfs_labels(tfs_store *store, const char *node_type, const int64_t *ids, int64_t n, int64_t *out);
/* Node ids of node_type's split ("train", "val", "test"): *count is set to its size; up to cap ids
 * are copied to out (out may be NULL with cap 0 to ask the size). */
tfs_status tfs_split(tfs_store *store, const char *node_type, const char *name, int64_t *out, int64_t cap,
                     int64_t *count);

/* Statistics as JSON. Copies up to cap bytes (NUL-terminated when it fits) and sets *needed to
 * the length plus one. */
tfs_status tfs_stats_json(tfs_store *store, char *buf, size_t cap, size_t *needed);

/* ---- Node and edge types (format version 5; docs: ARCHITECTURE.md "Types") ----
 * Node types are named, edge types are "src:rel:dst"; ids are local to their type. One store
 * handle serves every type. Edge types follow the node types' rule: NULL or "" is the only edge
 * type. TFS_ENOENT for a type or feature the dataset lacks (the message lists what it has). */
/* {"node_types": [{"name", "count", "features": [{"name", "of", "dtype", "dim", "row_bytes",
 * "rows", "scalar", "default", "shape"?, "metadata"?}], "labels", "num_classes", "splits":
 * {name: count}}], "edge_types": [{"key", "src", "rel", "dst", "count", "features"}], "typed",
 * "task_metadata"?, "dataset_name"?}, copied as by tfs_stats_json: every node and edge feature
 * of the dataset ("default" marks the feature a node type's tier stack serves, "scalar" one value a row, a 1-D
 * input such as edge weights; "shape", where present, a row's shape of two or more dimensions,
 * its product "dim", rows read flat; "metadata" and "task_metadata", where present, what the
 * dataset's maker said of the feature and of the task of its splits, e.g. GraphBolt's;
 * "dataset_name", where present, the name its maker gave the dataset, GraphBolt's). "typed"
 * is true when the types are named by the dataset's maker (several types, or one typed type: a
 * one-type HeteroData or GraphBolt dataset), false for a homogeneous graph (its node type is
 * "node"). */
tfs_status tfs_types_json(tfs_store *store, char *buf, size_t cap, size_t *needed);
/* Rows of edge ids (of edge_type; tfs_sample_edge_ids) of its edge feature `feature`, from disk. */
tfs_status tfs_gather_edge_feature(tfs_store *store, const char *edge_type, const char *feature,
                                   const int64_t *ids, int64_t n, void *dst, int64_t dst_bytes);
/* Edge splits (format version 6): the seed edges of link prediction of edge_type (NULL or "" for
 * the only one) per split ("train", "val", "test"). tfs_edge_splits_json: {split: {"count",
 * "labels": "int64" or "float32" (absent when the split has none), "neg_per_seed" (0: none)}},
 * copied as by tfs_stats_json. tfs_edge_split_copy copies split `split`: edge_label_index gets
 * 2 * count int64 (the src ids, then the dst ids: PyG's [2, count]), labels count values of the
 * split's label dtype, neg_dst count * neg_per_seed int64 (seed i's at [i * neg_per_seed, ...));
 * each may be NULL to skip it. count must be the split's, else TFS_EINVAL; TFS_ENOENT for a split
 * or edge type the dataset lacks, or a labels / neg_dst buffer for a split without them. */
tfs_status tfs_edge_splits_json(tfs_store *store, const char *edge_type, char *buf, size_t cap, size_t *needed);
tfs_status tfs_edge_split_copy(tfs_store *store, const char *edge_type, const char *split, int64_t count,
                               int64_t *edge_label_index, void *labels, int64_t *neg_dst);

/* ---- Placement: which rows the memory tiers hold (of node_type's tier stack) ---- */
/* Refills node_type's memory tiers by hotness (n == its node count; NULL ranks by in-degree, in a
 * graph of several types by how often the type's nodes are neighbors). */
tfs_status tfs_place(tfs_store *store, const char *node_type, const uint32_t *hotness, int64_t n);
/* The (at most) k ids of node_type tfs_place would put in memory, hottest first, into
 * out[0..*count): ranked by hotness (n == its node count, ties to the smaller id), or with NULL by
 * the applied placement (tfs_place_json), else by in-degree. A node type without features (no
 * tier stack: the embedding tables' types) is ranked as a stack of it would be with no placement
 * applied. Multi-GPU ownership is decided from this order. */
tfs_status tfs_hottest(tfs_store *store, const char *node_type, const uint32_t *hotness, int64_t n, int64_t k,
                       int64_t *out, int64_t *count);
/* Refills node_type's memory tiers with ids in the order given: the GPU tier takes the first rows
 * it holds, the host tier the next; ids beyond both are not cached. Ids must be distinct and in
 * range (TFS_ERANGE names the first bad one). */
tfs_status tfs_place_ids(tfs_store *store, const char *node_type, const int64_t *ids, int64_t n);
/* How often a loader's batches of seeds reach each row, placing nothing (the profile
 * tfs_place_json places from): request_json {"fanouts", "batch_size"} and optional "node_type"
 * (the seeds'; absent: the only one), "batches" (default 0: one epoch of the seeds), "seed" (the
 * sampling seed), "replace". fanouts is {"src:rel:dst": [per hop], ...} with every edge type, or
 * [per hop] for the only edge type. It samples batches of seeds[0..n_seeds) as a loader visits
 * them — the first epoch in the order given, every later one reshuffled, an epoch's last batch
 * shorter — and writes to counts[i][0..counts_n[i]) how many batches reached each node of node
 * type i (tfs_types_json's order; zeros for a type without features; counts[i] NULL skips type
 * i). n_types is the number of node types (1 for a homogeneous store); counts_n[i] must be type
 * i's node count. Seeds must be in range (TFS_ERANGE names the first bad one). */
tfs_status tfs_profile_reads(tfs_store *store, const int64_t *seeds, int64_t n_seeds, const char *request_json,
                             uint32_t *const *counts, const int64_t *counts_n, int64_t n_types);

/* Places the memory tiers by a profile; the request's fanouts choose how.
 * fanouts [per hop] (a graph of one node and one edge type): the topology+feature placement of
 * `tierfs place`. It loads the placement saved in the dataset directory when it was made for the
 * dataset as it is and for the request's inputs; otherwise profiles sampling batches, plans, and
 * saves it there. Then applies it to the store: the feature tiers are refilled from it (gathers
 * wait meanwhile) and, for a topology kept on disk, the neighbor lists it places in memory are
 * held in memory. request_json holds the keys of `tierfs place`: {"fanouts": [10, 5],
 * "batch_size": 1024} are required; optional "node_type" (absent: the only one), "policy"
 * ("unified", "unified-pcie", "topology-first", "features-first", "degree", "random", "none"),
 * "batches" (0: one epoch), "time_budget_s", "seeds" (default: the train split, else every
 * node), "gpu_bytes" and "host_bytes" (default: the store's caches), "recompute". The report
 * (JSON, as `tierfs place --json`: source "loaded"/"replanned"/"computed", usage per tier, and a
 * per-batch traffic comparison of every policy).
 * fanouts {"src:rel:dst": [per hop], ...} (every edge type): places every node type's memory
 * tiers by a profile; optional "node_type" (the seeds'; absent: the only one), "split" ("train"),
 * "batches" (0: one epoch), "seed", "replace" sample that many batches of the type's split as
 * tfs_profile_reads does, count how often each (type, row) is reached, and fill each type's GPU
 * then host tier with its most reached rows. Answers {"batches", "seconds", "node_types": {type:
 * {"rows_reached", "memory_rows", "reached_in_memory", "gpu_bytes", "host_bytes"}}}.
 * The answer is copied to buf as tfs_advise_json does: when it does not fit, buf gets "" and the
 * same request with cap >= *needed returns it without placing again. TFS_EINVAL for a bad request
 * (a key of the other kind included) or budget (negative, or host_bytes above the machine's
 * available memory) or a plan whose feature rows do not fit the store's caches. */
tfs_status tfs_place_json(tfs_store *store, const char *request_json, char *buf, size_t cap, size_t *needed);
/* tfs_place_json with progress: fn (may be NULL) gets ("profile", batches sampled, batches
 * planned so far) as the pre-sampling of a placement of fanouts [per hop] advances (see
 * tfs_progress_fn); a placement of fanouts per edge type reports none. */
tfs_status tfs_place_json_progress(tfs_store *store, const char *request_json, tfs_progress_fn fn, void *ctx, char *buf,
                                   size_t cap, size_t *needed);
/* One static host tier for the processes of a host, in a file in shared memory (e.g. under
 * /dev/shm). tfs_share_host_tier refills node_type's host tier with
 * ids, hottest first, as many as its budget holds, in a new file at path (which must not exist;
 * on error none is left); tfs_map_host_tier makes it the tier another process filled there,
 * mapped read-only (TFS_EINVAL naming the file when it is not ready, holds rows of another width
 * or is damaged). The GPU tier keeps its rows. Removing the file once every process has mapped it
 * is the caller's; the mappings stay valid. */
tfs_status tfs_share_host_tier(tfs_store *store, const char *node_type, const char *path, const int64_t *ids, int64_t n);
tfs_status tfs_map_host_tier(tfs_store *store, const char *node_type, const char *path);
#ifdef __cplusplus
}
#endif

#endif /* TIERFS_STORE_H */
