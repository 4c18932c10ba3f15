/* tierfs.h — the C ABI of tierfs, a tiered GPU / host-memory / SSD feature store for
 * out-of-core GNN training. Library: libtierfs.so (built by `make lib`).
 *
 * Conventions
 *  - Every function returns a tfs_status; TFS_OK is 0. Codes never change meaning.
 *  - On failure, tfs_last_error() returns a message for the calling thread, valid until that
 *    thread's next tierfs call.
 *  - Handles (tfs_store*, tfs_sampler*, struct tfs_sample*, tfs_io*, tfs_epochs*, tfs_hetero_sampler*,
 *    struct tfs_hetero_sample*) are opaque and not pointers to
 *    memory; free each with its _close/_free function exactly once (a closed or freed handle
 *    gives TFS_ECLOSED). A store may be used from many threads at once; a sampler or a sample
 *    from one thread at a time.
 *  - Option structs start with their own size: set .struct_size = sizeof(the struct); zero
 *    fields take defaults. Newer libraries accept older, smaller structs (struct_size must cover
 *    at least the first field after it, and not exceed the library's sizeof).
 *  - Buffers are the caller's; the library never keeps a pointer after a call returns (except
 *    tfs_io_submit's destinations, written until the next tfs_io_complete).
 *  - Load the library once per process and do not fork after loading it (it runs a Go runtime):
 *    in a child forked after loading, every call returns TFS_ENOTSUP and says so.
 *  - Fault injection, for tests: the environment variable TIERFS_FAULTS holds rules separated
 *    by ';', each KIND[:key=value...] (kinds eio, short, flip, delay; keys file, path, from, to,
 *    every, prob, seed, ms), e.g. "eio:every=3;flip:prob=0.01:seed=7" or "flip:path=epoch-".
 *    They inject IO faults under every store tfs_open opens (its planned epochs' packed files
 *    included) and every tfs_io tfs_io_open opens; a bad value makes those calls TFS_EINVAL.
 *    The library reads its environment when it loads: set the variable before loading it.
 */
#ifndef TIERFS_H
#define TIERFS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TFS_ABI_VERSION 2

typedef enum tfs_status {
  TFS_OK = 0,
  TFS_EINVAL = 1,    /* bad argument: null pointer, wrong size, bad option */
  TFS_ENOENT = 2,    /* file, dataset, split or feature not found */
  TFS_ERANGE = 3,    /* node id out of range */
  TFS_ECORRUPT = 4,  /* data does not match its checksum or manifest */
  TFS_EIO = 5,       /* read or write failed */
  TFS_ENOMEM = 6,    /* memory could not be had */
  TFS_ECLOSED = 7,   /* handle already closed or freed */
  TFS_ENOTSUP = 8,   /* not supported by this build or machine (e.g. no GPU) */
  TFS_EVERSION = 9,  /* dataset format or ABI version not supported */
  TFS_EINTERNAL = 10 /* a bug in tierfs; the message says where */
} tfs_status;

typedef struct tfs_store tfs_store;
typedef struct tfs_sampler tfs_sampler;
typedef struct tfs_epochs tfs_epochs; /* planned epochs (tfs_epochs_open) */
/* A sample is a struct tfs_sample* (no typedef: the name tfs_sample is the sampling function, as
 * with struct stat and stat()). */
struct tfs_sample;

/* TFS_ABI_VERSION of the loaded library. */
int tfs_abi_version(void);
/* Message of the calling thread's last failed call ("" if none). */
const char *tfs_last_error(void);

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
 * tfs_store_options_json, e.g. {"host_cache": 536870912, "copy_workers": 4}: every store option,
 * those tfs_open_options has no field for included. An unknown name or a value of the wrong JSON
 * type is TFS_EINVAL naming it. */
tfs_status tfs_open_json(const char *path, const char *options_json, tfs_store **out);
/* The store options as JSON, as tfs_stats_json: a list of {"name", "kind" ("size": bytes, "int",
 * "bool" or "string"), "help"}, one per option tfs_open_json takes. Python's tierfs.open and the
 * tierfs command's flags are made from this table. */
tfs_status tfs_store_options_json(char *buf, size_t cap, size_t *needed);
/* Closes the store (unmounting it if mounted); waits for calls in flight. */
tfs_status tfs_close(tfs_store *store);

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

tfs_status tfs_store_info_get(tfs_store *store, tfs_store_info *out);

/* Writes the feature row of ids[i] to dst + i*row_bytes. dst_bytes must be n*row_bytes. */
tfs_status tfs_gather(tfs_store *store, const int64_t *ids, int64_t n, void *dst, int64_t dst_bytes);
/* Same into device memory of the store's CUDA device, ordered on cuda_stream (a cudaStream_t,
 * NULL for the legacy default stream): work queued on the stream afterwards sees every row, and
 * the call returns without waiting for the kernels. ids are host memory. Starts the GPU path on
 * first use; TFS_ENOTSUP where it cannot (no libtierfs_cuda.so or no GPU). */
tfs_status tfs_gather_device(tfs_store *store, const int64_t *ids, int64_t n, void *dst_device,
                             int64_t dst_bytes, void *cuda_stream);
/* tfs_gather_device with the ids in device memory of the store's CUDA device (e.g. a CUDA tensor's
 * data): they are split on the GPU against its copies of the memory tiers' indexes, and only ids
 * no memory tier holds cross to the host. When the memory tiers hold every row the call does not
 * wait for the GPU; an id out of range then gets a row of zeros and TFS_ERANGE comes back from a
 * later device gather on the store. */
tfs_status tfs_gather_device_ids(tfs_store *store, const int64_t *ids_device, int64_t n, void *dst_device,
                                 int64_t dst_bytes, void *cuda_stream);

/* out[i] = label of ids[i] (-1 unlabelled). */
/* The dataset's features as JSON, as tfs_stats_json: a list of {"name", "of" ("node" or "edge"),
 * "dtype", "dim", "row_bytes", "rows", "scalar" (one value a row, a 1-D input such as edge
 * weights), "default" (the feature tfs_gather serves)}, node features first. */
tfs_status tfs_features_json(tfs_store *store, char *buf, size_t cap, size_t *needed);
/* Writes the rows of ids of the feature `name` into dst (dst_bytes = n * its row_bytes): node ids
 * for a node feature, edge ids (tfs_sample_edge_ids) for an edge feature. The feature tfs_gather
 * serves goes through its tiers; others are read from disk (verified unless unverified_reads),
 * uncached. TFS_ENOENT for an unknown name, TFS_ERANGE for an id outside the feature's rows. */
tfs_status tfs_gather_feature(tfs_store *store, const char *name, const int64_t *ids, int64_t n, void *dst,
                              int64_t dst_bytes);
tfs_status tfs_labels(tfs_store *store, const int64_t *ids, int64_t n, int64_t *out);
/* Node ids of a split ("train", "val", "test"): *count is set to its size; up to cap ids are
 * copied to out (out may be NULL with cap 0 to ask the size). */
tfs_status tfs_split(tfs_store *store, const char *name, int64_t *out, int64_t cap, int64_t *count);

/* Refills the host tier by hotness (n == num_nodes counts; NULL ranks by in-degree). */
tfs_status tfs_place(tfs_store *store, const uint32_t *hotness, int64_t n);
/* The (at most) k ids tfs_place would put in memory, hottest first, into out[0..*count): ranked by
 * hotness (n == num_nodes counts, ties to the smaller id), or with NULL by the applied placement
 * (tfs_place_json), else by in-degree. Multi-GPU ownership is decided from this order. */
tfs_status tfs_hottest(tfs_store *store, const uint32_t *hotness, int64_t n, int64_t k, int64_t *out, int64_t *count);
/* Refills the memory tiers with ids in the order given: the GPU tier takes the first rows it holds,
 * the host tier the next; ids beyond both are not cached. Ids must be distinct and in range
 * (TFS_ERANGE names the first bad one). */
tfs_status tfs_place_ids(tfs_store *store, const int64_t *ids, int64_t n);
/* How often a loader's batches of seeds read each feature row, placing nothing (the profile
 * tfs_place_json plans from): request_json {"fanouts": [25, 10], "batch_size": 1024} and optional
 * "batches" (default 0: one epoch of the seeds), "seed" (the sampling seed), "replace" pre-samples
 * that many batches of seeds[0..n_seeds), the first epoch in the order given, later ones
 * reshuffled, and writes to counts[0..n) (n == num_nodes) how many batches read each node's row
 * (seeds included). Seeds must be in range (TFS_ERANGE names the first bad one). A graph of one
 * node type only (TFS_ENOTSUP otherwise). Holds 16 bytes per node while it runs. */
tfs_status tfs_profile_reads(tfs_store *store, const int64_t *seeds, int64_t n_seeds, const char *request_json,
                             uint32_t *counts, int64_t n);
/* tfs_profile_reads of a graph of several types: request_json {"node_type" (the seeds'),
 * "fanouts": {"src:rel:dst": [per hop]}, "batch_size"} and optional "batches" (0: one pass of
 * full batches, at least one), "seed", "replace" samples batches of seeds[0..n_seeds) of
 * node_type as tfs_place_hetero_json profiles them (full batches of a fresh permutation per pass,
 * as a shuffling loader with drop_last) and writes to counts[i][0..counts_n[i]) how many batches
 * reached each node of node type
 * i (tfs_types_json's order; zeros for a type without features; counts[i] NULL skips type i).
 * n_types is the number of node types; counts_n[i] must be type i's node count. */
tfs_status tfs_profile_reads_hetero(tfs_store *store, const int64_t *seeds, int64_t n_seeds, const char *request_json,
                                    uint32_t *const *counts, const int64_t *counts_n, int64_t n_types);

/* Statistics as JSON. Copies up to cap bytes (NUL-terminated when it fits) and sets *needed to
 * the length plus one. */
tfs_status tfs_stats_json(tfs_store *store, char *buf, size_t cap, size_t *needed);

/* Throughput-per-dollar advice (`tierfs advise`): runs the store's sampler and gather for a few
 * batches with its caches as they are, optionally probes this machine, and evaluates Hyperion's
 * TPC model for 1..max_ssds SSDs. request_json holds the keys of `tierfs advise`, e.g.
 * {"fanouts": [10, 5], "batch_size": 1024, "ssd_price": 150, "machine_price": 3000,
 *  "measure": true}; the report (JSON, as `tierfs advise --json`) is copied to buf when it fits
 * (NUL-terminated) and *needed is set to its length plus one. When it does not fit, buf gets ""
 * and the report is kept with the store: calling again with the same request_json and
 * cap >= *needed returns it without measuring again (tfs_close frees a report never fetched).
 * Takes seconds (it runs real batches). */
tfs_status tfs_advise_json(tfs_store *store, const char *request_json, char *buf, size_t cap, size_t *needed);

/* Topology+feature placement (`tierfs place`): loads the placement saved in the dataset
 * directory when it was made for the dataset as it is and for the request's inputs; otherwise
 * profiles sampling batches, plans, and saves it there. Then applies it to the store: the feature
 * tiers are refilled from it (gathers wait meanwhile) and, for a topology kept on disk, the
 * neighbor lists it places in memory are held in memory. request_json holds the keys of
 * `tierfs place`: {"fanouts": [10, 5], "batch_size": 1024} are required; optional "policy"
 * ("unified", "unified-pcie", "topology-first", "features-first", "degree", "random", "none"),
 * "batches" (0: one epoch), "time_budget_s", "seeds" (default: the train split, else every
 * node), "gpu_bytes" and "host_bytes" (default: the store's caches), "recompute". The report
 * (JSON, as `tierfs place --json`: source "loaded"/"replanned"/"computed", usage per tier, and a
 * per-batch traffic comparison of every policy) is copied to buf as tfs_advise_json does: when it
 * does not fit, buf gets "" and the same request with cap >= *needed returns it without planning
 * again. TFS_EINVAL for a bad request or budget (negative, or host_bytes above the machine's
 * available memory) or a plan whose feature rows do not fit the store's caches. */
tfs_status tfs_place_json(tfs_store *store, const char *request_json, char *buf, size_t cap, size_t *needed);

typedef struct tfs_sampler_options {
  size_t struct_size;
  const int32_t *fanouts; /* per hop; -1 takes every neighbor */
  int32_t num_hops;
  int32_t replace; /* nonzero: with replacement */
  uint64_t seed;   /* each call uses seed + call number, so batches differ but runs repeat */
  int32_t workers; /* 0: number of CPUs */
} tfs_sampler_options;

tfs_status tfs_sampler_create(tfs_store *store, const tfs_sampler_options *opts, tfs_sampler **out);
tfs_status tfs_sampler_free(tfs_sampler *sampler);

/* Samples the k-hop neighborhood of seeds. The sample's nodes are the seeds first, then the
 * nodes each hop reached; edges are (row = neighbor, col = node it was sampled for) in local ids. */
tfs_status tfs_sample(tfs_sampler *sampler, const int64_t *seeds, int64_t n, struct tfs_sample **out);
tfs_status tfs_sample_sizes(struct tfs_sample *sample, int64_t *num_nodes, int64_t *num_edges, int32_t *num_hops);
/* Copies the arrays out; each pointer may be NULL to skip it. Sizes: nodes num_nodes, row and col
 * num_edges, nodes_per_hop num_hops+1, edges_per_hop num_hops. */
tfs_status tfs_sample_copy(struct tfs_sample *sample, int64_t *nodes, int64_t *row, int64_t *col,
                           int64_t *nodes_per_hop, int64_t *edges_per_hop);
/* Copies the sample's edge ids (num_edges of them): edge i (row[i] -> col[i]) is the edge at that
 * position of the dataset's CSC, the row of its edge features (tfs_gather_feature). */
tfs_status tfs_sample_edge_ids(struct tfs_sample *sample, int64_t *out);
tfs_status tfs_sample_free(struct tfs_sample *sample);

/* Link sampling (docs: ARCHITECTURE.md "Link sampling"; PyG's edge_sample, disjoint=False): samples
 * the k-hop neighborhood of the n seed edges (src[i], dst[i]) with the sampler's options, the
 * sampler's next seed (node and link samples count alike). labels (NULL: none; not with triplet)
 * holds one label a seed edge. link_options_json (NULL or "": no negatives) is
 * {"neg_sampling": "binary" | "triplet" | null, "amount": 1 (binary: negative pairs per seed edge,
 * ceil(amount * n) in all; triplet: a whole number of negative destinations per seed edge),
 * "strict": false (redraw negatives that are edges), "exclude_seed_edges": false (leave the seed
 * edges out of the neighborhoods), "undirected": false (with exclude_seed_edges, their reverses
 * too)}. The sample is a normal sample whose seeds are the distinct endpoints of the seed edges
 * and negatives, ascending; tfs_sample_link_* read its label edges. TFS_ERANGE names an endpoint
 * outside the store's nodes, TFS_EINVAL a bad option or labels of another length. */
tfs_status tfs_sample_edges(tfs_sampler *sampler, const int64_t *src, const int64_t *dst, const int64_t *labels,
                            int64_t n, const char *link_options_json, struct tfs_sample **out);
/* {"edge_label_index": m, "edge_label": m or 0, "src_index": n, "dst_pos_index": n,
 * "dst_neg_index": n * amount, "triplet": bool}: the lengths of the arrays below (binary and no
 * negatives fill edge_label_index and edge_label, triplet the other three). TFS_ENOENT for a
 * sample drawn from nodes. */
tfs_status tfs_sample_link_json(struct tfs_sample *sample, char *buf, size_t cap, size_t *needed);
/* Copies the label edges, local ids into the sample's nodes (any pointer may be NULL):
 * edge_label_index (2 * m: the m sources, then the m destinations; seed edges in input order,
 * then the negative pairs), edge_label (the labels or 1s, then a 0 a negative pair),
 * src_index and dst_pos_index (seed edge i's endpoints), dst_neg_index (seed edge i's negative
 * destinations at [i * amount, (i + 1) * amount)). */
tfs_status tfs_sample_link_copy(struct tfs_sample *sample, int64_t *edge_label_index, int64_t *edge_label,
                                int64_t *src_index, int64_t *dst_pos_index, int64_t *dst_neg_index);

/* Planned epochs (docs/planned.md): K epochs sampled ahead, each batch's rows that no memory tier
 * holds packed contiguously in a file per epoch. options_json holds plan_dir, fanouts,
 * batch_size (required), epochs (K), and optionally replace, drop_last, seed (sampler),
 * shuffle_seed, disk_budget (bytes), replan (plan anew when the plan is missing or stale),
 * place_tiers, workers, pack_method ("scan": read a window's rows by an ascending scan of the
 * feature files, "random": a read a row, "" or absent: whichever the disk model prices lower)
 * and pack_memory (bytes of a packing window, 0 or absent: 1 GiB); the last two change how
 * planning reads, never the packed bytes, and a bad one is TFS_EINVAL naming it. fanouts as an object {"src:rel:dst": [per hop], ... every edge type}
 * plans the graph session: batches of seeds of "node_type", every node type with features
 * packed, served by tfs_epochs_sample_hetero and tfs_epochs_gather_typed. seeds NULL with n 0
 * takes the "train" split (of node_type). "seed_edges": {"edge_type": "src:rel:dst" ("" for the
 * only one), "labels": false, "split": "train", and the keys of tfs_sample_edges'
 * link_options_json (a store's plan) or tfs_hetero_sample_from_edges' (a session's)} plans batches
 * of seed edges instead (link prediction): seeds holds n src ids, then n dst ids, then with
 * "labels" n labels; seeds NULL with n 0 takes the stored edge split "split" with its labels.
 * Batch b of planned epoch e is the first tfs_sample_edges of a sampler of the batch's seed;
 * tfs_epochs_sample (tfs_epochs_sample_hetero) then answers a link sample whose label edges the
 * tfs_sample_link_* (tfs_hetero_sample_link_*) calls read. A plan made for other inputs is
 * TFS_EINVAL naming the input; a missing one TFS_ENOENT (unless replan). "first_epoch": F (default
 * 0) plans the training epochs [F, F+K): planned epoch k is epoch F+k (its order and batch seeds
 * derive from F+k), so plans of consecutive ranges never repeat an epoch; epoch e is served from
 * planned epoch F + (e-F) mod the planned count (e itself inside the range). "seed_orders": true
 * says seeds holds each planned epoch's seed nodes in their order instead (epochs lists of
 * n / epochs ids, one after another: a distributed rank's share of each epoch; shuffle_seed
 * unused). */
tfs_status tfs_epochs_open(tfs_store *store, const char *options_json, const int64_t *seeds, int64_t n,
                           tfs_epochs **out);
/* tfs_epochs_open with rows served elsewhere: rows another process serves (a distributed rank's
 * rows owned by its peers), which the plan never packs and whose positions its gathers leave to
 * the caller (tfs_epochs_gather and _typed write nothing there; tfs_epochs_gather_device nothing
 * unless a memory tier of the store holds the row). elsewhere holds n_elsewhere ids, each node
 * type's distinct and ascending, the types one after another as options_json's "elsewhere":
 * [{"node_type": "...", "rows": count}, ...] lists them; without that key every id is of the
 * plan's only packed node type. The set is part of the plan's fingerprint (another set: stale). */
tfs_status tfs_epochs_open_elsewhere(tfs_store *store, const char *options_json, const int64_t *seeds, int64_t n,
                                     const int64_t *elsewhere, int64_t n_elsewhere, tfs_epochs **out);
tfs_status tfs_epochs_close(tfs_epochs *epochs);
/* Stops the planner writing into plan_dir in this process (a tfs_epochs_open planning there), if
 * one is writing its packed files now; *canceled (may be NULL) says whether one was. That open
 * then fails within a few batches, having removed what it wrote. A planner that starts after the
 * call is not stopped: call it again until the open returns. */
tfs_status tfs_epochs_cancel(const char *plan_dir, int *canceled);
/* JSON: {"dir", "hetero" (a graph session's plan), "seed_type", "node_types" (those packed),
 * "link" (batches of seed edges), "edge_type" (a link plan's seed edge type), "report" (the planning this open did, or null), "stats" (planned,
 * first_epoch, batches_per_epoch, plan_seconds, batches, rows, bytes_read, reads, ...)}; as tfs_stats_json. */
tfs_status tfs_epochs_info_json(tfs_epochs *epochs, char *buf, size_t cap, size_t *needed);
/* The sample of batch `batch` of epoch `epoch` (of a link plan, its link sample), checked against
 * the plan: read from the plan's samples file, nothing drawn (a damaged record is TFS_ECORRUPT
 * naming the file, epoch and batch); the sample's first nodes_per_hop[0] nodes are the batch's
 * seeds. */
tfs_status tfs_epochs_sample(tfs_epochs *epochs, int64_t epoch, int64_t batch, struct tfs_sample **out);
/* Sets *n to the number of seeds of batch `batch` of epoch `epoch` and, when out is not NULL,
 * writes them into out (cap entries; fewer than *n is TFS_EINVAL): seed node ids, or of a link
 * plan the positions of its seed edges in the plan's seed edges (PyG's input_id). */
tfs_status tfs_epochs_seeds(tfs_epochs *epochs, int64_t epoch, int64_t batch, int64_t *out, int64_t cap, int64_t *n);
/* Writes the feature rows of nodes (the batch's sample nodes, as tfs_epochs_sample gave them) into
 * dst: memory-tier rows from the tiers, the rest from the batch's packed extent, checked against
 * its checksum (TFS_ECORRUPT naming file, epoch and batch). */
tfs_status tfs_epochs_gather(tfs_epochs *epochs, int64_t epoch, int64_t batch, const int64_t *nodes, int64_t n,
                             void *dst, int64_t dst_bytes);

/* Builds a dataset; options_json holds the fields of `tierfs synth` / `tierfs ingest` (see
 * README), e.g. {"out": "/data/g", "nodes": 1000000, "avg_degree": 10, "dim": 128, "seed": 1}.
 * An "out" that holds a dataset or other files is refused (TFS_EINVAL naming it) unless
 * "force": true; the new dataset is written beside it and swapped in only once complete.
 * tfs_ingest of a heterogeneous graph: {"node_types": [{"name", "num_nodes", "features":
 * [{"name", "path", "dtype"}], "labels", "splits"}], "edge_types": [{"src", "rel", "dst",
 * "edges", "edge_columns", "edge_features": [{"name", "path", "dtype"}]}], "out", "force",
 * "device_paths"} (no other keys); ids in each edge list are local ids of its src and dst types. */
tfs_status tfs_synth(const char *options_json);
tfs_status tfs_ingest(const char *options_json);

/* Progress of a long call: stage names the work ("edges: count", "edges: fill", "features",
 * "labels", "commit", ...), done of total units (total 0: not known up front). Called from the
 * library's threads, at most every 100 ms per stage plus once when a stage completes; it must
 * return quickly and must not call into the library. */
typedef void (*tfs_progress_fn)(void *ctx, const char *stage, int64_t done, int64_t total);
/* tfs_synth and tfs_ingest reporting their progress to fn(ctx, ...) (fn NULL: none). */
tfs_status tfs_synth_progress(const char *options_json, tfs_progress_fn fn, void *ctx);
tfs_status tfs_ingest_progress(const char *options_json, tfs_progress_fn fn, void *ctx);
/* tfs_place_json with progress: fn (may be NULL) gets ("profile", batches sampled, batches
 * planned so far) as the pre-sampling advances (see tfs_progress_fn). */
tfs_status tfs_place_json_progress(tfs_store *store, const char *request_json, tfs_progress_fn fn, void *ctx, char *buf,
                                   size_t cap, size_t *needed);

/* Checks every block of every file of the dataset at path against its checksum (as `tierfs
 * verify`) and writes the JSON report, as tfs_stats_json: {"ok", "files", "bytes", "problems":
 * [{"file", "offset" (-1: the whole file), "what"}]}. request_json: {"limit": problems reported
 * per file, default 20, 0 for all}. fn (may be NULL) gets ("verify", bytes checked, total). Damage
 * is in the report (TFS_OK); a directory that is no dataset is TFS_ENOENT, a damaged manifest
 * TFS_ECORRUPT. A report that does not fit buf is kept for the retry with the same arguments. */
tfs_status tfs_verify_json(const char *path, const char *request_json, tfs_progress_fn fn, void *ctx, char *buf,
                           size_t cap, size_t *needed);

/* Rewrites the dataset at path, of an older format version, to the current one in place (as
 * `tierfs upgrade`): every block is checked against its checksum first, and a damaged dataset is
 * TFS_ECORRUPT naming the file and block, left as it was. Killed at any point it leaves the old
 * or the new dataset, each readable; calling it again finishes. *from_version (may be NULL) gets
 * the version the dataset had (the current one when there was nothing to do). fn (may be NULL)
 * gets ("verify", bytes checked, total). No writer of the dataset may be at work. */
tfs_status tfs_upgrade(const char *path, tfs_progress_fn fn, void *ctx, int32_t *from_version);

/* Mounts a read-only view of the store's tiers and counters at dir (FUSE); unmounted by
 * tfs_unmount or tfs_close. */
tfs_status tfs_mount(tfs_store *store, const char *dir);
tfs_status tfs_unmount(tfs_store *store);

/* ---- The asynchronous IO stack on its own (as Hyperion's IOStack) ----
 *
 * A tfs_io reads arbitrary byte ranges of a fixed set of files, with io_uring and O_DIRECT into
 * registered staging memory (or pread where io_uring is unavailable), and delivers them into host
 * memory or, through a completion kernel, into device memory. It is the engine under tfs_gather,
 * usable without a dataset.
 *
 *  - tfs_io_submit queues requests and hands as many reads to the kernel as the queue depth and
 *    staging allow. It never waits for IO. Several submits may precede one complete.
 *  - tfs_io_complete waits for every request submitted since the last complete: it returns once
 *    every read is reaped, every host destination holds its bytes, and the copies into device
 *    destinations are enqueued on cuda_stream (work queued on that stream afterwards sees them;
 *    the call does not wait for the kernels). On failure the requests not yet read are dropped,
 *    their destinations are unspecified, and the tfs_io stays usable.
 *  - Destinations are the caller's memory, used in place (no copy through the library): each
 *    request's dst must stay valid and untouched from its submit until the complete that follows
 *    (this is the one exception to "the library never keeps a pointer after a call returns").
 *  - Offsets and lengths need no alignment; the stack reads the covering block-aligned ranges,
 *    merging requests that share blocks (reads of up to max_io_bytes; longer requests are split)
 *    and may read a file's last partial block. A request past the end of its file is TFS_EINVAL.
 *  - A tfs_io serves one caller at a time: calls on one handle from several threads are
 *    serialized (each waits for the other's call). For parallel IO open one tfs_io per thread.
 *  - tfs_io_close drops requests not yet completed (waiting for reads in flight), frees the
 *    staging memory and closes the files. */
typedef struct tfs_io tfs_io;

typedef struct tfs_io_options {
  size_t struct_size;
  const char *backend;   /* NULL/"": io_uring, else pread; "io_uring" or "pread" to force */
  int32_t block_size;    /* O_DIRECT alignment, a power of two; 0: 4096 */
  int32_t queue_depth;   /* reads in flight at most; 0: 128 */
  int32_t max_io_bytes;  /* largest single read (rounded up to block_size); 0: 128 KiB */
  int64_t staging_bytes; /* staging memory; 0: queue_depth * max_io_bytes */
  int32_t no_coalesce;   /* nonzero: one read (or more) per request, never merged with others */
  int32_t device;        /* -1: host destinations only; else the CUDA ordinal whose memory requests
                            may target (TFS_ENOTSUP where CUDA or that GPU is unavailable). Note a
                            zeroed struct means device 0; opts NULL means -1 */
  int32_t coalesce_gap;  /* also merge reads of a file at most this many bytes apart (after
                            alignment; the gap is read and dropped); 0: only touching blocks */
} tfs_io_options;

/* Opens n_paths regular files (O_RDONLY | O_DIRECT, without O_DIRECT where the file system
 * refuses it), indexed 0..n_paths-1 in requests; a FIFO, device, socket or directory is
 * TFS_EINVAL, refused without blocking. The tfs_io owns and closes them. opts may be NULL. */
tfs_status tfs_io_open(const char *const *paths, int32_t n_paths, const tfs_io_options *opts, tfs_io **out);

typedef struct tfs_io_request {
  int32_t file;          /* index into the paths of tfs_io_open */
  int64_t offset;        /* byte offset in that file, >= 0 */
  int64_t length;        /* bytes, > 0; offset + length <= the file's size */
  void *dst;             /* length bytes of host memory, or of device memory if dst_is_device */
  int32_t dst_is_device; /* nonzero: dst is device memory (a tfs_io opened with device >= 0) */
} tfs_io_request;

/* Queues n requests (reqs may be NULL when n is 0). Checks every request first: on a bad one
 * (TFS_EINVAL, the message names reqs[i] and the field) nothing is queued. Never waits for IO. */
tfs_status tfs_io_submit(tfs_io *io, const tfs_io_request *reqs, int64_t n);
/* Waits for every submitted request (see above). cuda_stream (a cudaStream_t, NULL for the legacy
 * default stream) orders the device copies; it is ignored by a tfs_io with host destinations only. */
tfs_status tfs_io_complete(tfs_io *io, void *cuda_stream);
/* Counters as JSON ("backend", "requests", "reads", "bytes_requested", "bytes_read",
 * "device_requests", "completion_kernels", "latency_histogram_us_log2", plus "files", "device" and
 * "pending_requests"), copied as by tfs_stats_json. */
tfs_status tfs_io_stats_json(tfs_io *io, char *buf, size_t cap, size_t *needed);
tfs_status tfs_io_close(tfs_io *io);

/* Heterogeneous graphs (format version 5; docs: ARCHITECTURE.md "Types"). Node types are named,
 * edge types are "src:rel:dst"; ids are local to their type. One store handle serves every type:
 * the calls above act on its first node type with features, these name the type. A one-type
 * store answers them too, with NULL or "" naming its only node type (and edge type).
 * TFS_ENOENT for a type or feature the dataset lacks (the message lists what it has). */
typedef struct tfs_hetero_sampler tfs_hetero_sampler;
struct tfs_hetero_sample;

/* {"node_types": [{"name", "count", "features": [{"name", "of", "dtype", "dim", "row_bytes",
 * "rows", "scalar", "default"}], "labels", "num_classes", "splits": {name: count}}],
 * "edge_types": [{"key", "src", "rel", "dst", "count", "features"}], "typed"}, copied as by
 * tfs_stats_json. "typed" is true when the types are named by the dataset's maker (several
 * types, or one typed type: a one-type HeteroData or GraphBolt dataset), false for a homogeneous
 * graph (its node type is "node"). */
tfs_status tfs_types_json(tfs_store *store, char *buf, size_t cap, size_t *needed);
/* Rows of ids (of node_type) of its feature `feature` (NULL: the type's default, served through
 * the memory tiers; others are read from disk) into dst (dst_bytes = n * the feature's row_bytes). */
tfs_status tfs_gather_typed(tfs_store *store, const char *node_type, const char *feature, const int64_t *ids,
                            int64_t n, void *dst, int64_t dst_bytes);
/* tfs_gather_device_ids for node_type's default feature (its tier stack). */
tfs_status tfs_gather_typed_device_ids(tfs_store *store, const char *node_type, const int64_t *ids_device,
                                       int64_t n, void *dst_device, int64_t dst_bytes, void *cuda_stream);
/* Rows of edge ids (of edge_type) of its edge feature `feature`, from disk. */
tfs_status tfs_gather_edge_feature(tfs_store *store, const char *edge_type, const char *feature,
                                   const int64_t *ids, int64_t n, void *dst, int64_t dst_bytes);
tfs_status tfs_labels_typed(tfs_store *store, const char *node_type, const int64_t *ids, int64_t n, int64_t *out);
tfs_status tfs_split_typed(tfs_store *store, const char *node_type, const char *name, int64_t *out, int64_t cap,
                           int64_t *count);
/* tfs_hottest and tfs_place_ids for node_type's tier stack (hotness: one count per node of that
 * type; ids of that type). Multi-GPU ownership of every type is decided from these. */
tfs_status tfs_hottest_typed(tfs_store *store, const char *node_type, const uint32_t *hotness, int64_t n, int64_t k,
                             int64_t *out, int64_t *count);
tfs_status tfs_place_ids_typed(tfs_store *store, const char *node_type, const int64_t *ids, int64_t n);
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
/* One static host tier for the processes of a host, in a file in shared memory (e.g. under
 * /dev/shm). tfs_share_host_tier refills node_type's host tier (NULL: the store's own stack) with
 * ids, hottest first, as many as its budget holds, in a new file at path (which must not exist;
 * on error none is left); tfs_map_host_tier makes it the tier another process filled there,
 * mapped read-only (TFS_EINVAL naming the file when it is not ready, holds rows of another width
 * or is damaged). The GPU tier keeps its rows. Removing the file once every process has mapped it
 * is the caller's; the mappings stay valid. */
tfs_status tfs_share_host_tier(tfs_store *store, const char *node_type, const char *path, const int64_t *ids, int64_t n);
tfs_status tfs_map_host_tier(tfs_store *store, const char *node_type, const char *path);
/* options_json: {"fanouts": {"src:rel:dst": [per hop, -1 = all], ... every edge type, one length},
 * "replace": false, "seed": 0, "workers": 0}. The k-th sample draws with seed + k. */
tfs_status tfs_hetero_sampler_create(tfs_store *store, const char *options_json, tfs_hetero_sampler **out);
tfs_status tfs_hetero_sampler_free(tfs_hetero_sampler *sampler);
/* Samples the k-hop neighborhood of seeds, ids of seed_type. Per node type, nodes are the seeds
 * first (seed type), then each hop's new nodes; per edge type, edges (row: src-type local id ->
 * col: dst-type local id) hop after hop. */
tfs_status tfs_hetero_sample(tfs_hetero_sampler *sampler, const char *seed_type, const int64_t *seeds, int64_t n,
                             struct tfs_hetero_sample **out);
/* {"nodes_per_hop": {node type: [seeds, hop 1, ...]}, "edges_per_hop": {edge type: [...]},
 * "edge_ids": {edge type: true when it has edge ids}}: the sizes of the lists below. */
tfs_status tfs_hetero_sample_json(struct tfs_hetero_sample *sample, char *buf, size_t cap, size_t *needed);
/* Copies node_type's sampled node ids (sum of its nodes_per_hop). */
tfs_status tfs_hetero_sample_nodes(struct tfs_hetero_sample *sample, const char *node_type, int64_t *out);
/* Copies edge_type's sampled edges (sum of its edges_per_hop); edge_ids may be NULL. */
tfs_status tfs_hetero_sample_edges(struct tfs_hetero_sample *sample, const char *edge_type, int64_t *row,
                                   int64_t *col, int64_t *edge_ids);
tfs_status tfs_hetero_sample_free(struct tfs_hetero_sample *sample);
/* Planned epochs of a graph session (tfs_epochs_open with fanouts per edge type): the sample of
 * batch `batch` of epoch `epoch` (of a link plan, its link sample), read from the plan's samples
 * file as tfs_epochs_sample reads it, every packed node type's nodes checked against the plan. */
tfs_status tfs_epochs_sample_hetero(tfs_epochs *epochs, int64_t epoch, int64_t batch,
                                    struct tfs_hetero_sample **out);
/* tfs_epochs_gather of node_type's rows (NULL or "": the plan's only type): nodes are the batch's
 * sampled nodes of that type; TFS_ENOENT for a type without features. */
tfs_status tfs_epochs_gather_typed(tfs_epochs *epochs, int64_t epoch, int64_t batch, const char *node_type,
                                   const int64_t *nodes, int64_t n, void *dst, int64_t dst_bytes);
/* tfs_epochs_gather_typed into device memory of the store's CUDA device, ordered on cuda_stream
 * (a cudaStream_t; NULL for the legacy default stream): rows the memory tiers hold are copied on
 * the device, the batch's packed rows read in one read into pinned memory, checked, and scattered
 * there by a kernel. nodes are host memory. Returns once the rows are in place on the stream.
 * TFS_ENOTSUP where the store has no GPU path. */
tfs_status tfs_epochs_gather_device(tfs_epochs *epochs, int64_t epoch, int64_t batch, const char *node_type,
                                    const int64_t *nodes, int64_t n, void *dst_device, int64_t dst_bytes,
                                    void *cuda_stream);
/* Link sampling of a heterogeneous graph (tfs_sample_edges for one edge type; docs: ARCHITECTURE.md
 * "Link sampling"): samples around the n seed edges (src[i], dst[i]) of edge_type ("src:rel:dst";
 * NULL or "" for the only one) — src ids of its src node type, dst ids of its dst node type — with
 * the sampler's fanouts and next seed (node and link samples count alike). labels as in
 * tfs_sample_edges. link_options_json (NULL or "": no negatives) is {"neg_sampling": "binary" |
 * "triplet" | null, "amount": 1, "strict": false, "exclude_seed_edges": false,
 * "reverse_edge_types": {"src:rel:dst": "dst:rev:src"} (with exclude_seed_edges, the seed edges'
 * reverses in that edge type too)}; negatives are nodes of the edge type's node types. The seeds of
 * each node type are the distinct endpoints of that type, ascending; tfs_hetero_sample_* read the
 * sample, tfs_hetero_sample_link_* its label edges, local ids of the src type (sources) and dst type
 * (destinations). TFS_ENOENT names an unknown edge type, TFS_ERANGE an endpoint outside its type,
 * TFS_EINVAL a bad option, an unknown or mistyped reverse edge type or labels of another length. */
tfs_status tfs_hetero_sample_from_edges(tfs_hetero_sampler *sampler, const char *edge_type, const int64_t *src,
                                        const int64_t *dst, const int64_t *labels, int64_t n,
                                        const char *link_options_json, struct tfs_hetero_sample **out);
/* tfs_sample_link_json of a sample drawn from edges; TFS_ENOENT for one drawn from nodes. */
tfs_status tfs_hetero_sample_link_json(struct tfs_hetero_sample *sample, char *buf, size_t cap, size_t *needed);
/* tfs_sample_link_copy of a sample drawn from edges (same arrays and layout). */
tfs_status tfs_hetero_sample_link_copy(struct tfs_hetero_sample *sample, int64_t *edge_label_index,
                                       int64_t *edge_label, int64_t *src_index, int64_t *dst_pos_index,
                                       int64_t *dst_neg_index);
/* Places every node type's memory tiers by a profile: request_json {"node_type" (the seeds'),
 * "split" ("train"), "fanouts": {"src:rel:dst": [...]}, "batch_size", "batches", "seed",
 * "replace"} samples that many batches of the split as a shuffling loader would, counts how often
 * each (type, row) is reached, and fills each type's GPU then host tier with its most reached
 * rows. Answers {"batches", "seconds", "node_types": {type: {"rows_reached", "memory_rows",
 * "reached_in_memory"}}}, copied as by tfs_stats_json. */
tfs_status tfs_place_hetero_json(tfs_store *store, const char *request_json, char *buf, size_t cap, size_t *needed);

#ifdef __cplusplus
}
#endif

#endif /* TIERFS_H */
