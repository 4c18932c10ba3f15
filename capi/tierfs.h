/* tierfs.h — the C ABI of tierfs, a tiered GPU / host-memory / SSD feature store for
 * out-of-core GNN training. Library: libtierfs.so (built by `make lib`).
 *
 * Include this header: it holds the conventions, status codes, handles and shared types, and
 * includes the declarations of the calls, split by concern as faiss's C API is: tierfs_store.h
 * (open, gather, features, labels, splits, stats, types, placement), tierfs_sample.h (sampling
 * and link sampling), tierfs_epochs.h (planned epochs), tierfs_io.h (synth, ingest, verify,
 * upgrade; the IO stack), tierfs_mount.h (mount, advise) and tierfs_embedding.h (trainable
 * embedding tables).
 *
 * Conventions
 *  - Every function returns a tfs_status; TFS_OK is 0. Codes never change meaning.
 *  - On failure, tfs_last_error() returns a message for the calling thread, valid until that
 *    thread's next tierfs call.
 *  - Handles (tfs_store*, tfs_sampler*, struct tfs_sample*, tfs_io*, tfs_epochs*, tfs_table*) are opaque and
 *    not pointers to memory; free each with its _close/_free function exactly once (a closed or freed handle
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

#define TFS_ABI_VERSION 3

/* Changes in ABI 3 (issue 41, one typed core: a homogeneous store is a one-type store; every call
 * of a node type's rows takes node_type, NULL or "" being the only type, TFS_EINVAL naming the
 * types when there are several):
 *  - tfs_gather(store, node_type, feature, ...) replaces tfs_gather, tfs_gather_typed and
 *    tfs_gather_feature (feature NULL/"": the type's served feature; edge features:
 *    tfs_gather_edge_feature with edge_type NULL for the only edge type).
 *  - tfs_gather_device(store, node_type, ...) replaces tfs_gather_device.
 *  - tfs_gather_device_ids(store, node_type, ...) replaces tfs_gather_device_ids and
 *    tfs_gather_typed_device_ids.
 *  - tfs_labels(store, node_type, ...) replaces tfs_labels and tfs_labels_typed.
 *  - tfs_split(store, node_type, name, ...) replaces tfs_split and tfs_split_typed.
 *  - tfs_hottest(store, node_type, ...) replaces tfs_hottest and tfs_hottest_typed.
 *  - tfs_place_ids(store, node_type, ...) replaces tfs_place_ids and tfs_place_ids_typed.
 *  - tfs_place(store, node_type, hotness, n) replaces tfs_place.
 *  - tfs_profile_reads(store, seeds, n_seeds, request_json, counts, counts_n, n_types) replaces
 *    tfs_profile_reads and tfs_profile_reads_hetero, both removed: per-type count arrays, n_types = 1
 *    for a homogeneous store; fanouts [per hop] or per edge type; batches 0: one epoch, in loader
 *    order.
 *  - tfs_place_json and tfs_place_json_progress replace tfs_place_hetero_json, removed: fanouts per
 *    edge type place every node type by a profile; the request may name node_type.
 *  - tfs_store_info_get(store, node_type, out) replaces tfs_store_info_get (one node type's sizes).
 *  - tfs_features_json is removed: tfs_types_json lists every node and edge feature.
 *  - tfs_share_host_tier and tfs_map_host_tier: node_type NULL is the only type (was: the store's
 *    own stack).
 *  - tfs_epochs_gather(epochs, e, b, node_type, ...) replaces tfs_epochs_gather and
 *    tfs_epochs_gather_typed.
 *  - tfs_sampler_create takes options_json ({"fanouts": [...] or {"src:rel:dst": [...]}, "replace",
 *    "seed", "workers"}) instead of tfs_sampler_options (removed); tfs_hetero_sampler_create,
 *    tfs_hetero_sampler_free and the tfs_hetero_sampler handle are removed: use tfs_sampler_*.
 *  - tfs_sample takes a seed_type; tfs_hetero_sample is removed: use tfs_sample.
 *  - tfs_sample_sizes, tfs_sample_copy and tfs_sample_edge_ids are removed: use tfs_sample_json,
 *    tfs_sample_nodes and tfs_sample_edges; tfs_hetero_sample_json, _nodes, _edges and _free are
 *    renamed tfs_sample_json, tfs_sample_nodes, tfs_sample_edges and tfs_sample_free (one struct
 *    tfs_sample; struct tfs_hetero_sample is removed).
 *  - tfs_sample_edges (link sampling) is renamed tfs_sample_from_edges and takes an edge_type;
 *    tfs_hetero_sample_from_edges is removed: use tfs_sample_from_edges (link options: one set,
 *    "undirected" and "reverse_edge_types" both).
 *  - tfs_hetero_sample_link_json and tfs_hetero_sample_link_copy are removed: use
 *    tfs_sample_link_json and tfs_sample_link_copy.
 *  - tfs_epochs_sample answers the typed sample of every plan; tfs_epochs_sample_hetero is
 *    removed: use tfs_epochs_sample.
 *  - tfs_options_json(family, ...) ("store", "epochs", "link": each option family's table)
 *    replaces tfs_store_options_json.
 *  - tfs_epochs_open: a key of options_json left out takes the epochs table's default
 *    (place_tiers and replan true, batch_size 1024, epochs 1); the link options of seed_edges
 *    and of tfs_sample_from_edges likewise (amount 1).
 *  - Every JSON input refuses a key given twice in one object (TFS_EINVAL naming it).
 */

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

/* Handles (see Conventions). */
typedef struct tfs_store tfs_store;
typedef struct tfs_sampler tfs_sampler;
typedef struct tfs_epochs tfs_epochs; /* planned epochs (tfs_epochs_open) */
/* A sample is a struct tfs_sample* (no typedef: the name tfs_sample is the sampling function, as
 * with struct stat and stat()). */
struct tfs_sample;
typedef struct tfs_io tfs_io; /* an IO stack (tfs_io_open; tierfs_io.h) */

/* Progress of a long call: stage names the work ("edges: count", "edges: fill", "features",
 * "labels", "commit", ...), done of total units (total 0: not known up front). Called from the
 * library's threads, at most every 100 ms per stage plus once when a stage completes; it must
 * return quickly and must not call into the library. */
typedef void (*tfs_progress_fn)(void *ctx, const char *stage, int64_t done, int64_t total);

/* TFS_ABI_VERSION of the loaded library. */
int tfs_abi_version(void);
/* Message of the calling thread's last failed call ("" if none). */
const char *tfs_last_error(void);

#ifdef __cplusplus
}
#endif

/* The calls, by concern. */
#include "tierfs_store.h"  /* open, close, info, gathers, features, labels, splits, stats, types, placement */
#include "tierfs_sample.h" /* samplers, samples, link sampling */
#include "tierfs_epochs.h" /* planned epochs */
#include "tierfs_io.h"     /* datasets made (synth, ingest), checked, upgraded; the IO stack */
#include "tierfs_mount.h"  /* the FUSE mount, advice */
#include "tierfs_embedding.h" /* trainable embedding tables */

#endif /* TIERFS_H */
