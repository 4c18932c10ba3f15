/* tierfs.h — the C ABI of tierfs, a tiered GPU / host-memory / SSD feature store for
 * out-of-core GNN training. Library: libtierfs.so (built by `make lib`).
 *
 * Conventions
 *  - Every function returns a tfs_status; TFS_OK is 0. Codes never change meaning.
 *  - On failure, tfs_last_error() returns a message for the calling thread, valid until that
 *    thread's next tierfs call.
 *  - Handles (tfs_store*, tfs_sampler*, struct tfs_sample*) are opaque and not pointers to
 *    memory; free each with its _close/_free function exactly once (a closed or freed handle
 *    gives TFS_ECLOSED). A store may be used from many threads at once; a sampler or a sample
 *    from one thread at a time.
 *  - Option structs start with their own size: set .struct_size = sizeof(the struct); zero
 *    fields take defaults. Newer libraries accept older, smaller structs (struct_size must cover
 *    at least the first field after it, and not exceed the library's sizeof).
 *  - Buffers are the caller's; the library never keeps a pointer after a call returns.
 *  - Load the library once per process and do not fork after loading it (it runs a Go runtime).
 */
#ifndef TIERFS_H
#define TIERFS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TFS_ABI_VERSION 1

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
/* A sample is a struct tfs_sample* (no typedef: the name tfs_sample is the sampling function, as
 * with struct stat and stat()). */
struct tfs_sample;

/* TFS_ABI_VERSION of the loaded library. */
int tfs_abi_version(void);
/* Message of the calling thread's last failed call ("" if none). */
const char *tfs_last_error(void);

typedef struct tfs_open_options {
  size_t struct_size;
  const char *feature;           /* NULL: the dataset's first feature */
  int64_t host_cache_bytes;      /* host tier budget; 0: no host tier */
  int64_t topology_memory_bytes; /* topology in memory when it fits; 0: 1 GiB; <0: keep on disk */
  const char *io_backend;        /* NULL/"": io_uring, else pread; "io_uring" or "pread" to force */
  int32_t queue_depth;           /* reads in flight per IO stack; 0: 128 */
  int32_t max_concurrent_io;     /* IO stacks; 0: number of CPUs */
  int32_t verify_reads;          /* nonzero: check every block read against its checksum */
  int32_t device;                /* CUDA ordinal of the GPU path; -1: the default, 0 */
  int64_t gpu_cache_bytes;       /* GPU tier budget; the store runs on the host where no GPU path
                                    can start (tfs_stats_json says why) */
  const char *gpu_topology;      /* NULL/"": sample on the host; "device": topology in GPU memory;
                                    "pinned": in pinned host memory read over PCIe */
  const char *host_policy;       /* NULL/"" or "static": host tier placed once (tfs_place refills);
                                    "sieve": a cache admitting rows read from disk, SIEVE eviction */
} tfs_open_options;

/* Opens the dataset directory path. opts may be NULL. */
tfs_status tfs_open(const char *path, const tfs_open_options *opts, tfs_store **out);
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

/* out[i] = label of ids[i] (-1 unlabelled). */
tfs_status tfs_labels(tfs_store *store, const int64_t *ids, int64_t n, int64_t *out);
/* Node ids of a split ("train", "val", "test"): *count is set to its size; up to cap ids are
 * copied to out (out may be NULL with cap 0 to ask the size). */
tfs_status tfs_split(tfs_store *store, const char *name, int64_t *out, int64_t cap, int64_t *count);

/* Refills the host tier by hotness (n == num_nodes counts; NULL ranks by in-degree). */
tfs_status tfs_place(tfs_store *store, const uint32_t *hotness, int64_t n);

/* Statistics as JSON. Copies up to cap bytes (NUL-terminated when it fits) and sets *needed to
 * the length plus one. */
tfs_status tfs_stats_json(tfs_store *store, char *buf, size_t cap, size_t *needed);

/* Throughput-per-dollar advice (`tierfs advise`): runs the store's sampler and gather for a few
 * batches with its caches as they are, optionally probes this machine, and evaluates Hyperion's
 * TPC model for 1..max_ssds SSDs. request_json holds the keys of `tierfs advise`, e.g.
 * {"fanouts": [10, 5], "batch_size": 1024, "ssd_price": 150, "machine_price": 3000,
 *  "measure": true}; the report (JSON, as `tierfs advise --json`) is copied to buf when it fits
 * (NUL-terminated) and *needed is set to its length plus one. When it does not fit, buf gets ""
 * and the report is kept: calling again with the same request_json and cap >= *needed returns
 * it without measuring again. Takes seconds (it runs real batches). */
tfs_status tfs_advise_json(tfs_store *store, const char *request_json, char *buf, size_t cap, size_t *needed);

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
tfs_status tfs_sample_free(struct tfs_sample *sample);

/* Builds a dataset; options_json holds the fields of `tierfs synth` / `tierfs ingest` (see
 * README), e.g. {"out": "/data/g", "nodes": 1000000, "avg_degree": 10, "dim": 128, "seed": 1}. */
tfs_status tfs_synth(const char *options_json);
tfs_status tfs_ingest(const char *options_json);

/* Mounts a read-only view of the store's tiers and counters at dir (FUSE); unmounted by
 * tfs_unmount or tfs_close. */
tfs_status tfs_mount(tfs_store *store, const char *dir);
tfs_status tfs_unmount(tfs_store *store);

#ifdef __cplusplus
}
#endif

#endif /* TIERFS_H */
