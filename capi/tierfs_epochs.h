/* tierfs_epochs.h — planned epochs: batches sampled ahead, their missing rows packed.
 * Part of the C ABI of tierfs: include tierfs.h (which includes this header and its
 * siblings), whose Conventions block holds for every call here. */
#ifndef TIERFS_EPOCHS_H
#define TIERFS_EPOCHS_H

#include "tierfs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Planned epochs (docs/planned.md): K epochs sampled ahead, each batch's rows that no memory tier
 * holds packed contiguously in a file per epoch. options_json holds the plan options, the table
 * tfs_options_json("epochs") lists (plan_dir, batch_size, drop_last, replace, seed, workers,
 * node_type, shuffle_seed, epochs (K), disk_budget, replan, place_tiers, first_epoch, pack_method,
 * pack_memory: each with its kind, help and default; a key left out takes its default, so
 * place_tiers and replan are true unless given false (ABI 3; ABI 2 read a missing one as false)),
 * and the plan's data: fanouts, seed_edges, seed_orders, elsewhere. An unknown key, or a value of
 * the wrong JSON type or outside an option's choices, is TFS_EINVAL naming it; pack_method and
 * pack_memory change how planning reads, never the packed bytes. fanouts as an object {"src:rel:dst": [per hop], ... every edge type}
 * plans the graph session: batches of seeds of "node_type", every node type with features
 * packed, served by tfs_epochs_sample and tfs_epochs_gather of each type. seeds NULL with n 0
 * takes the "train" split (of node_type). "seed_edges": {"edge_type": "src:rel:dst" ("" for the
 * only one), "labels": false, "split": "train", and the link options, tfs_options_json("link"), as
 * tfs_sample_from_edges' link_options_json takes them} plans batches
 * of seed edges instead (link prediction): seeds holds n src ids, then n dst ids, then with
 * "labels" n labels; seeds NULL with n 0 takes the stored edge split "split" with its labels.
 * Batch b of planned epoch e is the first tfs_sample_from_edges of a sampler of the batch's seed;
 * tfs_epochs_sample then answers a link sample whose label edges the tfs_sample_link_* calls
 * read. A plan made for other inputs is
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
 * the caller (tfs_epochs_gather writes nothing there; tfs_epochs_gather_device nothing
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
 * naming file, epoch and batch); a store's plan's sample is of its one type, a graph session's
 * of every type, every packed node type's nodes checked against the plan. The seed type's first
 * nodes_per_hop[0] nodes are the batch's seeds. Read it with tfs_sample_json, _nodes, _edges. */
tfs_status tfs_epochs_sample(tfs_epochs *epochs, int64_t epoch, int64_t batch, struct tfs_sample **out);
/* Sets *n to the number of seeds of batch `batch` of epoch `epoch` and, when out is not NULL,
 * writes them into out (cap entries; fewer than *n is TFS_EINVAL): seed node ids, or of a link
 * plan the positions of its seed edges in the plan's seed edges (PyG's input_id). */
tfs_status tfs_epochs_seeds(tfs_epochs *epochs, int64_t epoch, int64_t batch, int64_t *out, int64_t cap, int64_t *n);
/* Writes the feature rows of nodes of node_type (NULL or "": the plan's only packed type; several
 * are TFS_EINVAL naming them) — the batch's sampled nodes of that type, as tfs_epochs_sample gave them — into dst (dst_bytes = n * the type's row_bytes):
 * memory-tier rows from the tiers, the rest from the batch's packed extent, checked against its
 * checksum (TFS_ECORRUPT naming file, epoch and batch). TFS_ENOENT for a type without features. */
tfs_status tfs_epochs_gather(tfs_epochs *epochs, int64_t epoch, int64_t batch, const char *node_type,
                             const int64_t *nodes, int64_t n, void *dst, int64_t dst_bytes);
/* tfs_epochs_gather into device memory of the store's CUDA device, ordered on cuda_stream
 * (a cudaStream_t; NULL for the legacy default stream): rows the memory tiers hold are copied on
 * the device, the batch's packed rows read in one read into pinned memory, checked, and scattered
 * there by a kernel. nodes are host memory. Returns once the rows are in place on the stream.
 * TFS_ENOTSUP where the store has no GPU path. */
tfs_status tfs_epochs_gather_device(tfs_epochs *epochs, int64_t epoch, int64_t batch, const char *node_type,
                                    const int64_t *nodes, int64_t n, void *dst_device, int64_t dst_bytes,
                                    void *cuda_stream);

#ifdef __cplusplus
}
#endif

#endif /* TIERFS_EPOCHS_H */
