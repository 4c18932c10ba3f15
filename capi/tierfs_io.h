/* tierfs_io.h — datasets made (synth, ingest), verified and upgraded; the asynchronous IO stack.
 * Part of the C ABI of tierfs: include tierfs.h (which includes this header and its
 * siblings), whose Conventions block holds for every call here. */
#ifndef TIERFS_IO_H
#define TIERFS_IO_H

#include "tierfs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Builds a dataset; options_json holds the fields of `tierfs synth` / `tierfs ingest` (see
 * README), e.g. {"out": "/data/g", "nodes": 1000000, "avg_degree": 10, "dim": 128, "seed": 1}.
 * An "out" that holds a dataset or other files is refused (TFS_EINVAL naming it) unless
 * "force": true; the new dataset is written beside it and swapped in only once complete.
 * tfs_ingest of a heterogeneous graph: {"node_types": [{"name", "num_nodes", "features":
 * [{"name", "path", "dtype"}], "labels", "splits"}], "edge_types": [{"src", "rel", "dst",
 * "edges", "edge_columns", "edge_features": [{"name", "path", "dtype"}]}], "out", "force",
 * "device_paths", "features_in_place", "store_dtype"} (no other keys); ids in each edge list are
 * local ids of its src and dst types. "store_dtype" ("float16" or "bfloat16"; tfs_ingest of either
 * form) stores the float32 features at that dtype, rounded to nearest even; a finite value float16
 * holds only as Inf is TFS_EINVAL naming the feature, row, column and value. */
tfs_status tfs_synth(const char *options_json);
tfs_status tfs_ingest(const char *options_json);

/* tfs_synth and tfs_ingest reporting their progress to fn(ctx, ...) (fn NULL: none). */
tfs_status tfs_synth_progress(const char *options_json, tfs_progress_fn fn, void *ctx);
tfs_status tfs_ingest_progress(const char *options_json, tfs_progress_fn fn, void *ctx);

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

#ifdef __cplusplus
}
#endif

#endif /* TIERFS_IO_H */
