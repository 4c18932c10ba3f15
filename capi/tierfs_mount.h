/* tierfs_mount.h — the read-only FUSE mount of a store, and throughput-per-dollar advice.
 * Part of the C ABI of tierfs: include tierfs.h (which includes this header and its
 * siblings), whose Conventions block holds for every call here. */
#ifndef TIERFS_MOUNT_H
#define TIERFS_MOUNT_H

#include "tierfs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Mounts a read-only view of the store's tiers and counters at dir (FUSE); unmounted by
 * tfs_unmount or tfs_close. */
tfs_status tfs_mount(tfs_store *store, const char *dir);
tfs_status tfs_unmount(tfs_store *store);

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

#ifdef __cplusplus
}
#endif

#endif /* TIERFS_MOUNT_H */
