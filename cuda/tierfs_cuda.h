/* tierfs_cuda.h: the plain-C ABI of libtierfs_cuda.so, the CUDA shim of tierfs.
 *
 * The Go core dlopens the library at run time and resolves these symbols; nothing else links
 * against it. Every function returns 0 on success or a CUDA error code (cudaError_t) on failure;
 * tfc_last_error() then holds a message naming the call, valid on the calling thread until its
 * next failing call. Every function that touches a device takes its ordinal and makes it current
 * on the calling thread first (CUDA's current device is per thread).
 *
 * Pointers named "device-accessible" may be device memory or pinned host memory mapped into the
 * device's address space (cudaHostRegister / tfc_host_alloc), read over PCIe (UVA). Streams and
 * events are opaque handles (cudaStream_t, cudaEvent_t); a NULL stream is the legacy default one.
 * max_blocks caps a kernel's grid, so a kernel occupies a chosen share of the SMs; 0 picks
 * enough blocks to fill the device.
 *
 * The ABI version changes whenever a signature or a meaning changes. */
#ifndef TIERFS_CUDA_H
#define TIERFS_CUDA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TFC_ABI_VERSION 3

/* One contiguous copy of the completion step: len bytes from src to dst (both device-accessible). */
typedef struct tfc_piece {
  uint64_t src;
  uint64_t dst;
  uint64_t len;
} tfc_piece;

int tfc_abi_version(void);
const char *tfc_last_error(void);

int tfc_device_count(int *count);
/* name gets at most name_len bytes including the terminating NUL. */
int tfc_device_info(int dev, char *name, int name_len, int *sm_count, int *cc_major, int *cc_minor,
                    uint64_t *free_bytes, uint64_t *total_bytes);

int tfc_malloc(int dev, uint64_t bytes, void **ptr);
int tfc_free(int dev, void *ptr);
/* Pinned host memory, mapped into every device's address space. */
int tfc_host_alloc(int dev, uint64_t bytes, void **ptr);
int tfc_host_free(int dev, void *ptr);
/* Pins [ptr, ptr+bytes) (mmap'ed or C memory, never a Go slice) and maps it for the devices;
 * *dev_ptr is the address kernels use for ptr. */
int tfc_host_register(int dev, void *ptr, uint64_t bytes, void **dev_ptr);
int tfc_host_unregister(int dev, void *ptr);
/* Asynchronous copy on stream between any two of host, pinned host and device memory. */
int tfc_memcpy(int dev, void *dst, const void *src, uint64_t bytes, void *stream);
int tfc_memset(int dev, void *dst, int value, uint64_t bytes, void *stream);

int tfc_stream_create(int dev, void **stream);
int tfc_stream_destroy(int dev, void *stream);
int tfc_stream_sync(int dev, void *stream);
int tfc_event_create(int dev, void **event);
int tfc_event_destroy(int dev, void *event);
int tfc_event_record(int dev, void *event, void *stream);
int tfc_event_sync(int dev, void *event);
/* *done = 1 when every work recorded before the event has finished, else 0. */
int tfc_event_query(int dev, void *event, int *done);
int tfc_event_elapsed_ms(int dev, void *start, void *end, float *ms);
int tfc_stream_wait_event(int dev, void *stream, void *event);

/* Row gather: for i in [0, n), row (dst_rows ? dst_rows[i] : i) of dst gets row
 * (src_rows ? src_rows[i] : i) of src; rows are row_bytes long. Loads are as wide as the
 * alignment of src, dst and row_bytes allows (16 bytes at best); rows narrower than a warp's
 * width share a warp. src, dst and the index arrays are device-accessible. */
int tfc_gather_rows(int dev, const void *src, uint64_t row_bytes, const int64_t *src_rows,
                    const int64_t *dst_rows, int64_t n, void *dst, int max_blocks, void *stream);

/* A memory tier's index as tiers/host.Index builds it, in device-accessible memory: the ids held,
 * ascending (slot s holds ids[s]), and an open-addressing table of int32 positions into ids (-1
 * empty) of mask+1 entries, probed linearly from fmix64(id) & mask (MurmurHash3's finalizer). The
 * row of slot s is at rows + s*row_bytes. count 0 is an empty tier (ids and table unused).
 * This is the one definition of the layout: Go's cuda.TierIndex is checked against it, field by
 * field, when the binding compiles. */
typedef struct tfc_tier_index {
  const int64_t *ids;
  const int32_t *table;
  uint64_t mask;
  int64_t count;
  const void *rows;
} tfc_tier_index;

#define TFC_MAX_SPLIT_TIERS 2

/* Split and gather in one pass. For i in [0, n), ids[i] is looked up in tiers[0], then tiers[1]
 * (ntiers <= TFC_MAX_SPLIT_TIERS; the array is read at the call; a tier of count 0 holds
 * nothing), and the first tier holding it copies its row to dst + i*row_bytes. Ids no tier holds
 * are appended, in no particular order, to miss_ids / miss_pos (capacity n each). When the kernel
 * ends, host_counts (device-accessible, e.g. mapped pinned memory; TFC_SPLIT_COUNTS entries) has
 * the kernel's counts added: [0] += the number of misses, [2 + t] += the rows tier t served;
 * and, when an id was outside [0, num_nodes), [1] = 1 + the smallest such i (such rows are
 * zeroed and not listed). Zero host_counts before a call to read one call's counts; leave it to
 * add up the calls of a stream. scratch is device memory of TFC_SPLIT_SCRATCH entries, zero
 * before the first call; the kernel leaves it zero again, so calls on one stream can share it and
 * host_counts (calls that may overlap need their own). ids, dst and the miss arrays are
 * device-accessible. */
#define TFC_SPLIT_COUNTS (2 + TFC_MAX_SPLIT_TIERS)
#define TFC_SPLIT_SCRATCH (TFC_SPLIT_COUNTS + 1)
int tfc_split_gather(int dev, const int64_t *ids, int64_t n, int64_t num_nodes, const tfc_tier_index *tiers,
                     int ntiers, uint64_t row_bytes, void *dst, int64_t *miss_ids, int64_t *miss_pos,
                     unsigned long long *scratch, unsigned long long *host_counts, int max_blocks, void *stream);

/* Waits for every piece of work on the device (cudaDeviceSynchronize). */
int tfc_device_sync(int dev);

/* Completion kernel: performs pieces[0..n) (a device-accessible array), one warp per piece. */
int tfc_copy_pieces(int dev, const tfc_piece *pieces, int64_t n, int max_blocks, void *stream);

/* Sampling, step 1: deg[i] = indptr[nodes[i]+1] - indptr[nodes[i]]. */
int tfc_sample_degrees(int dev, const int64_t *indptr, const int64_t *nodes, int64_t n,
                       int64_t *deg, int max_blocks, void *stream);
/* Sampling, step 2: for node i, the positions of its sampled neighbors go to pos[off[i]..off[i+1])
 * and the neighbors to out[off[i]..off[i+1]], exactly as topology.SampleNeighbors picks them
 * (same generator, same Floyd or with-replacement draws, ascending positions): the GPU and the
 * host sampler give the same sample. indices holds int32 (index_bytes 4) or int64 (8) ids. */
int tfc_sample_hop(int dev, const int64_t *indptr, const void *indices, int index_bytes,
                   const int64_t *nodes, const int64_t *deg, const int64_t *off, int64_t n,
                   int fanout, int replace, uint64_t seed, int hop, int64_t *pos, int64_t *out,
                   int max_blocks, void *stream);

/* ---- GPU-initiated reads (gpuio's gpu-uring backend) ----
 *
 * An io_uring whose rings live in pinned host memory the process provides (IORING_SETUP_NO_MMAP),
 * mapped for the device, and whose submission ring a kernel thread polls (IORING_SETUP_SQPOLL).
 * Every pointer below is a device address of that mapped memory. The kernel of tfc_uring_read is
 * the ring's only producer and only consumer while it runs: the host must not touch the SQ tail
 * or the CQ head meanwhile (it may wake the SQ thread with io_uring_enter). */
typedef struct tfc_uring {
  uint32_t *sq_head, *sq_tail, *sq_flags; /* the SQ ring's head (the kernel thread's), tail, flags */
  uint32_t *cq_head, *cq_tail;
  uint32_t sq_mask, sq_entries, cq_mask, cq_entries;
  void *sqes;              /* sq_entries 64-byte SQEs; the SQ array (if any) maps slot i to SQE i */
  const void *cqes;        /* cq_entries 16-byte CQEs */
  uint64_t staging_user;   /* the process's address of staging slot 0: what an SQE names */
  const void *staging_dev; /* the device's address of the same byte */
  uint64_t slot_bytes;     /* staging slot size; slot s starts slot_bytes * s after slot 0 */
  uint32_t slots;          /* staging slots, at most TFC_URING_MAX_SLOTS */
  uint32_t fixed_files;    /* 1: SQEs name registered files by index (IOSQE_FIXED_FILE) */
  uint32_t buf_index;      /* registered buffer holding every slot (READ_FIXED) */
  uint32_t pad;
  uint64_t timeout_ns;     /* give up when no completion arrives for this long (0: 10 s) */
} tfc_uring;

#define TFC_URING_MAX_SLOTS 4096

/* One read: len bytes (<= slot_bytes) at offset of file, both aligned as the file's O_DIRECT
 * needs; it succeeds when the CQE reports at least need bytes; then its pieces
 * pieces[first_piece, first_piece + npieces) copy from the read's bytes (src = offset in the read)
 * to dst (device-accessible). */
typedef struct tfc_uring_io {
  int32_t file;
  uint32_t len;
  uint64_t offset;
  uint32_t need;
  uint32_t npieces;
  uint64_t first_piece;
} tfc_uring_io;

/* What tfc_uring_read did, written by its kernel (device-accessible, e.g. mapped pinned memory;
 * zero it and set first_failed to -1 before the call). */
typedef struct tfc_uring_status {
  int64_t completed;    /* reads reaped */
  int64_t failed;       /* reads whose CQE reported an error or fewer than need bytes */
  int64_t first_failed; /* index of one failed read, or -1 */
  int32_t first_res;    /* its CQE's res: -errno, or the bytes it read */
  int32_t timed_out;    /* 1: no completion came within timeout_ns; the ring is unusable */
  int64_t sq_waits;     /* times the kernel found the SQ full and waited for the SQ thread */
} tfc_uring_status;

/* Performs reads[0, n) through ring with one thread block of threads threads (0: 512): writes
 * their SQEs as staging slots free up, polls the CQ and copies each completed read's pieces.
 * Returns once the kernel is enqueued on stream; status is final when it has run. */
int tfc_uring_read(int dev, const tfc_uring *ring, const tfc_uring_io *reads, int64_t n, const tfc_piece *pieces,
                   tfc_uring_status *status, int threads, void *stream);

#ifdef __cplusplus
}
#endif
#endif
