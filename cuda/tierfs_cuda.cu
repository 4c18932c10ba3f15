// tierfs_cuda.cu: the CUDA shim of tierfs (libtierfs_cuda.so). Contracts are in tierfs_cuda.h.
#include "tierfs_cuda.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

namespace {

thread_local char last_error[512];

// fail records what failed and returns its code; ok passes success through.
int fail(cudaError_t e, const char *call, const char *detail) {
  snprintf(last_error, sizeof last_error, "%s%s%s: %s (%s, CUDA error %d)", call, detail[0] ? " " : "",
           detail, cudaGetErrorString(e), cudaGetErrorName(e), (int)e);
  cudaGetLastError();  // a sticky error stays; a plain one must not fail the next launch
  return (int)e;
}

#define CHECK(expr, detail)                                 \
  do {                                                      \
    cudaError_t e_ = (expr);                                \
    if (e_ != cudaSuccess) return fail(e_, #expr, detail); \
  } while (0)

#define ENTER(dev) CHECK(cudaSetDevice(dev), "")

// ONE_CALL defines the shim function name(params), whose first parameter is int dev: it makes dev
// current and makes one CUDA call, returning 0 or, on failure, what fail recorded.
#define ONE_CALL(name, params, call) \
  int name params {                  \
    ENTER(dev);                      \
    CHECK(call, "");                 \
    return 0;                        \
  }

// sm_count caches each device's SM count (asked once: the query costs as much as a launch).
int sm_count(int dev) {
  static int cache[256];
  if (dev < 0 || dev >= 256) return 0;
  if (cache[dev] == 0) {
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cache[dev] = sms;
  }
  return cache[dev];
}

int grid_for(int dev, int max_blocks, int64_t work_blocks) {
  int sms = sm_count(dev);
  int64_t g = max_blocks > 0 ? max_blocks : (int64_t)(sms > 0 ? sms : 16) * 8;
  if (work_blocks < g) g = work_blocks;
  return g < 1 ? 1 : (int)g;
}

// by_width calls launch with a value of the widest load type (16, 8, 4, 2 or 1 bytes) that the
// alignment bits in a allow: the kernels' template argument W.
template <typename F>
int by_width(uint64_t a, F launch) {
  if ((a & 15) == 0) return launch(uint4{});
  if ((a & 7) == 0) return launch(uint2{});
  if ((a & 3) == 0) return launch(uint32_t{});
  if ((a & 1) == 0) return launch(uint16_t{});
  return launch(char{});
}

// Row kernels (gather, split-gather) run kRowThreads threads a block; each group of `lanes`
// threads (a power of two, at most a warp and no more than the row's W-wide words) copies one row.
constexpr int kRowThreads = 256;

struct RowLaunch {
  int lanes;  // threads a row
  int grid;   // blocks
};

// row_launch is the launch of a row kernel over n rows of row_bytes, loading W at a time.
template <typename W>
RowLaunch row_launch(int dev, int max_blocks, uint64_t row_bytes, int64_t n) {
  int64_t vecs = row_bytes / sizeof(W);
  int lanes = 1;
  while (lanes < 32 && lanes < vecs) lanes *= 2;
  int64_t rows_per_block = kRowThreads / lanes;
  return RowLaunch{lanes, grid_for(dev, max_blocks, (n + rows_per_block - 1) / rows_per_block)};
}

// ---- gather ----

// W is the load width; lanes consecutive threads share one row. Each group of `lanes` threads
// copies one row, a warp holds 32/lanes rows at a time.
template <typename W>
__global__ void gather_kernel(const char *__restrict__ src, uint64_t row_bytes,
                              const int64_t *__restrict__ src_rows, const int64_t *__restrict__ dst_rows,
                              int64_t n, char *__restrict__ dst, int lanes) {
  const int64_t vecs = row_bytes / sizeof(W);
  const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t groups = (gridDim.x * (int64_t)blockDim.x) / lanes;
  const int lane = threadIdx.x % lanes;
  for (int64_t i = tid / lanes; i < n; i += groups) {
    const int64_t s = src_rows ? src_rows[i] : i;
    const int64_t d = dst_rows ? dst_rows[i] : i;
    const W *in = reinterpret_cast<const W *>(src + s * row_bytes);
    W *o = reinterpret_cast<W *>(dst + d * row_bytes);
    for (int64_t v = lane; v < vecs; v += lanes) o[v] = in[v];
  }
}

template <typename W>
int launch_gather(int dev, const void *src, uint64_t row_bytes, const int64_t *src_rows,
                  const int64_t *dst_rows, int64_t n, void *dst, int max_blocks, cudaStream_t st) {
  const RowLaunch l = row_launch<W>(dev, max_blocks, row_bytes, n);
  gather_kernel<W><<<l.grid, kRowThreads, 0, st>>>((const char *)src, row_bytes, src_rows, dst_rows, n,
                                                   (char *)dst, l.lanes);
  CHECK(cudaGetLastError(), "(gather kernel launch)");
  return 0;
}

// ---- split and gather ----

struct SplitTiers {
  tfc_tier_index t[TFC_MAX_SPLIT_TIERS];
  int n;
};

__device__ __forceinline__ uint64_t fmix64(int64_t id) {
  uint64_t x = (uint64_t)id;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

// probe returns the slot of id (in [0, num_nodes)) in x, or -1 (the same walk as
// tiers/host.Index.Slot). A tier holding every node holds them in id order: the slot is the id.
__device__ __forceinline__ int64_t probe(const tfc_tier_index &x, int64_t id, int64_t num_nodes) {
  if (x.count == num_nodes) return id;
  if (x.count == 0) return -1;
  for (uint64_t h = fmix64(id) & x.mask;; h = (h + 1) & x.mask) {
    const int32_t s = x.table[h];
    if (s < 0) return -1;
    if (x.ids[s] == id) return s;
  }
}

// Every thread of a group of `lanes` looks its id up (the same addresses: one transaction), so
// the group needs no shuffle; lane 0 of the group records misses, bad ids and tier hits (per
// block in shared memory, added to counts once at the end).
template <typename W>
__global__ void split_gather_kernel(const int64_t *__restrict__ ids, int64_t n, int64_t num_nodes, SplitTiers tiers,
                                    uint64_t row_bytes, char *__restrict__ dst, int64_t *__restrict__ miss_ids,
                                    int64_t *__restrict__ miss_pos, unsigned long long *counts,
                                    unsigned long long *host_counts, int lanes) {
  __shared__ unsigned int hits[TFC_MAX_SPLIT_TIERS];
  if (threadIdx.x < TFC_MAX_SPLIT_TIERS) hits[threadIdx.x] = 0;
  __syncthreads();
  const int64_t vecs = row_bytes / sizeof(W);
  const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t groups = (gridDim.x * (int64_t)blockDim.x) / lanes;
  const int lane = threadIdx.x % lanes;
  for (int64_t i = tid / lanes; i < n; i += groups) {
    const int64_t id = ids[i];
    W *o = reinterpret_cast<W *>(dst + i * row_bytes);
    if ((uint64_t)id >= (uint64_t)num_nodes) {
      for (int64_t v = lane; v < vecs; v += lanes) o[v] = W{};
      if (lane == 0) atomicMax(&counts[1], (unsigned long long)(n - i));
      continue;
    }
    const char *src = nullptr;
    int tier = 0;
    for (; tier < tiers.n; tier++) {
      const int64_t s = probe(tiers.t[tier], id, num_nodes);
      if (s >= 0) {
        src = (const char *)tiers.t[tier].rows + s * row_bytes;
        break;
      }
    }
    if (!src) {
      if (lane == 0) {
        const unsigned long long k = atomicAdd(&counts[0], 1ull);
        miss_ids[k] = id;
        miss_pos[k] = i;
      }
      continue;
    }
    if (lane == 0) atomicAdd(&hits[tier], 1u);
    const W *in = reinterpret_cast<const W *>(src);
    for (int64_t v = lane; v < vecs; v += lanes) o[v] = in[v];
  }
  __syncthreads();
  if (threadIdx.x < tiers.n && hits[threadIdx.x]) atomicAdd(&counts[2 + threadIdx.x], (unsigned long long)hits[threadIdx.x]);
  // The last block to finish publishes the counters to host_counts and zeroes them for the next
  // call (the threadfence-reduction pattern): no memset or copy around the launch.
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&counts[TFC_SPLIT_COUNTS], 1ull) == gridDim.x - 1;
  __syncthreads();
  if (last && threadIdx.x < TFC_SPLIT_COUNTS) {
    __threadfence();
    const unsigned long long v = atomicExch(&counts[threadIdx.x], 0ull);
    if (threadIdx.x == 1) {
      if (v) host_counts[1] = (unsigned long long)n - v + 1;  // the first bad position, plus one
    } else {
      host_counts[threadIdx.x] += v;  // one kernel of a stream at a time: a plain add is safe
    }
  }
  if (last && threadIdx.x == 0) counts[TFC_SPLIT_COUNTS] = 0;
}

template <typename W>
int launch_split_gather(int dev, const int64_t *ids, int64_t n, int64_t num_nodes, const SplitTiers &tiers,
                        uint64_t row_bytes, void *dst, int64_t *miss_ids, int64_t *miss_pos,
                        unsigned long long *counts, unsigned long long *host_counts, int max_blocks,
                        cudaStream_t st) {
  const RowLaunch l = row_launch<W>(dev, max_blocks, row_bytes, n);
  split_gather_kernel<W><<<l.grid, kRowThreads, 0, st>>>(ids, n, num_nodes, tiers, row_bytes, (char *)dst,
                                                         miss_ids, miss_pos, counts, host_counts, l.lanes);
  CHECK(cudaGetLastError(), "(split-gather kernel launch)");
  return 0;
}

// ---- completion: copy pieces ----

template <typename W>
__device__ void warp_copy(const char *src, char *dst, uint64_t len, int lane) {
  const W *in = reinterpret_cast<const W *>(src);
  W *o = reinterpret_cast<W *>(dst);
  for (uint64_t v = lane; v < len / sizeof(W); v += 32) o[v] = in[v];
}

__global__ void copy_pieces_kernel(const tfc_piece *__restrict__ pieces, int64_t n) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (gridDim.x * (int64_t)blockDim.x) >> 5;
  for (int64_t i = warp; i < n; i += warps) {
    tfc_piece p = pieces[i];
    const char *s = (const char *)p.src;
    char *d = (char *)p.dst;
    uint64_t a = p.src | p.dst | p.len;
    if ((a & 15) == 0) warp_copy<uint4>(s, d, p.len, lane);
    else if ((a & 7) == 0) warp_copy<uint2>(s, d, p.len, lane);
    else if ((a & 3) == 0) warp_copy<uint32_t>(s, d, p.len, lane);
    else warp_copy<char>(s, d, p.len, lane);
  }
}

// ---- GPU-initiated reads through a SQPOLL io_uring in mapped memory (gpuio's gpu-uring) ----
//
// The ring's indices are shared with the host kernel: loads of what it writes (SQ head, CQ tail)
// are acquire loads at system scope, stores of what it reads (SQ tail, CQ head) release stores at
// system scope, so SQEs are visible before the tail that publishes them and CQEs and the staged
// bytes are read only after the tail that published them. CQEs and staging are read with
// ld.global.cv: a slot is read again after its next read lands, and a cached line would be stale.

__device__ __forceinline__ uint32_t ld_acquire_sys(const uint32_t *p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void st_release_sys(uint32_t *p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

template <typename W>
__device__ void warp_copy_cv(const char *src, char *dst, uint64_t len, int lane) {
  const W *in = reinterpret_cast<const W *>(src);
  W *o = reinterpret_cast<W *>(dst);
  for (uint64_t v = lane; v < len / sizeof(W); v += 32) o[v] = __ldcv(in + v);
}

// io_uring's ABI (include/uapi/linux/io_uring.h).
constexpr uint8_t kOpReadFixed = 4;
constexpr uint8_t kSqeFixedFile = 1;
constexpr int kSlotShift = 40;  // user_data: slot << 40 | read index

__global__ void uring_read_kernel(tfc_uring r, const tfc_uring_io *__restrict__ reads, int64_t n,
                                  const tfc_piece *__restrict__ pieces, tfc_uring_status *status) {
  __shared__ uint16_t free_slots[TFC_URING_MAX_SLOTS];
  __shared__ int top;                 // free_slots[0, top) are free
  __shared__ uint32_t sq_tail, cq_head;  // this kernel's copies: it is the only writer
  __shared__ int64_t next, done;
  __shared__ uint32_t batch, cq_tail;
  __shared__ int stop;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
  const uint64_t timeout = r.timeout_ns ? r.timeout_ns : 10ull * 1000 * 1000 * 1000;
  for (int i = tid; i < (int)r.slots; i += blockDim.x) free_slots[i] = (uint16_t)i;
  if (tid == 0) {
    top = (int)r.slots;
    sq_tail = ld_acquire_sys(r.sq_tail);
    cq_head = ld_acquire_sys(r.cq_head);
    next = done = 0;
    stop = 0;
  }
  __syncthreads();
  while (done < n && !stop) {
    // Submit as many reads as free slots and SQ room allow.
    if (tid == 0) {
      uint32_t room = r.sq_entries - (sq_tail - ld_acquire_sys(r.sq_head));
      int64_t k = n - next;
      if (k > top) k = top;
      if (k > room) k = room;
      if (k == 0 && top > 0 && next < n) status->sq_waits++;
      batch = (uint32_t)k;
    }
    __syncthreads();
    for (uint32_t t = tid; t < batch; t += blockDim.x) {
      int64_t i = next + t;
      uint32_t slot = free_slots[top - 1 - t];
      tfc_uring_io rd = reads[i];
      volatile uint64_t *sqe = (volatile uint64_t *)((char *)r.sqes + 64ull * ((sq_tail + t) & r.sq_mask));
      // opcode, flags, ioprio, fd | off | addr | len, rw_flags | user_data | buf_index, personality,
      // splice_fd_in | addr3 | pad
      sqe[0] = (uint64_t)kOpReadFixed | ((uint64_t)(r.fixed_files ? kSqeFixedFile : 0) << 8) |
               ((uint64_t)(uint32_t)rd.file << 32);
      sqe[1] = rd.offset;
      sqe[2] = r.staging_user + r.slot_bytes * slot;
      sqe[3] = (uint64_t)rd.len;
      sqe[4] = ((uint64_t)slot << kSlotShift) | (uint64_t)i;
      sqe[5] = (uint64_t)(r.buf_index & 0xffff);
      sqe[6] = 0;
      sqe[7] = 0;
      __threadfence_system();
    }
    __syncthreads();
    if (tid == 0 && batch > 0) {
      __threadfence_system();
      sq_tail += batch;
      st_release_sys(r.sq_tail, sq_tail);
      top -= (int)batch;
      next += batch;
    }
    // Wait for completions.
    if (tid == 0) {
      uint64_t t0 = global_ns();
      uint32_t t;
      while ((t = ld_acquire_sys(r.cq_tail)) == cq_head) {
        if (global_ns() - t0 > timeout) {
          stop = 1;
          status->timed_out = 1;
          break;
        }
        __nanosleep(500);
      }
      cq_tail = t;
    }
    __syncthreads();
    if (stop) break;
    const uint32_t count = cq_tail - cq_head;
    for (uint32_t j = warp; j < count; j += warps) {
      const char *cqe = (const char *)r.cqes + 16ull * ((cq_head + j) & r.cq_mask);
      uint64_t ud = __ldcv((const unsigned long long *)cqe);
      int32_t res = __ldcv((const int *)(cqe + 8));
      int64_t i = (int64_t)(ud & ((1ull << kSlotShift) - 1));
      uint32_t slot = (uint32_t)(ud >> kSlotShift);
      tfc_uring_io rd = reads[i];
      if (res < 0 || (uint32_t)res < rd.need) {
        if (lane == 0) {
          atomicAdd((unsigned long long *)&status->failed, 1ull);
          if (atomicCAS((unsigned long long *)&status->first_failed, (unsigned long long)-1ll,
                        (unsigned long long)i) == (unsigned long long)-1ll)
            status->first_res = res;
        }
      } else {
        const char *base = (const char *)r.staging_dev + r.slot_bytes * slot;
        for (uint32_t q = 0; q < rd.npieces; q++) {
          tfc_piece pc = pieces[rd.first_piece + q];
          const char *src = base + pc.src;
          char *dst = (char *)pc.dst;
          uint64_t a = (uint64_t)src | pc.dst | pc.len;
          if ((a & 15) == 0) warp_copy_cv<uint4>(src, dst, pc.len, lane);
          else if ((a & 3) == 0) warp_copy_cv<uint32_t>(src, dst, pc.len, lane);
          else warp_copy_cv<unsigned char>(src, dst, pc.len, lane);
        }
      }
      if (lane == 0) free_slots[atomicAdd(&top, 1)] = (uint16_t)slot;
    }
    __syncthreads();
    if (tid == 0) {
      cq_head += count;
      st_release_sys(r.cq_head, cq_head);
      done += count;
      status->completed = done;
    }
    __syncthreads();
  }
  __threadfence_system();
}

// ---- sampling: the host sampler's generator (topology/sample.go), bit for bit ----

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct SplitMix {
  uint64_t state;
  __device__ uint64_t next() {
    state += 0x9e3779b97f4a7c15ULL;
    return mix64(state);
  }
  // below: uniform in [0, n), n > 0, Lemire's multiply-shift with rejection.
  __device__ uint64_t below(uint64_t n) {
    uint64_t x = next();
    uint64_t hi = __umul64hi(x, n), lo = x * n;
    if (lo < n) {
      uint64_t threshold = (0 - n) % n;
      while (lo < threshold) {
        x = next();
        hi = __umul64hi(x, n);
        lo = x * n;
      }
    }
    return hi;
  }
};

__device__ SplitMix node_rng(uint64_t seed, int hop, int64_t node) {
  return SplitMix{mix64(mix64(mix64(seed) ^ (uint64_t)(int64_t)hop) ^ (uint64_t)node)};
}

__device__ bool takes_all(int64_t deg, int fanout, int replace) {
  return deg == 0 || fanout < 0 || (!replace && deg <= (int64_t)fanout);
}

__device__ void sort_small(int64_t *a, int64_t k) {  // insertion sort; samples are short
  for (int64_t i = 1; i < k; i++) {
    int64_t v = a[i], j = i - 1;
    while (j >= 0 && a[j] > v) {
      a[j + 1] = a[j];
      j--;
    }
    a[j + 1] = v;
  }
}

__global__ void degrees_kernel(const int64_t *__restrict__ indptr, const int64_t *__restrict__ nodes,
                               int64_t n, int64_t *__restrict__ deg) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += gridDim.x * (int64_t)blockDim.x) {
    int64_t v = nodes[i];
    deg[i] = indptr[v + 1] - indptr[v];
  }
}

// One warp per node: lane 0 draws the positions (the draws are sequential by nature), then the
// warp reads the neighbors at them.
template <typename I>
__global__ void sample_hop_kernel(const int64_t *__restrict__ indptr, const I *__restrict__ indices,
                                  const int64_t *__restrict__ nodes, const int64_t *__restrict__ deg,
                                  const int64_t *__restrict__ off, int64_t n, int fanout, int replace,
                                  uint64_t seed, int hop, int64_t *__restrict__ pos, int64_t *__restrict__ out) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (gridDim.x * (int64_t)blockDim.x) >> 5;
  for (int64_t i = warp; i < n; i += warps) {
    const int64_t d = deg[i], o = off[i], k = off[i + 1] - off[i];
    const int64_t first = indptr[nodes[i]];
    if (takes_all(d, fanout, replace)) {
      for (int64_t j = lane; j < k; j += 32) {
        pos[o + j] = j;
        out[o + j] = (int64_t)indices[first + j];
      }
      continue;
    }
    if (lane == 0) {
      int64_t *dst = pos + o;
      SplitMix r = node_rng(seed, hop, nodes[i]);
      if (replace) {
        for (int64_t j = 0; j < k; j++) dst[j] = (int64_t)r.below((uint64_t)d);
      } else {  // Floyd's algorithm, as floyd() in topology/sample.go
        for (int64_t m = 0, j = d - k; j < d; m++, j++) {
          int64_t t = (int64_t)r.below((uint64_t)(j + 1));
          for (int64_t q = 0; q < m; q++) {
            if (dst[q] == t) {
              t = j;
              break;
            }
          }
          dst[m] = t;
        }
      }
      sort_small(dst, k);
    }
    __syncwarp();
    for (int64_t j = lane; j < k; j += 32) out[o + j] = (int64_t)indices[first + pos[o + j]];
    __syncwarp();
  }
}

}  // namespace

extern "C" {

int tfc_abi_version(void) { return TFC_ABI_VERSION; }

const char *tfc_last_error(void) { return last_error; }

int tfc_device_count(int *count) {
  *count = 0;
  CHECK(cudaGetDeviceCount(count), "");
  return 0;
}

int tfc_device_info(int dev, char *name, int name_len, int *sm_count, int *cc_major, int *cc_minor,
                    uint64_t *free_bytes, uint64_t *total_bytes) {
  ENTER(dev);
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, dev), "");
  if (name_len > 0) {
    strncpy(name, p.name, name_len - 1);
    name[name_len - 1] = 0;
  }
  *sm_count = p.multiProcessorCount;
  *cc_major = p.major;
  *cc_minor = p.minor;
  size_t f = 0, t = 0;
  CHECK(cudaMemGetInfo(&f, &t), "");
  *free_bytes = f;
  *total_bytes = t;
  return 0;
}

int tfc_malloc(int dev, uint64_t bytes, void **ptr) {
  ENTER(dev);
  char d[64];
  snprintf(d, sizeof d, "(%llu bytes)", (unsigned long long)bytes);
  CHECK(cudaMalloc(ptr, bytes), d);
  return 0;
}

ONE_CALL(tfc_free, (int dev, void *ptr), cudaFree(ptr))

int tfc_host_alloc(int dev, uint64_t bytes, void **ptr) {
  ENTER(dev);
  char d[64];
  snprintf(d, sizeof d, "(%llu bytes)", (unsigned long long)bytes);
  CHECK(cudaHostAlloc(ptr, bytes, cudaHostAllocMapped | cudaHostAllocPortable), d);
  return 0;
}

ONE_CALL(tfc_host_free, (int dev, void *ptr), cudaFreeHost(ptr))

int tfc_host_register(int dev, void *ptr, uint64_t bytes, void **dev_ptr) {
  ENTER(dev);
  char d[64];
  snprintf(d, sizeof d, "(%llu bytes)", (unsigned long long)bytes);
  CHECK(cudaHostRegister(ptr, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable), d);
  cudaError_t e = cudaHostGetDevicePointer(dev_ptr, ptr, 0);
  if (e != cudaSuccess) {
    cudaHostUnregister(ptr);
    return fail(e, "cudaHostGetDevicePointer", d);
  }
  return 0;
}

ONE_CALL(tfc_host_unregister, (int dev, void *ptr), cudaHostUnregister(ptr))

int tfc_memcpy(int dev, void *dst, const void *src, uint64_t bytes, void *stream) {
  ENTER(dev);
  char d[64];
  snprintf(d, sizeof d, "(%llu bytes)", (unsigned long long)bytes);
  CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream), d);
  return 0;
}

ONE_CALL(tfc_memset, (int dev, void *dst, int value, uint64_t bytes, void *stream),
         cudaMemsetAsync(dst, value, bytes, (cudaStream_t)stream))

ONE_CALL(tfc_stream_create, (int dev, void **stream),
         cudaStreamCreateWithFlags((cudaStream_t *)stream, cudaStreamNonBlocking))

ONE_CALL(tfc_stream_destroy, (int dev, void *stream), cudaStreamDestroy((cudaStream_t)stream))

ONE_CALL(tfc_stream_sync, (int dev, void *stream), cudaStreamSynchronize((cudaStream_t)stream))

ONE_CALL(tfc_event_create, (int dev, void **event), cudaEventCreate((cudaEvent_t *)event))

ONE_CALL(tfc_event_destroy, (int dev, void *event), cudaEventDestroy((cudaEvent_t)event))

ONE_CALL(tfc_event_record, (int dev, void *event, void *stream),
         cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream))

ONE_CALL(tfc_event_sync, (int dev, void *event), cudaEventSynchronize((cudaEvent_t)event))

int tfc_event_query(int dev, void *event, int *done) {
  ENTER(dev);
  cudaError_t e = cudaEventQuery((cudaEvent_t)event);
  if (e == cudaErrorNotReady) {
    cudaGetLastError();
    *done = 0;
    return 0;
  }
  CHECK(e, "");
  *done = 1;
  return 0;
}

ONE_CALL(tfc_event_elapsed_ms, (int dev, void *start, void *end, float *ms),
         cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)end))

ONE_CALL(tfc_stream_wait_event, (int dev, void *stream, void *event),
         cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0))

int tfc_gather_rows(int dev, const void *src, uint64_t row_bytes, const int64_t *src_rows,
                    const int64_t *dst_rows, int64_t n, void *dst, int max_blocks, void *stream) {
  ENTER(dev);
  if (n <= 0 || row_bytes == 0) return 0;
  cudaStream_t st = (cudaStream_t)stream;
  uint64_t a = (uint64_t)src | (uint64_t)dst | row_bytes;
  return by_width(a, [&](auto w) {
    return launch_gather<decltype(w)>(dev, src, row_bytes, src_rows, dst_rows, n, dst, max_blocks, st);
  });
}

int tfc_split_gather(int dev, const int64_t *ids, int64_t n, int64_t num_nodes, const tfc_tier_index *tiers,
                     int ntiers, uint64_t row_bytes, void *dst, int64_t *miss_ids, int64_t *miss_pos,
                     unsigned long long *scratch, unsigned long long *host_counts, int max_blocks, void *stream) {
  ENTER(dev);
  if (n <= 0 || row_bytes == 0) return 0;
  if (ntiers < 0 || ntiers > TFC_MAX_SPLIT_TIERS) {
    snprintf(last_error, sizeof last_error, "tfc_split_gather: %d tiers, want 0 to %d", ntiers, TFC_MAX_SPLIT_TIERS);
    return (int)cudaErrorInvalidValue;
  }
  SplitTiers t{};
  t.n = ntiers;
  uint64_t a = (uint64_t)dst | row_bytes;
  for (int i = 0; i < ntiers; i++) {
    t.t[i] = tiers[i];
    a |= (uint64_t)tiers[i].rows;
  }
  cudaStream_t st = (cudaStream_t)stream;
  return by_width(a, [&](auto w) {
    return launch_split_gather<decltype(w)>(dev, ids, n, num_nodes, t, row_bytes, dst, miss_ids, miss_pos, scratch,
                                            host_counts, max_blocks, st);
  });
}

ONE_CALL(tfc_device_sync, (int dev), cudaDeviceSynchronize())

int tfc_copy_pieces(int dev, const tfc_piece *pieces, int64_t n, int max_blocks, void *stream) {
  ENTER(dev);
  if (n <= 0) return 0;
  int grid = grid_for(dev, max_blocks, (n + 7) / 8);
  copy_pieces_kernel<<<grid, 256, 0, (cudaStream_t)stream>>>(pieces, n);
  CHECK(cudaGetLastError(), "(completion kernel launch)");
  return 0;
}

int tfc_sample_degrees(int dev, const int64_t *indptr, const int64_t *nodes, int64_t n, int64_t *deg,
                       int max_blocks, void *stream) {
  ENTER(dev);
  if (n <= 0) return 0;
  int grid = grid_for(dev, max_blocks, (n + 255) / 256);
  degrees_kernel<<<grid, 256, 0, (cudaStream_t)stream>>>(indptr, nodes, n, deg);
  CHECK(cudaGetLastError(), "(degrees kernel launch)");
  return 0;
}

int tfc_sample_hop(int dev, const int64_t *indptr, const void *indices, int index_bytes,
                   const int64_t *nodes, const int64_t *deg, const int64_t *off, int64_t n, int fanout,
                   int replace, uint64_t seed, int hop, int64_t *pos, int64_t *out, int max_blocks,
                   void *stream) {
  ENTER(dev);
  if (n <= 0) return 0;
  if (index_bytes != 4 && index_bytes != 8) {
    snprintf(last_error, sizeof last_error, "tfc_sample_hop: index_bytes %d, want 4 or 8", index_bytes);
    return (int)cudaErrorInvalidValue;
  }
  int grid = grid_for(dev, max_blocks, (n + 7) / 8);
  cudaStream_t st = (cudaStream_t)stream;
  if (index_bytes == 4)
    sample_hop_kernel<int32_t><<<grid, 256, 0, st>>>(indptr, (const int32_t *)indices, nodes, deg, off, n,
                                                     fanout, replace, seed, hop, pos, out);
  else
    sample_hop_kernel<int64_t><<<grid, 256, 0, st>>>(indptr, (const int64_t *)indices, nodes, deg, off, n,
                                                     fanout, replace, seed, hop, pos, out);
  CHECK(cudaGetLastError(), "(sample kernel launch)");
  return 0;
}

}  // extern "C"

int tfc_uring_read(int dev, const tfc_uring *ring, const tfc_uring_io *reads, int64_t n, const tfc_piece *pieces,
                   tfc_uring_status *status, int threads, void *stream) {
  ENTER(dev);
  if (n <= 0) return 0;
  if (ring->slots == 0 || ring->slots > TFC_URING_MAX_SLOTS)
    return fail(cudaErrorInvalidValue, "tfc_uring_read", "(slots must be in [1, TFC_URING_MAX_SLOTS])");
  if (threads <= 0) threads = 512;
  threads = (threads + 31) / 32 * 32;
  if (threads > 1024) threads = 1024;
  uring_read_kernel<<<1, threads, 0, (cudaStream_t)stream>>>(*ring, reads, n, pieces, status);
  CHECK(cudaGetLastError(), "(gpu-uring kernel launch)");
  return 0;
}
